"""Autograd as a dispatch layer: kernels on the ``Autograd`` alias key, generated from
``ember/_ops/derivatives.yaml`` (PyTorch's ``VariableType`` codegen, done at import).

For each yaml entry whose ``name:`` matches a defined operator's schema exactly:

* a Node class named as PyTorch names it (``MulBackward0``: CamelCase op name + ``Backward`` +
  the index of the overload among the yaml entries of that name), whose ``apply`` evaluates the
  formulas (Python expressions over ember ops, so the backward is itself differentiable);
  ``_saved_<name>`` attributes expose what it saved;
* an autograd kernel (``fn(keyset, *args)``). Its fast path, taken when grad mode is off or no
  differentiable input requires grad, redispatches below the autograd keys at once. Otherwise it
  runs the op below autograd (with the autograd keys excluded, so ops called inside the kernel
  below are not recorded), creates the node, saves what the formulas use, and sets the outputs'
  ``grad_fn``.

The same kernels carry forward-mode AD: when an input has a tangent at a visible forward level
(``forward_ad.visible``), the op runs below autograd and :mod:`ember.autograd._forward` gives the
outputs their tangents from the entry's ``result:`` formulas (or raises PyTorch's
NotImplementedError when it has none).

In-place variants (``mul_.Tensor``) reuse their functional entry (``mul.Tensor``), as PyTorch
does; out= variants are never differentiable. Every other op falls to :func:`_autograd_fallback`
(a backend fallback on the Autograd keys): ops without a formula record a ``NotImplemented``
node whose backward raises "the derivative for 'X' is not implemented.". Ops that are
CompositeImplicitAutograd need no formula: the dispatcher sends their Autograd key to the
decomposition, whose ops record themselves.
"""
import ast
import os
import re

import yaml

from .._dispatch import dispatcher as _d
from .._dispatch import tls as _tls
from .._dispatch.keys import AUTOGRAD_BITS, AUTOGRAD_KEYS, K, below
from . import anomaly_mode, _formulas, _forward
from . import forward_ad as _fw
from .graph import (CUDA_STREAMS, Node, SavedTensor, _seq, autograd_meta, grad_accumulator,
                    gradient_edge, move_retains_grad_hook)
from .views import check_view_inplace, mark_no_grad_views, note_view, track_views
from .._core.codegen import compile_source

YAML_PATH = os.path.join(os.path.dirname(os.path.dirname(__file__)), "_ops", "derivatives.yaml")

_state = _tls.state
BELOW_AUTOGRAD = below(K.AutogradOther)  # redispatch mask: every key under the autograd layer

# qualname -> DerivativeInfo, filled by install()
derivatives = {}
# yaml entries whose op is not defined (yet): name -> reason; the coverage test reads it
skipped = {}
# ops registered with a kernel that never records
never_recorded = set()

# PyTorch's gen_variable_type.DONT_REQUIRE_DERIVATIVE: outputs depend only on shape/device, or
# are integral/boolean, so these ops never record a node.
DONT_REQUIRE_DERIVATIVE = {
    "empty_like", "ones_like", "full_like", "zeros_like", "rand_like", "randn_like",
    "randint_like", "new_empty", "new_empty_strided", "new_full", "new_zeros", "new_ones",
    "__and__", "__iand__", "__ilshift__", "__ior__", "__irshift__", "__ixor__", "__lshift__",
    "__or__", "__rshift__", "__xor__", "argmax", "argmin", "argsort", "searchsorted",
    "bucketize", "isnan", "isinf", "isneginf", "isposinf", "isin", "signbit", "allclose",
    "logical_and", "logical_not", "logical_or", "logical_xor", "quantize_per_tensor",
    "quantize_per_channel", "record_stream",
}

# "self.sym_sizes()" in a formula is saved as the value "self_sym_sizes", not the tensor (of a
# Tensor[] argument, the list of each tensor's value): the expression of tensor ``t`` that
# computes it (generated recorders inline it, the others call the function made from it). Most
# are a slot of the tensor, as a tuple where marked (the C recorder reads those slots itself).
_DERIVED_SLOTS = {
    "sym_sizes": ("_size", True),
    "sizes": ("_size", True),
    "sym_strides": ("_stride", True),
    "scalar_type": ("_dtype", False),
    "device": ("_device", False),
    "sym_storage_offset": ("_offset", False),
}
_DERIVED_EXPR = {
    **{attr: f"tuple(t.{slot})" if as_tuple else f"t.{slot}"
       for attr, (slot, as_tuple) in _DERIVED_SLOTS.items()},
    "dim": "len(t._size)",
    "sym_numel": "t.numel()",
}
_DERIVED = {attr: eval(compile_source(f"lambda t: {expr}", f"<ember derived value {attr}>", {},
                                       "eval")) for attr, expr in _DERIVED_EXPR.items()}
_DERIVED_RE = re.compile(r"\b([A-Za-z_][A-Za-z0-9_]*)\.(" + "|".join(_DERIVED) + r")\(\)")
_SPECIAL_KEYS = {"name", "output_differentiability", "dispatch", "node_name"}


# ---------------------------------------------------------------------------------------------
# Loading the yaml.

class DerivativeInfo:
    """One parsed ``derivatives.yaml`` entry bound to an operator schema."""

    def __init__(self, entry_yaml, schema, node_name):
        self.schema = schema
        self.node_name = node_name
        args = schema.arguments
        self.arg_names = [a.name for a in args]
        self.returns = schema.returns
        ret_names = [r.name for r in schema.returns if r.name]
        self.result_names = (["result"] if len(schema.returns) == 1 else
                             [f"result{i}" for i in range(len(schema.returns))]) + ret_names
        od = entry_yaml.get("output_differentiability")
        self.output_differentiability = list(od) if od is not None else None
        formulas = []
        diff = set()
        fw_entries = []
        for key, text in entry_yaml.items():
            if key in _SPECIAL_KEYS:
                continue
            names = [n.strip() for n in key.split(",")]
            if all(n in self.result_names for n in names):
                fw_entries.append((names, str(text).strip()))  # a forward formula
                continue
            for n in names:
                if n not in self.arg_names:
                    raise RuntimeError(f"derivatives.yaml: {schema}: {n!r} is not an argument")
            text = str(text).strip()
            if text == "non_differentiable":
                continue
            diff.update(names)
            formulas.append((names, text))
        # Differentiable inputs, in schema order: they define the node's edges.
        self.diff_args = [i for i, a in enumerate(args) if a.name in diff]
        used = {}  # a dict as an ordered set
        derived = set()
        compiled = []
        sources = []  # the formulas as compiled (derived values renamed), for _generate_apply
        formula_names = []  # the names each formula uses
        for names, text in formulas:
            src = _DERIVED_RE.sub(lambda m: self._derived_name(m, derived), text)
            try:
                code = compile_source(src, f"<ember derivative of {schema} wrt "
                                           f"{', '.join(names)}>", None, mode="eval")
            except SyntaxError as e:
                raise RuntimeError(f"derivatives.yaml: bad formula for {schema}: {text}") from e
            found = sorted((n.col_offset, n.id) for n in ast.walk(ast.parse(src, mode="eval"))
                           if isinstance(n, ast.Name))
            for _, n in found:  # in order of appearance: PyTorch saves in that order
                used.setdefault(n)
            formula_names.append({n for _, n in found})
            compiled.append(([self.arg_names.index(n) for n in names], code, text))
            sources.append(src)
        self.formulas = compiled
        self.formula_sources = sources
        self.saved_args = [self.arg_names.index(n) for n in used if n in self.arg_names]
        self.saved_derived = sorted((self.arg_names.index(a), a, attr) for a, attr in derived
                                    if a in self.arg_names)
        self.saved_results = [n for n in self.result_names if n in used]
        self.save_guards = self._save_guards(formulas, formula_names)
        self.uses_grad_input_mask = "grad_input_mask" in used
        self.uses_all_grads = "grads" in used or any(f"grad_{n}" in used for n in ret_names)
        self.fw_formulas = [self._compile_forward(names, text) for names, text in fw_entries]
        self.fw_uses_self = any(kind == "auto_element_wise" and "self" in used or
                                kind == "formula" and {"self", "self_p", "original_self_p"} & names
                                for _, kind, _, names in self.fw_formulas)
        self._formula_used = used
        self._derived_fw = sorted(derived)

    def _save_guards(self, formulas, formula_names):
        """PyTorch's ``guard_for`` (gen_variable_type.py): a saved tensor that only one formula
        of one input uses is saved only when that input's edge needs a gradient (``y = h * c``
        with only ``h`` requiring grad saves ``c``, not ``h``). {saved name: edge offset}, for
        ops with at least two differentiable inputs, none of them a list, that are not
        ``*backward*`` ops; only tensors (``Tensor`` arguments, tensor results) are guarded."""
        args = self.schema.arguments
        if (len(self.diff_args) <= 1 or "backward" in self.schema.base_name or
                any(args[i].is_list for i in self.diff_args)):
            return {}
        tensors = [a.name for a in args if a.type == "Tensor"]
        tensors += [n for n, r in zip(self.result_names, self.returns)
                    if r.type == "Tensor" and not r.is_list]
        guards = {}
        for name in tensors:
            used_in = [names for (names, _), found in zip(formulas, formula_names)
                       if name in found]
            if len(used_in) == 1 and len(used_in[0]) == 1:
                guards[name] = self.diff_args.index(self.arg_names.index(used_in[0][0]))
        return guards

    def _compile_forward(self, names, text):
        """A ``result:`` entry: ``auto_element_wise``, ``auto_linear`` or an expression over
        ``<arg>_t`` (tangents), ``<arg>_p`` / ``<arg>`` (primals) and the results."""
        outs = [self._result_index(n) for n in names]
        if text in ("auto_element_wise", "auto_linear"):
            return outs, text, None, set()
        src = _DERIVED_RE.sub(lambda m: f"_DERIVED[{m[2]!r}]({m[1]})", text)
        try:
            code = compile_source(src, f"<ember forward derivative of {self.schema} for "
                                       f"{', '.join(names)}>", None, mode="eval")
        except SyntaxError as e:
            raise RuntimeError(f"derivatives.yaml: bad forward formula for {self.schema}: "
                               f"{text}") from e
        used = {n.id for n in ast.walk(ast.parse(src, mode="eval")) if isinstance(n, ast.Name)}
        return outs, "formula", code, used

    def _result_index(self, name):
        if name == "result":
            return 0
        if name.startswith("result") and name[6:].isdigit():
            return int(name[6:])
        return [r.name for r in self.returns].index(name)


    def _derived_name(self, m, derived):
        """``x.sizes()`` of an argument is saved as ``x_sizes``; of anything else (``grad``) it
        is computed when the formula runs."""
        name, attr = m[1], m[2]
        if name in self.arg_names:
            derived.add((name, attr))
            return f"{name}_{attr}"
        return f"_DERIVED[{attr!r}]({name})"


def _camel(name):
    return "".join(p[:1].upper() + p[1:] for p in name.strip("_").split("_"))


def _load_yaml():
    with open(YAML_PATH) as f:
        loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
        return yaml.load(f, Loader=loader) or []


def _qualname(schema):
    return f"aten::{schema.base_name}" + (f".{schema.overload_name}" if schema.overload_name else "")


def _sig(schema):
    """Schema text without namespace, for comparing a yaml ``name:`` with a defined op."""
    return str(schema).split("::", 1)[-1]


# ---------------------------------------------------------------------------------------------
# Generated nodes.

class GeneratedNode(Node):
    """Base of the nodes made from derivatives.yaml. Per-class: ``_info``."""

    _info = None

    def __init__(self):
        # Node.__init__, inlined: one node per recorded op, every call counts
        self._seq_nr = next(_seq.next)
        self._saved = {}
        if CUDA_STREAMS:
            st = CUDA_STREAMS[0]
            self._stream = st.streams.get(st.device)

    def release_variables(self):
        for v in self._saved.values():
            if isinstance(v, SavedTensor):
                v.release()
            elif isinstance(v, list):
                for s in v:
                    if isinstance(s, SavedTensor):
                        s.release()
        self._released = True

    def _unpack(self, name):
        # a value not saved (DerivativeInfo.save_guards) reads as None, as in PyTorch
        return _unpack_saved(self, self._saved.get(name))

    def apply(self, grads):
        info = self._info
        if any(g is None for g in grads) and not _takes_undefined_grads(info):
            grads = _materialize(self, grads)
        namespace = _formula_namespace()
        env = {name: self._unpack(name) for name in self._saved}
        env["grad"] = grads[0]
        env["grads"] = grads
        for r in info.returns:
            if r.name:
                env["grad_" + r.name] = grads[info.returns.index(r)]
        # Edge layout: each differentiable arg has one edge, or len(list) edges for Tensor[].
        out = [None] * len(self._next)
        needed_args = self._needed_args()
        for arg_idx, code, _text in info.formulas:
            if not any(i in needed_args for i in arg_idx):
                continue
            if info.uses_grad_input_mask:  # per formula: one flag per input it computes
                env["grad_input_mask"] = [i in needed_args for i in arg_idx]
            val = eval(code, namespace, env)
            if len(arg_idx) == 1:
                self._place(out, arg_idx[0], val)
            else:
                for i, v in zip(arg_idx, val):
                    self._place(out, i, v)
        return out

    def _needed_args(self):
        need = set()
        for arg_idx, (start, n) in self._edge_slices.items():
            if any(self._next[k][0] is not None for k in range(start, start + n)):
                need.add(arg_idx)
        return need

    def _place(self, out, arg_idx, val):
        start, n = self._edge_slices[arg_idx]
        if self._is_list_arg[arg_idx]:
            for k, v in enumerate(val):
                out[start + k] = v
        else:
            out[start] = val


def _saved_property(name):
    def get(self):
        return self._unpack(name)
    return property(get)


def _make_node_class(info):
    attrs = {"_info": info, "__module__": "ember.autograd.generated"}
    saved = [info.arg_names[i] for i in info.saved_args] + \
        [f"{a}_{attr}" for _, a, attr in info.saved_derived] + info.saved_results
    for name in saved:
        attrs[f"_saved_{name}"] = _saved_property(name)
    attrs["_saved_names"] = tuple(saved)
    if not any(info.schema.arguments[i].is_list for i in info.diff_args):
        attrs["apply"] = _first_apply  # one edge per differentiable input: straight-line apply
    # a hand-written node of PyTorch's (torch::autograd::CopyBackwards) is named in full by
    # name(), its class by the last part
    if "::" in info.node_name:
        attrs["name"] = lambda self, _n=info.node_name: _n
    return type(info.node_name.rpartition("::")[2], (GeneratedNode,), attrs)


def _first_apply(node, grads):
    """The first ``apply`` of a node class with one edge per differentiable input: generate the
    class's straight-line apply (:func:`_generate_apply`), install it, run it."""
    cls = type(node)
    cls.apply = _generate_apply(cls)
    return cls.apply(node, grads)


def _formula_namespace():
    """The globals the formulas run in (``_formulas``' helpers, ember ops, ``_DERIVED``)."""
    if not _formulas.NAMESPACE:
        _formulas.ensure_namespace()
        _formulas.NAMESPACE["_DERIVED"] = _DERIVED
    return _formulas.NAMESPACE


def _unpack_saved(node, v):
    """A saved value as a formula sees it: SavedTensors unpacked (version-checked)."""
    if v.__class__ is SavedTensor:
        return v.unpack(node)
    if isinstance(v, list) and v and isinstance(v[0], SavedTensor):
        return [s.unpack(node) for s in v]
    return v


def _materialize(node, grads):
    """Undefined gradients of outputs with metadata as zeros; outputs that were never defined
    (no metadata: convolution_backward's masked-out results) stay None, as undefined tensors
    do in PyTorch."""
    return [g if g is not None or m is None else _formulas.zeros_from_meta(m)
            for g, m in zip(grads, node._out_meta)]


def _takes_undefined_grads(info):
    """Whether the node passes None, as PyTorch passes an undefined tensor, for the gradient of
    an output that was not used, rather than zeros: when every formula is one call of a helper
    marked :func:`_formulas.takes_undefined_grads` (one that leaves that output's term out, as
    its PyTorch counterpart: only there can a zero differ, as 0 * inf). The other formulas are
    written for defined gradients."""
    flag = getattr(info, "_takes_undefined", None)
    if flag is None:
        ns = _formula_namespace()

        def marked(src):
            call = ast.parse(src, mode="eval").body
            return (isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and
                    getattr(ns.get(call.func.id), "takes_undefined_grads", False))
        flag = info._takes_undefined = bool(info.formula_sources) and all(
            marked(src) for src in info.formula_sources)
    return flag


def _generate_apply(cls):
    """PyTorch's generated ``XxxBackward0::apply``, as Python: every saved value unpacked, then
    each formula whose inputs need a gradient, on one line (``<ember derivative of ...>`` in
    tracebacks), writing its edge. What :meth:`GeneratedNode.apply` does, without the generic
    dictionaries and loops."""
    info = cls._info
    ns = _formula_namespace()
    edge = {i: k for k, i in enumerate(info.diff_args)}
    fname = f"_apply_{cls.__name__}"
    lines = [f"def {fname}(_node, grads):"]
    # (unrolled: the formulas' namespace has ember's any, not Python's)
    undefined = " or ".join(f"grads[{i}] is None" for i in range(len(info.returns)))
    if not _takes_undefined_grads(info):
        lines += [f"    if {undefined}:", "        grads = _ember_materialize(_node, grads)"]
    lines.append("    _saved = _node._saved")
    # all saved values first, as PyTorch's generated code: a stale one raises even if unused
    # (a value saved under a guard is absent when its formula does not run)
    lines += [f"    {n} = _ember_unpack(_node, _saved.get({n!r}))" if n in info.save_guards
              else f"    {n} = _ember_unpack(_node, _saved[{n!r}])" for n in cls._saved_names]
    lines.append("    grad = grads[0]")
    lines += [f"    grad_{r.name} = grads[{i}]" for i, r in enumerate(info.returns) if r.name]
    lines += ["    _nxt = _node._next", f"    _out = [None] * {len(info.diff_args)}"]
    for (arg_idx, _code, _text), src in zip(info.formulas, info.formula_sources):
        ks = [edge[i] for i in arg_idx]
        needed = [f"_nxt[{k}][0] is not None" for k in ks]
        lines.append(f"    if {' or '.join(needed)}:")
        if info.uses_grad_input_mask:
            lines.append(f"        grad_input_mask = [{', '.join(needed)}]")
        if len(ks) == 1:
            lines.append(f"        _out[{ks[0]}] = {src}")
        else:
            lines.append(f"        for _k, _v in zip({tuple(ks)}, {src}): _out[_k] = _v")
    lines.append("    return _out")
    src = "\n".join(lines) + "\n"
    ns.setdefault("_ember_unpack", _unpack_saved)
    ns.setdefault("_ember_materialize", _materialize)
    compile_source(src, f"<ember derivative of {info.schema}>", ns)
    fn = ns.pop(fname)
    fn._source = src
    return fn


# ---------------------------------------------------------------------------------------------
# Recording.

def _is_differentiable_dtype(t):
    d = t._dtype
    return d.is_floating_point or d.is_complex


def _check_inplace(t, name):
    """PyTorch's check_inplace: leaves that require grad (and their views) are off limits, and
    so are views that forbid in-place writes (made in no_grad mode, multi-output views)."""
    if t._base_ is not None:
        check_view_inplace(t)
    if t._grad_fn is None and t._requires_grad and t._base_ is None:
        raise RuntimeError("a leaf Variable that requires grad is being used in an in-place "
                           "operation.")
    base = t._base_
    if base is not None and base._grad_fn is None and base._requires_grad:
        raise RuntimeError("a view of a leaf Variable that requires grad is being used in an "
                           "in-place operation.")


def _forward_below(entry, ks, args):
    """Run the op under the autograd layer (``AutoDispatchBelowADInplaceOrView``'s role)."""
    saved = _state.excluded
    _state.excluded = saved | AUTOGRAD_BITS
    try:
        m = ks & BELOW_AUTOGRAD
        k = entry.rcache.get(m)  # entry.redispatch, inlined: this runs for every recorded op
        if k is None:
            k = entry.resolve(m, "redispatch")
        return k(*args)
    finally:
        _state.excluded = saved


def _edge_slices(diff_args, is_list_arg):
    """The edge layout of an op without Tensor[] differentiable arguments (one edge each), the
    same for every call; None when a list argument makes it depend on the call."""
    if any(is_list_arg[i] for i in diff_args):
        return None
    return {i: (k, 1) for k, i in enumerate(diff_args)}


def _collect_edges(node, args, diff_args, is_list_arg, slices=None):
    """The node's edges (one per differentiable tensor input) and their metadata. ``slices``:
    the precomputed layout from :func:`_edge_slices` (shared by every node of the op, read only)."""
    nxt, meta = [], []
    if slices is not None:
        for i in diff_args:
            t = args[i]
            if getattr(t, "_requires_grad", False):
                fn = t._grad_fn
                # gradient_edge, inlined for the common case: a non-view output of another op
                nxt.append((fn, t._output_nr) if fn is not None and t._autograd is None
                           else gradient_edge(t))
                meta.append((t._size, t._dtype))
            else:
                nxt.append((None, 0))
                meta.append(None)
        node._next = tuple(nxt)
        node._edge_meta = tuple(meta)
        node._edge_slices = slices
        return
    slices = {}
    for i in diff_args:
        a = args[i]
        start = len(nxt)
        items = (a if a is not None else ()) if is_list_arg[i] else (a,)
        for t in items:
            if hasattr(t, "_keyset") and t._requires_grad:
                nxt.append(gradient_edge(t))
                meta.append((t._size, t._dtype))
            else:
                nxt.append((None, 0))
                meta.append(None)
        slices[i] = (start, len(nxt) - start)
    node._next = tuple(nxt)
    node._edge_meta = tuple(meta)
    node._edge_slices = slices


def _save_plan(info):
    """What :func:`_save` stores, resolved once per op: (arg index, name, guard) for saved
    arguments, derived values, and (name, output index, guard) for saved results; a guard is
    the edge offset whose gradient alone needs the value (``DerivativeInfo.save_guards``), or
    None."""
    guards = info.save_guards
    results = []
    for name in info.saved_results:
        if name == "result":  # a Tensor[] return is saved whole
            idx = None if len(info.returns) == 1 and info.returns[0].is_list else 0
        elif name.startswith("result") and name[6:].isdigit():
            idx = int(name[6:])
        else:
            idx = [r.name for r in info.returns].index(name)
        results.append((name, idx, guards.get(name)))
    return ([(i, info.arg_names[i], guards.get(info.arg_names[i])) for i in info.saved_args],
            [(i, f"{a}_{attr}", attr) for i, a, attr in info.saved_derived], results)


def _save(node, plan, args, outputs, pre_saved):
    saved = node._saved
    arg_items, derived, results = plan
    node_name = None
    edges = node._next
    for i, name, guard in arg_items:
        if guard is not None and edges[guard][0] is None:
            continue
        if pre_saved and name in pre_saved:
            saved[name] = pre_saved[name]
            continue
        saved[name] = _save_value(args[i], False, node_name)
    for i, name, attr in derived:
        if pre_saved and name in pre_saved:
            saved[name] = pre_saved[name]
            continue
        v = args[i]
        if hasattr(v, "_keyset"):
            saved[name] = _DERIVED[attr](v)
        elif isinstance(v, (list, tuple)):
            # of a Tensor[] argument, one value per tensor (PyTorch's to_arg_sizes_symint):
            # cat saves its inputs' sizes, not the inputs, so its node can run again after
            # a backward freed the graph's saved tensors (GradCache re-enters through it)
            saved[name] = [_DERIVED[attr](x) if hasattr(x, "_keyset") else None for x in v]
        else:
            saved[name] = None
    if results:
        node_name = node.name()
        for name, idx, guard in results:
            if guard is not None and edges[guard][0] is None:
                continue
            saved[name] = _save_value(outputs if idx is None else outputs[idx], True, node_name)


def _save_value(v, is_output, node_name):
    if hasattr(v, "_keyset"):
        return SavedTensor(v, is_output, node_name)
    if isinstance(v, (list, tuple)) and v and all(hasattr(x, "_keyset") for x in v):
        return [SavedTensor(x, is_output, node_name) for x in v]
    return v


def _set_history(outs, node, diff_mask):
    if len(outs) == 1:  # the common case, unrolled
        o = outs[0]
        if hasattr(o, "_keyset"):
            node._out_meta = ((o._size, o._dtype, o._device),)
            d = o._dtype
            if diff_mask[0] and (d.is_floating_point or d.is_complex):
                o._grad_fn = node
                o._output_nr = 0
                o._requires_grad = True
        else:
            node._out_meta = (None,)
        return
    metas = []
    for i, o in enumerate(outs):
        metas.append((o._size, o._dtype, o._device) if hasattr(o, "_keyset") else None)
    node._out_meta = tuple(metas)
    for i, o in enumerate(outs):
        if diff_mask[i] and hasattr(o, "_keyset") and _is_differentiable_dtype(o):
            o._grad_fn = node
            o._output_nr = i
            o._requires_grad = True


def make_autograd_kernel(entry, info, inplace=False):
    """The Autograd kernel of one op (PyTorch's generated VariableType kernel), in three steps:
    what the op's schema and ``derivatives.yaml`` entry say, computed once (:class:`_KernelPlan`);
    the recording path for calls that need a graph node or tangents (:func:`_reverse_recorder`,
    :func:`_recorder`); and the fast path as generated straight-line code
    (:func:`_generate_kernel`)."""
    plan = _KernelPlan(entry, info, inplace)
    post = _view_post(plan)
    record = _recorder(plan, _reverse_recorder(plan), post)
    if plan.straight:
        record = _generate_recorder(plan, record)
    return _generate_kernel(entry, info.diff_args, entry.schema.arguments, record, post,
                            plan.multi_output)


class _KernelPlan:
    """The facts recording needs about one op, read from its schema and derivatives entry."""

    def __init__(self, entry, info, inplace):
        schema = entry.schema
        nret = len(schema.returns)
        self.entry, self.info, self.inplace, self.name = entry, info, inplace, schema.base_name
        self.is_list_arg = {i: a.is_list for i, a in enumerate(schema.arguments)}
        if getattr(info, "node_cls", None) is None:
            info.node_cls = _make_node_class(info)
        self.node_cls = info.node_cls
        self.ret_is_list = nret == 1 and schema.returns[0].is_list
        self.multi = nret > 1 or self.ret_is_list
        # PyTorch's rule: without output_differentiability, a formula that only uses ``grad``
        # makes only output 0 differentiable.
        self.diff_mask = info.output_differentiability or (
            [True] * nret if info.uses_all_grads else [True] + [False] * (nret - 1))
        self.slices = _edge_slices(info.diff_args, self.is_list_arg)
        self.save_plan = _save_plan(info)
        self.need_clone_self = inplace and "self" in [info.arg_names[i] for i in info.saved_args]
        # A differentiable view op (its output aliases its input): views keep creation metadata.
        self.is_view = (not inplace and bool(info.diff_args) and self.diff_mask[0] and
                        any(r.alias and not r.is_write for r in schema.returns))
        self.multi_output = self.is_view and self.multi
        # The common case (one output, no Tensor[] inputs, not in place) also gets its recording
        # as generated straight-line code: :func:`_generate_recorder`.
        self.straight = not (inplace or self.multi or self.slices is None)


def _reverse_recorder(plan):
    """``rev_record(ks, a)``: run the op below Autograd and record its node. The plan's facts
    are unpacked into the closure because this runs for every recorded op."""
    entry, inplace, name, node_cls = plan.entry, plan.inplace, plan.name, plan.node_cls
    diff_args, is_list_arg, slices = plan.info.diff_args, plan.is_list_arg, plan.slices
    save_plan, need_clone_self, multi = plan.save_plan, plan.need_clone_self, plan.multi
    ret_is_list, diff_mask, is_view = plan.ret_is_list, plan.diff_mask, plan.is_view
    multi_output = plan.multi_output

    def new_node(a):
        node = node_cls()
        _collect_edges(node, a, diff_args, is_list_arg, slices)
        node._is_list_arg = is_list_arg
        return node

    def before_inplace(a):
        """An in-place op may change self's value and metadata (squeeze_, t_): its edge, the
        sizes a formula uses and (for formulas that need it) its value are taken first."""
        _check_inplace(a[0], name)
        node = new_node(a)
        pre = {k: _DERIVED[attr](a[i]) if hasattr(a[i], "_keyset") else None
               for i, k, attr in save_plan[1]}
        if need_clone_self:
            pre["self"] = SavedTensor(a[0].clone(), False, None)
        # the other saved inputs too, at their versions before the write, as PyTorch's
        # VariableType does: y.mul_(y.detach()) saves `other`, which the write then modifies
        edges = node._next
        for i, k, guard in save_plan[0]:
            if k not in pre and (guard is None or edges[guard][0] is not None):
                pre[k] = _save_value(a[i], False, None)
        return node, pre

    def rev_record(ks, a):
        if inplace:
            node, pre = before_inplace(a)
            out = _forward_below(entry, ks, a)
        else:
            out = _forward_below(entry, ks, a)
            node, pre = new_node(a), None
        if anomaly_mode._state.enabled:
            anomaly_mode.record_trace(node)
        outs = out if multi else (out,)
        if inplace:
            _rebase_history(a[0], node)
        else:
            _set_history(outs, node, [diff_mask[0]] * len(outs) if ret_is_list else diff_mask)
            if is_view:
                track_views(outs, node, multi_output)
        # Saved after the history is set, as PyTorch does: a saved output then knows it requires
        # grad (its unpacked value gets this node as grad_fn, so double backward goes through
        # it), and saved-tensor pack hooks see outputs with their grad_fn.
        _save(node, save_plan, a, outs, pre)
        return out
    return rev_record


def _generate_recorder(plan, general):
    """``record(ks, a)`` for a :attr:`_KernelPlan.straight` op as straight-line code: what
    :func:`_forward_below`, :func:`_collect_edges`, :func:`_set_history` and :func:`_save` do,
    unrolled over this op's arguments. Calls under forward AD take the ``general`` recorder."""
    info = plan.info
    lines = [
        "def record(ks, a):",
        "    if _fwv:  # forward-AD levels are live: tangents may need propagating",
        "        return _general(ks, a)",
        "    ex = _state.excluded",
        "    _state.excluded = ex | _AUTOGRAD_BITS  # run the op below the autograd layer",
        "    try:",
        f"        k = _rcache.get(ks & {BELOW_AUTOGRAD})",
        "        if k is None:",
        f"            k = _resolve(ks & {BELOW_AUTOGRAD}, 'redispatch')",
        "        out = k(*a)",
        "    finally:",
        "        _state.excluded = ex",
        "    node = _Node()",
    ]
    edges, metas = [], []
    for n, i in enumerate(info.diff_args):
        t = f"a[{i}]"
        lines += [
            f"    t = {t}",
            "    if getattr(t, '_requires_grad', False):",
            "        fn = t._grad_fn",
            # gradient_edge, inlined for the common cases: a leaf, a non-view output of an op
            "        if fn is None:",
            f"            e{n} = (_grad_accumulator(t), 0)",
            "        elif t._autograd is None:",
            f"            e{n} = (fn, t._output_nr)",
            "        else:",
            f"            e{n} = _gradient_edge(t)",
            f"        m{n} = (t._size, t._dtype)",
            "    else:",
            f"        e{n}, m{n} = _NO_EDGE, None",
        ]
        edges.append(f"e{n}")
        metas.append(f"m{n}")
    comma = "," if len(edges) == 1 else ""
    lines += [
        f"    node._next = ({', '.join(edges)}{comma})",
        f"    node._edge_meta = ({', '.join(metas)}{comma})",
        "    node._edge_slices = _slices",
        "    node._is_list_arg = _is_list_arg",
        "    if _anomaly._state.enabled:",
        "        _anomaly.record_trace(node)",
        "    if hasattr(out, '_keyset'):",
        "        node._out_meta = ((out._size, out._dtype, out._device),)",
    ]
    if plan.diff_mask[0]:
        lines += [
            "        d = out._dtype",
            "        if d.is_floating_point or d.is_complex:",
            "            out._grad_fn = node",
            "            out._output_nr = 0",
            "            out._requires_grad = True",
        ]
    lines += ["    else:", "        node._out_meta = (None,)"]
    if plan.is_view:  # track_views, for the one output
        lines += ["    if out._base_ is not None and out._grad_fn is node:",
                  "        _autograd_meta(out).view_version = out._vc[0]"]
    # saved after the history is set, as _reverse_recorder explains
    lines.append("    saved = node._saved")
    arg_items, derived, results = plan.save_plan
    for i, name, guard in arg_items:
        pad = "    "
        if guard is not None:  # saved only for the gradient of that input
            lines.append(f"    if e{guard}[0] is not None:")
            pad = "        "
        lines += [f"{pad}v = a[{i}]",
                  f"{pad}saved[{name!r}] = (_SavedTensor(v, False, None) if hasattr(v, '_keyset') "
                  "else _save_value(v, False, None))"]
    ns = {"_fwv": _fw.visible, "_general": general, "_state": _state,
          "_AUTOGRAD_BITS": AUTOGRAD_BITS, "_rcache": plan.entry.rcache,
          "_resolve": plan.entry.resolve, "_Node": plan.node_cls, "_gradient_edge": gradient_edge,
          "_grad_accumulator": grad_accumulator,
          "_NO_EDGE": (None, 0), "_slices": plan.slices, "_is_list_arg": plan.is_list_arg,
          "_anomaly": anomaly_mode, "_SavedTensor": SavedTensor, "_save_value": _save_value,
          "_autograd_meta": autograd_meta}
    for i, name, attr in derived:
        lines += [f"    t = a[{i}]",
                  f"    saved[{name!r}] = {_DERIVED_EXPR[attr]} if hasattr(t, '_keyset') else None"]
    for name, _, guard in results:  # the single output (straight ops have one)
        pad = "    "
        if guard is not None:
            lines.append(f"    if e{guard}[0] is not None:")
            pad = "        "
        lines.append(f"{pad}saved[{name!r}] = _save_value(out, True, "
                     f"{info.node_cls.__name__!r})")
    lines.append("    return out")
    src = "\n".join(lines) + "\n"
    compile_source(src, f"<ember autograd recorder {plan.entry.qualname}>", ns)
    fn = ns["record"]
    fn._source = src
    if _recorder_c is None:
        return fn
    # the same recorder in C (recorder.c), which calls this one for every case it does not take
    return _recorder_c.Recorder(
        fn, plan.entry.rcache, plan.entry.resolve, BELOW_AUTOGRAD, plan.node_cls,
        tuple(info.diff_args), plan.slices, plan.is_list_arg, tuple(arg_items),
        tuple((i, name, _DERIVED[attr]) + _DERIVED_SLOTS.get(attr, (None, False))
              for i, name, attr in derived),
        tuple((name, guard) for name, _, guard in results), info.node_cls.__name__,
        bool(plan.diff_mask[0]), plan.is_view)


def _load_recorder_c():
    """The C recorder (``recorder.c``), configured, or None: switched off
    (``EMBER_AUTOGRAD_RECORDER_C=0``), no compiler, or tensors built in Python (the C reads
    Tensor's slots at the offsets ``tensor_impl.c`` finds)."""
    from .._core import tensor_impl
    from .._inductor.codecache import HandWrittenModule
    from .._tensor import Tensor
    from . import graph
    if os.environ.get("EMBER_AUTOGRAD_RECORDER_C") == "0" or tensor_impl._C is None:
        return None

    def source():
        with open(os.path.join(os.path.dirname(__file__), "recorder.c")) as f:
            return f.read()
    mod = HandWrittenModule("ember_autograd_recorder", source, "nodes are recorded in Python",
                            parallel=False).get()
    if mod is None:
        return None

    def offsets(cls):
        return {n: tensor_impl._C.slot_offset(cls, n) for n in cls.__slots__
                if n not in ("__weakref__", "__dict__")}
    mod.configure(Tensor, offsets(Tensor), SavedTensor, offsets(SavedTensor), graph.AutogradMeta,
                  offsets(graph.AutogradMeta), graph.AccumulateGrad,
                  _state, AUTOGRAD_BITS,
                  graph._PYTHON_KEY, _fw.visible, anomaly_mode._state, graph._hooks,
                  CUDA_STREAMS, _seq, grad_accumulator, gradient_edge, _save_value,
                  graph._shallow, autograd_meta)
    return mod


_recorder_c = _load_recorder_c()


def _view_post(plan):
    """For a view op, ``post(out, base_requires_grad)``: what a call that did not record does
    to its outputs (PyTorch marks views made under no_grad so in-place changes to them fail)."""
    if not plan.is_view:
        return None
    node_name, multi_output = plan.info.node_name, plan.multi_output

    def post(out, base_requires_grad):
        mark_no_grad_views(out, base_requires_grad, node_name, multi_output)
    return post


def _recorder(plan, rev_record, post):
    """``record(ks, a)``: reverse recording and/or tangent propagation (forward AD), as the
    inputs need."""
    entry, info, inplace, name = plan.entry, plan.info, plan.inplace, plan.name
    diff_args, is_list_arg, diff_mask = info.diff_args, plan.is_list_arg, plan.diff_mask
    multi, multi_output = plan.multi, plan.multi_output

    def record(ks, a):
        levels = _forward.levels_of(a, diff_args, is_list_arg) if _fw.visible else ()
        if not levels:
            return rev_record(ks, a)
        if not info.fw_formulas and any(diff_mask):
            # PyTorch's VariableType runs the op's decomposition for forward AD instead: its
            # ops carry the tangents and record the backward graph
            decomposition = _jvp_decomposition(entry)
            if decomposition is not None:
                return decomposition(*a)
        _forward.check_supported(info, name, levels, diff_mask)
        original = None
        if inplace and info.fw_uses_self:
            with _fw._set_fwd_grad_enabled(False):
                original = a[0].clone()
        rg = any(_requires_grad(a[i], is_list_arg[i]) for i in diff_args)
        if _state.grad_enabled and rg:
            out = rev_record(ks, a)
        else:
            out = _forward_below(entry, ks, a)
            if post is not None and (rg or multi_output):
                post(out, rg)
        _forward.propagate(info, entry, levels, a, out, original, inplace, diff_mask, multi)
        return out
    return record


def _jvp_decomposition(entry):
    from .._decomp.decompositions_for_jvp import jvp_decomposition
    from .._ops.overload import _resolve_overload
    ns, _, rest = entry.qualname.partition("::")
    name, _, overload = rest.partition(".")
    return jvp_decomposition(_resolve_overload(ns, name, overload or "default"))


def _requires_grad(a, is_list):
    if is_list:
        return _any_rg(a)
    return getattr(a, "_requires_grad", False)


def _rebase_history(t, node):
    """After an in-place op: ``t`` is now the output of ``node`` (CopySlices for a view)."""
    from .views import copy_slices, views_follow_base
    node._out_meta = ((t._size, t._dtype, t._device),)
    if t._base_ is not None and _is_differentiable_dtype(t):
        copy_slices(t, node)
        return
    old_fn, old_nr = t._grad_fn, t._output_nr
    t._grad_fn = node
    t._output_nr = 0
    t._requires_grad = True
    move_retains_grad_hook(t, old_fn, old_nr)
    if t._autograd is not None and t._autograd.views:
        views_follow_base(t)


def _generate_kernel(entry, check_idx, args, record, post=None, post_always=False):
    """``kernel(ks, a0, a1, ...)``: the fast path as straight-line code (it runs on every op).
    ``post(out, any_input_requires_grad)``, for view ops, runs after a call that did not record:
    when an input requires grad (grad mode is off then), or always with ``post_always``."""
    names = [f"a{i}" for i in range(len(args))]
    conds = []
    for i in check_idx:
        if args[i].is_list:
            conds.append(f"_any_rg({names[i]})")
        else:
            conds.append(f"getattr({names[i]}, '_requires_grad', False)")
    cond = " or ".join(conds) if conds else "False"
    params = ", ".join(names)
    tup = params + ("," if len(names) == 1 else "")
    if post is None:
        tail = f"    return k({params})\n"
    elif post_always:
        tail = f"    out = k({params})\n    _post(out, bool({cond}))\n    return out\n"
    else:  # a view made with grad mode on is noted on its base (views.note_view)
        tail = (f"    out = k({params})\n    if {cond}:\n        _post(out, True)\n"
                f"    elif _state.grad_enabled:\n        _note_view(out)\n    return out\n")
    fwconds = []
    for i in check_idx:
        if args[i].is_list:
            fwconds.append(f"_any_fw({names[i]})")
        else:
            fwconds.append(f"getattr({names[i]}, '_fw_grad', None)")
    fwcond = " or ".join(fwconds) if fwconds else "False"
    src = (
        f"def autograd_kernel(ks, {params}):\n"
        f"    if _state.grad_enabled and ({cond}):\n"
        f"        return _record(ks, ({tup}))\n"
        f"    if _fwv and ({fwcond}):\n"
        f"        return _record(ks, ({tup}))\n"
        f"    m = ks & {BELOW_AUTOGRAD}\n"
        f"    k = _cache.get(m)\n"
        f"    if k is None:\n"
        f"        k = _resolve(m, 'redispatch')\n"
    ) + tail
    # The same kernel bound to one key set (the dispatcher caches one per key set, see
    # OperatorEntry.resolve): no functools.partial, and the kernel below is found once.
    bound_tail = "".join("    " + line + "\n" for line in tail.splitlines())
    src += (
        f"\ndef bind(ks):\n"
        f"    m = ks & {BELOW_AUTOGRAD}\n"
        f"    k = None\n"
        f"    def autograd_kernel({params}):\n"
        f"        nonlocal k\n"
        f"        if _state.grad_enabled and ({cond}):\n"
        f"            return _record(ks, ({tup}))\n"
        f"        if _fwv and ({fwcond}):\n"
        f"            return _record(ks, ({tup}))\n"
        f"        if k is None:\n"
        f"            k = _resolve(m, 'redispatch')\n"
        f"{bound_tail}"
        f"    return autograd_kernel\n"
    )
    ns = {"_state": _state, "_record": record, "_cache": entry.rcache, "_resolve": entry.resolve,
          "_any_rg": _any_rg, "_post": post, "_fwv": _fw.visible, "_any_fw": _any_fw,
          "_note_view": note_view}
    compile_source(src, f"<ember autograd kernel {entry.qualname}>", ns)
    fn = ns["autograd_kernel"]
    fn._source = src
    fn._bind = ns["bind"]
    return fn


def _any_fw(ts):
    if ts is None:
        return False
    for t in ts:
        if t is not None and getattr(t, "_fw_grad", None):
            return True
    return False


def _any_rg(ts):
    if ts is None:
        return False
    for t in ts:
        if t is not None and t._requires_grad:
            return True
    return False


# ---------------------------------------------------------------------------------------------
# Ops without a formula.

class NotImplementedNode(Node):
    """Backward of an op that has no derivative formula."""

    def __init__(self, opname):
        super().__init__()
        self.opname = opname

    def name(self):
        return "torch::autograd::NotImplemented"

    def apply(self, grads):
        if "::" not in self.opname:  # an aten op: PyTorch's autograd_not_implemented message
            raise RuntimeError(f"derivative for aten::{self.opname} is not implemented")
        raise RuntimeError(f"the derivative for '{self.opname}' is not implemented.")


def _autograd_fallback(op, ks, *args, **kwargs):
    """Backend fallback on the Autograd keys for every op without an autograd kernel. Boxed
    calling convention: keyword-only schema arguments arrive by keyword, in schema order."""
    if kwargs:
        args = args + tuple(kwargs.values())
    if _fw.visible and any(_fw.tangent_levels(t) for t in _tensors_in(args)):
        return _fallback_forward_ad(op, ks, args)
    if _state.grad_enabled:
        req = [a for a in _tensors_in(args) if a._requires_grad]
        if req:
            return _record_not_implemented(op, ks, args, req)
    return op._entry.redispatch(ks & BELOW_AUTOGRAD, *args)


def _fallback_forward_ad(op, ks, args):
    """An op without a formula met a dual input: PyTorch's NotImplementedError when a
    differentiable output would need a tangent (an in-place op: before writing)."""
    schema = op._schema
    name = schema.base_name
    if any(s.is_write for s in schema.arguments):
        raise NotImplementedError(_forward.NOT_SUPPORTED.format(name))
    with _fw._set_fwd_grad_enabled(False):
        out = _autograd_fallback(op, ks, *args)
    outs = out if isinstance(out, (tuple, list)) else (out,)
    if any(hasattr(o, "_keyset") and _is_differentiable_dtype(o) for o in outs):
        raise NotImplementedError(_forward.NOT_SUPPORTED.format(name))
    return out


def _tensors_in(args):
    for a in args:
        if hasattr(a, "_keyset"):
            yield a
        elif isinstance(a, (list, tuple)):
            for t in a:
                if hasattr(t, "_keyset"):
                    yield t


def _record_not_implemented(op, ks, args, req):
    schema = op._schema
    if schema.kind_is_out:
        raise RuntimeError(f"{schema.base_name}(): functions with out=... arguments don't support "
                           f"automatic differentiation, but one of the arguments requires grad.")
    written = [t for a, s in zip(args, schema.arguments) if s.is_write
               for t in (a if isinstance(a, (list, tuple)) else (a,)) if hasattr(t, "_keyset")]
    for t in written:
        _check_inplace(t, schema.base_name)
    out = _forward_below(op._entry, ks, args)
    ns = schema.namespace or "aten"
    node = NotImplementedNode(schema.base_name if ns == "aten" else f"{ns}::{schema.base_name}")
    tensors = list(_tensors_in(args))
    node._next = tuple(gradient_edge(t) for t in tensors)
    node._edge_meta = tuple((t._size, t._dtype) for t in tensors)
    outs = out if isinstance(out, tuple) else (out,)
    if written:
        for k, t in enumerate(written):  # (several: a foreach op's list)
            t._grad_fn, t._output_nr, t._requires_grad = node, k, True
        node._out_meta = tuple((t._size, t._dtype, t._device) for t in written)
    else:
        _set_history(outs, node, [True] * len(outs))
    return out


# ---------------------------------------------------------------------------------------------
# Installation.

def install(lib):
    """Register the autograd kernels for every op that has a formula, and the fallback."""
    from .._dispatch.schema import parse_schema
    counters = {}
    infos = {}
    raw = {}  # qualname -> its yaml entry
    for e in _load_yaml():
        schema = parse_schema(e["name"])
        raw[_qualname(schema)] = e
        # PyTorch numbers nodes per CamelCase name, the in-place "_" and leading underscores
        # dropped (fill_ -> FillBackward2, _convolution -> ConvolutionBackward1)
        base = schema.base_name[:-1] if schema.base_name.endswith("_") and not \
            schema.base_name.endswith("__") else schema.base_name
        n = counters.get(_camel(base), 0)
        counters[_camel(base)] = n + 1
        qual = _qualname(schema)
        entry = _d.get_entry(qual)
        if entry is None:
            skipped[qual] = "operator not defined"
            continue
        if _sig(entry.schema) != _sig(schema):
            skipped[qual] = f"schema mismatch: yaml has {_sig(schema)}, op is {_sig(entry.schema)}"
            continue
        info = DerivativeInfo(e, entry.schema, e.get("node_name") or f"{_camel(base)}Backward{n}")
        infos[qual] = info
        derivatives[qual] = info
        # in-place means self is written; ops that only update buffers they are given
        # (_native_batch_norm_legit's running stats) record like functional ops
        kernel = make_autograd_kernel(entry, info, inplace=entry.schema.is_mutable and
                                      entry.schema.arguments[0].is_write)
        lib.impl(qual, kernel, "Autograd", _kind=_d.KEYSET,
                 _debug="autograd kernel generated from ember/_ops/derivatives.yaml")
    # In-place variants reuse the functional entry (mul_.Tensor -> mul.Tensor).
    for qual, entry in list(_d._operators.items()):
        s = entry.schema
        if not qual.startswith("aten::") or not s.base_name.endswith("_") or qual in derivatives \
                or s.arguments[0].is_list:  # (in-place foreach ops: below)
            continue
        info = _functional_info(s, infos)
        if info is None:
            continue
        fqual = _qualname(info.schema)
        derivatives[qual] = info
        kernel = make_autograd_kernel(entry, info, inplace=True)
        lib.impl(qual, kernel, "Autograd", _kind=_d.KEYSET,
                 _debug=f"autograd kernel (in-place, formula of {fqual}) from derivatives.yaml")
    # In-place foreach ops: PyTorch derives each tensor's node from the single-tensor op; ember
    # runs that op over the lists when a gradient is to be recorded or a tangent carried.
    from .._kernels.composite.foreach import inplace_reference
    for qual, entry in list(_d._operators.items()):
        reference = inplace_reference(qual[len("aten::"):]) if qual.startswith("aten::") else None
        if reference is not None:
            lib.impl(qual, _foreach_inplace_kernel(entry, reference), "Autograd",
                     _kind=_d.KEYSET, _debug="autograd kernel of an in-place foreach op")
    # View-copy ops without an entry use their view op's (torchgen's add_view_copy_derivatives):
    # the arguments have the same names, so the formulas apply unchanged.
    for qual, entry in list(_d._operators.items()):
        s = entry.schema
        if "view_copy" not in entry.tags or qual in derivatives or not s.base_name.endswith("_copy"):
            continue
        ov = f".{s.overload_name}" if s.overload_name else ""
        view_qual = f"aten::{s.base_name[:-len('_copy')]}{ov}"
        if view_qual not in infos or view_qual == "aten::detach":
            continue  # PyTorch derives none for detach_copy either: its backward raises
        info = DerivativeInfo(raw[view_qual], s, f"{_camel(s.base_name)}Backward0")
        derivatives[qual] = info
        kernel = make_autograd_kernel(entry, info, inplace=False)
        lib.impl(qual, kernel, "Autograd", _kind=_d.KEYSET,
                 _debug=f"autograd kernel (formula of {view_qual}) from derivatives.yaml")
    # Ops PyTorch never records (gen_variable_type.DONT_REQUIRE_DERIVATIVE): a kernel that
    # always takes the fast path, so their outputs never require grad.
    # So are the ops native_functions.yaml declares factories (category_override: factory).
    from .._ops.registry import FACTORY_CATEGORY
    for qual, entry in list(_d._operators.items()):
        if qual.startswith("aten::") and qual not in derivatives and \
                (entry.schema.base_name in DONT_REQUIRE_DERIVATIVE or qual in FACTORY_CATEGORY):
            lib.impl(qual, _generate_kernel(entry, (), entry.schema.arguments, None), "Autograd",
                     _kind=_d.KEYSET, _debug="autograd kernel: never records (no derivative)")
            never_recorded.add(qual)
    # PyTorch's hand-written autograd kernel of resize_ (VariableTypeManual.cpp): a tensor that
    # requires grad may not change size; resize_as_ decomposes to resize_.
    resize = _d.get_entry("aten::resize_")
    lib.impl("aten::resize_", _resize_kernel(resize), "Autograd", _kind=_d.KEYSET,
             _debug="autograd kernel of resize_ (manual, as PyTorch's)")
    fallback = _d.Kernel(_autograd_fallback, _d.BOXED_KEYSET,
                         "autograd fallback (ember/autograd/derivatives.py)")
    for key in AUTOGRAD_KEYS:
        _d.register_fallback(key, fallback)


def _foreach_inplace_kernel(entry, reference):
    name = entry.schema.base_name

    def foreach_inplace(ks, *args):
        tensors = list(_tensors_in(args))
        if (_state.grad_enabled and any(t._requires_grad for t in tensors)) or \
                (_fw.visible and any(_fw.tangent_levels(t) for t in tensors)):
            for t in args[0]:  # every tensor before the first write, as PyTorch
                _check_inplace(t, name)
            return reference(*args)
        return entry.redispatch(ks & BELOW_AUTOGRAD, *args)
    return foreach_inplace


def _resize_kernel(entry):
    below_autograd = below(K.AutogradOther)

    def resize_(ks, self, size, memory_format=None):
        if self._requires_grad:
            raise RuntimeError("cannot resize variables that require grad")
        return entry.redispatch(ks & below_autograd, self, size, memory_format)
    return resize_


def _arg_sig(schema):
    return [(a.name, a.base, a.is_list, a.optional) for a in schema.arguments]


def _functional_info(inplace_schema, infos):
    """The entry of the functional op an in-place op belongs to: same base name without the
    trailing underscore and the same arguments (PyTorch matches by signature, not overload)."""
    sig = _arg_sig(inplace_schema)
    base = inplace_schema.base_name[:-1]
    for info in infos.values():
        if info.schema.base_name == base and _arg_sig(info.schema) == sig:
            return info
    return None
