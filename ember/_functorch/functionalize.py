"""Functionalization: ``torch.func.functionalize`` at run time, and the same rewrite as a pass
over a recorded aten graph (what AOTAutograd and ``ember.export`` use).

:func:`functionalize` runs its function on FunctionalTensorWrappers (the ``Functionalize``
dispatch key, :mod:`ember._functorch.functional_wrapper`), so data-dependent Python control
flow works; mutated inputs are written back with ``copy_`` at the end. Under an outer
``make_fx`` the recorded graph is functional, as PyTorch's is.

:func:`functionalize_graph` does the key's bookkeeping over an aten graph recorded by
``make_fx``: every tensor value of the graph belongs to an *alias group* (the storage it views:
a graph input, a constant, or an op's fresh output) and is described by the chain of view ops
that produced it from the group's base. Then

* an in-place op (``add_``) becomes its functional form (``add``); an ``out=`` op becomes the
  functional overload with the same non-out arguments; ``copy_`` becomes a copy of the source
  expanded and converted to the destination;
* writing a view writes its base: the new value is scattered back (``slice_scatter``,
  ``select_scatter``, ``diagonal_scatter``, the inverse of a reshaping view, or
  ``as_strided_scatter``), and the group's generation advances;
* a view used after its base changed is regenerated from the new base by replaying its chain;
* a mutated graph input (or constant) ends the graph with ``copy_`` into it (``epilogue=True``)
  or is returned as an extra output (what AOTAutograd does);
* with ``remove="mutations_and_views"`` every view op is emitted as its ``*_copy`` form.

``native_batch_norm`` updates its running statistics without saying so in its schema (as in
PyTorch); it is rewritten to the statistics-free call plus the functional update.
"""
import functools
import operator

from .._ops.overload import OpOverload, ops
from .._tensor import Tensor
from ..fx.graph import Graph
from ..fx.graph_module import GraphModule
from ..fx.node import Node, map_arg
from ..utils import _pytree as pytree
from ..utils._python_dispatch import _disable_current_modes

__all__ = ["functionalize", "functionalize_graph", "FunctionalizationInfo"]

aten = ops.aten  # ops resolve when called


class _Step:
    """One view op of a chain: ``func(base, *args, **kwargs)`` (``[index]`` for list views);
    ``val`` is the view's metadata (a FakeTensor) from the traced graph."""
    __slots__ = ("func", "args", "kwargs", "index", "val")

    def __init__(self, func, args, kwargs, index, val):
        self.func, self.args, self.kwargs, self.index, self.val = func, args, kwargs, index, val


class _Alias:
    """A tensor value: its group's root, the view chain from it, the generation it was made at,
    and its node in the new graph."""
    __slots__ = ("root", "chain", "gen", "node")

    def __init__(self, root, chain, gen, node):
        self.root, self.chain, self.gen, self.node = root, chain, gen, node


class _Group:
    __slots__ = ("base", "gen", "val", "orig", "mutated")

    def __init__(self, base, val, orig):
        self.base, self.gen, self.val, self.orig, self.mutated = base, 0, val, orig, False


class FunctionalizationInfo:
    """What functionalizing a graph found: ``mutated_inputs`` (placeholder indices whose
    values changed) and, per output, the index of the input it aliases (``None`` if fresh)."""

    def __init__(self, mutated_inputs, output_aliases, mutated_constants):
        self.mutated_inputs = mutated_inputs
        self.output_aliases = output_aliases
        self.mutated_constants = mutated_constants


def _functional_overload(func):
    """The functional overload of an in-place or out= op, or None."""
    aten_ns = __import__("ember").ops
    ns = getattr(aten_ns, func.namespace)
    schema = func._schema
    name = schema.base_name
    if schema.kind_is_out:
        want = [(a.name, a.type) for a in schema.arguments if not (a.is_write and a.kwarg_only)]
        for cand_name in ([name] + ([name[:-1]] if name.endswith("_") else [])):
            cand_packet = getattr(ns, cand_name, None)
            if cand_packet is None:
                continue
            for ov in cand_packet.overloads():
                o = getattr(cand_packet, ov)
                if o._schema.is_mutable:
                    continue
                if [(a.name, a.type) for a in o._schema.arguments] == want:
                    return o
        return None
    if name.endswith("_"):
        packet = getattr(ns, name[:-1], None)
        if packet is not None and func._overloadname in packet.overloads():
            o = getattr(packet, func._overloadname)
            if not o._schema.is_mutable:
                return o
    return None


def _copy_variant(func):
    """``view.default`` -> ``view_copy.default`` (None when ember has no copy form)."""
    if func in _copy_variant.memo:
        return _copy_variant.memo[func]
    name = func._schema.base_name
    target = {"_unsafe_view": None, "alias": "alias_copy"}.get(name, f"{name}_copy")
    found = None
    if target is not None:
        packet = getattr(aten, target, None)
        if packet is not None and func._overloadname in packet.overloads():
            found = getattr(packet, func._overloadname)
    _copy_variant.memo[func] = found
    return found


_copy_variant.memo = {}


def _val(n):
    return n.meta.get("val") if isinstance(n, Node) else None


def _last_node(graph):
    return next(iter(reversed(graph.nodes)), None)


def _inherit_meta(graph, before, old):
    """The nodes added to ``graph`` after ``before`` (what rewriting ``old`` emitted) get
    ``old``'s module stack: ``ember.export.unflatten`` reads it from the functional graph."""
    stack = old.meta.get("nn_module_stack")
    if stack is None:
        return
    for new in reversed(graph.nodes):
        if new is before:
            break
        new.meta.setdefault("nn_module_stack", stack)


class _Functionalizer:
    def __init__(self, gm, remove):
        self.gm = gm
        self.remove = remove
        self.graph = Graph()
        self.groups = {}  # root id -> _Group
        self.alias = {}  # old node -> _Alias (tensor values)
        self.env = {}  # old node -> new node or value (non-tensor values)
        self.multi_view = {}  # old node -> (func, args, kwargs) of a view op returning a list
        self.placeholders = []  # old placeholder nodes, in order

    # -- values -------------------------------------------------------------------------------
    def _new_root(self, old, new, orig=None):
        key = len(self.groups)
        self.groups[key] = _Group(new, _val(old), orig)
        self.alias[old] = _Alias(key, [], 0, new)
        new.meta.update({k: v for k, v in old.meta.items() if k in ("val", "tensor_meta")})
        return key

    def _emit(self, func, args, kwargs, like=None):
        node = self.graph.call_function(func, tuple(args), dict(kwargs))
        if like is not None and "val" in like.meta:
            node.meta["val"] = like.meta["val"]
        else:
            # a node the pass writes (a scatter back into a base): its metadata from running
            # the op on the inputs' fake values, as tracing would have recorded it
            vals = pytree.tree_map(lambda a: _val(a) if isinstance(a, Node) else a,
                                   (tuple(args), dict(kwargs)))
            # (a None argument, such as a slice's open end, is no missing value)
            if all(_val(a) is not None for a in pytree.tree_leaves((tuple(args), dict(kwargs)))
                   if isinstance(a, Node)):
                with _disable_current_modes():  # not recorded by a trace running around us
                    node.meta["val"] = func(*vals[0], **vals[1])
        return node

    def _emit_functional(self, func, args, kwargs, inplace):
        """The functional form of the in-place node ``inplace``, its metadata from running it
        (``inplace``'s when the inputs have none): an in-place op's result is its input, whose
        strides and dtype the functional op's new tensor need not have (fill.Tensor of a
        strided view returns a contiguous tensor)."""
        node = self._emit(func, args, kwargs)
        if "val" not in node.meta and "val" in inplace.meta:
            node.meta["val"] = inplace.meta["val"]
        return node

    def _view_call(self, step, base):
        func = step.func
        if self.remove == "mutations_and_views":
            func = _copy_variant(func) or func
        node = self._emit(func, (base,) + tuple(step.args), step.kwargs)
        if step.index is not None:
            node = self.graph.call_function(operator.getitem, (node, step.index))
        node.meta["val"] = step.val
        return node

    def get(self, old):
        """The current value of old node ``old`` in the new graph (regenerating stale views)."""
        a = self.alias.get(old)
        if a is None:
            return self.env[old]
        group = self.groups[a.root]
        if a.gen != group.gen:
            v = group.base
            for step in a.chain:
                v = self._view_call(step, v)
            a.node, a.gen = v, group.gen
        return a.node

    def map_args(self, x):
        """``x`` (an argument, or lists, tuples and dicts of them) with its nodes replaced by
        their current values."""
        return map_arg(x, self.get)

    # -- writes --------------------------------------------------------------------------------
    def write(self, old, new_value):
        """Old node ``old`` (a tensor) now holds ``new_value``: update its group's base."""
        a = self.alias[old]
        group = self.groups[a.root]
        if a.chain:
            # the values along the chain, base first, as the graph holds them now
            vals = [group.base]
            for step in a.chain[:-1]:
                vals.append(self._view_call(step, vals[-1]))
            src = new_value
            for step, base, i in zip(reversed(a.chain), reversed(vals),
                                     range(len(a.chain) - 1, -1, -1)):
                base_val = a.chain[i - 1].val if i > 0 else group.val
                src = self._scatter(step, base, src, base_val)
            group.base = src
        else:
            group.base = new_value
        group.gen += 1
        group.mutated = True
        a.node, a.gen = new_value, group.gen

    def _scatter(self, step, base, src, base_val):
        """``base`` with the view ``step`` of it replaced by ``src``."""
        name, args = step.func._schema.base_name, step.args
        kw = step.kwargs
        if step.index is not None:  # split / unbind / chunk: the index-th piece
            if name == "unbind":
                dim = args[0] if args else kw.get("dim", 0)
                return self._emit(aten.select_scatter.default, (base, src, dim, step.index), {})
            if name in ("split", "split_with_sizes", "chunk", "tensor_split"):
                dim = args[1] if len(args) > 1 else kw.get("dim", 0)
                dim = dim % max(len(base_val.shape), 1)
                start = sum(_piece_len(step, k, base_val, dim) for k in range(step.index))
                end = start + step.val.shape[dim]
                return self._emit(aten.slice_scatter.default, (base, src, dim, start, end, 1), {})
        elif name == "slice":
            return self._emit(aten.slice_scatter.default, (base, src) + tuple(args), kw)
        elif name == "select":
            return self._emit(aten.select_scatter.default, (base, src) + tuple(args), kw)
        elif name == "diagonal":
            return self._emit(aten.diagonal_scatter.default, (base, src) + tuple(args), kw)
        elif name in ("view", "_unsafe_view", "reshape", "alias", "detach", "squeeze",
                      "unsqueeze", "flatten", "unflatten", "view_as") and \
                step.func._overloadname != "dtype":
            return self._emit(aten.view.default, (src, list(base_val.shape)), {})
        elif name == "permute":
            dims = args[0]
            inv = [0] * len(dims)
            for i, d in enumerate(dims):
                inv[d % len(dims)] = i
            return self._emit(aten.permute.default, (src, inv), {})
        elif name in ("transpose", "t", "_conj", "_neg_view"):  # (each its own inverse)
            return self._emit(step.func, (src,) + tuple(args), kw)
        elif name == "view_as_real":
            return self._emit(aten.view_as_complex.default, (src,), {})
        elif name == "view_as_complex":
            return self._emit(aten.view_as_real.default, (src,), {})
        # any other view: write through its strides
        return self._emit(aten.as_strided_scatter.default,
                          (base, src, list(step.val.shape), list(step.val.stride()),
                           step.val.storage_offset() - base_val.storage_offset()), {})

    # -- nodes ---------------------------------------------------------------------------------
    def run(self):
        out = None
        for node in self.gm.graph.nodes:
            before = _last_node(self.graph)
            if node.op == "placeholder":
                new = self.graph.placeholder(node.target)
                self.placeholders.append(node)
                if isinstance(_val(node), Tensor):
                    self._new_root(node, new, orig=new)
                else:
                    new.meta.update(node.meta)
                    self.env[node] = new
            elif node.op == "get_attr":
                new = self.graph.get_attr(node.target)
                if isinstance(_val(node), Tensor) or isinstance(
                        _attr(self.gm, node.target), Tensor):
                    if "val" not in node.meta:
                        node.meta["val"] = _attr(self.gm, node.target)
                    self._new_root(node, new, orig=new)
                else:
                    self.env[node] = new
            elif node.op == "call_function":
                self.call_function(node)
            elif node.op == "output":
                out = node
            else:
                raise RuntimeError(f"functionalize: unsupported node {node.op} {node.target}")
            _inherit_meta(self.graph, before, node)
        return out

    def call_function(self, node):
        func = node.target
        if func is operator.getitem:
            src, idx = node.args
            if src in self.multi_view:
                base_old, step_tpl = self.multi_view[src]
                func_v, args, kwargs = step_tpl
                a = self.alias[base_old]
                step = _Step(func_v, args, kwargs, idx, _val(node))
                self.get(base_old)
                new = self.graph.call_function(operator.getitem, (self.env[src], idx))
                new.meta.update(node.meta)
                self.alias[node] = _Alias(a.root, a.chain + [step], self.groups[a.root].gen, new)
                return
            new = self.graph.call_function(operator.getitem, (self.env[src], idx))
            new.meta.update(node.meta)
            if isinstance(_val(node), Tensor):
                self._new_root(node, new)
            else:
                self.env[node] = new
            return
        if not isinstance(func, OpOverload):
            new = self.graph.call_function(func, self.map_args(node.args),
                                           self.map_args(node.kwargs))
            new.meta.update(node.meta)
            self._result(node, new)
            return
        schema = func._schema
        if func._schema.base_name == "native_batch_norm" and self._batch_norm(node):
            return
        if schema.is_mutable:
            self._mutation(node)
            return
        args, kwargs = self.map_args(node.args), self.map_args(node.kwargs)
        if func.is_view and node.args and isinstance(node.args[0], Node) \
                and node.args[0] in self.alias:
            emit = func
            if self.remove == "mutations_and_views":
                emit = _copy_variant(func) or func
            new = self._emit(emit, args, kwargs, like=node)
            src = self.alias[node.args[0]]
            if isinstance(_val(node), (list, tuple)):
                self.env[node] = new
                self.multi_view[node] = (node.args[0], (func, args[1:], kwargs))
                return
            step = _Step(func, args[1:], kwargs, None, _val(node))
            self.alias[node] = _Alias(src.root, src.chain + [step],
                                      self.groups[src.root].gen, new)
            return
        new = self._emit(func, args, kwargs, like=node)
        self._result(node, new)

    def _result(self, node, new):
        if isinstance(_val(node), Tensor):
            self._new_root(node, new)
        else:
            self.env[node] = new

    def _mutation(self, node):
        func = node.target
        schema = func._schema
        _missing = object()

        def arg(i, default=None):
            a = schema.arguments[i]
            if i < len(node.args):
                return node.args[i]
            return node.kwargs.get(a.name, default)
        written = [i for i, a in enumerate(schema.arguments) if a.is_write]
        if schema.base_name == "copy_":
            dst, src = node.args[0], node.args[1]
            new_src = self.get(src) if isinstance(src, Node) else src
            dval, sval = _val(dst), _val(src)
            value = new_src
            if sval is None or sval.dtype != dval.dtype or sval.device != dval.device:
                value = self._emit(aten._to_copy.default, (value,),
                                   {"dtype": dval.dtype, "device": dval.device})
            if sval is None or list(sval.shape) != list(dval.shape):
                expand = aten.expand.default
                if self.remove == "mutations_and_views":
                    expand = aten.expand_copy.default
                value = self._emit(expand, (value, list(dval.shape)), {})
            value = self._dense_like(value, dval)
            value.meta["val"] = dval
            self.write(dst, value)
            self.alias[node] = self.alias[dst]
            return
        if schema.base_name == "zero_":  # PyTorch's functional form is zero(); fill is core
            dst = node.args[0]
            new = self._emit_functional(aten.fill.Scalar, (self.get(dst), 0), {}, node)
            self.write(dst, new)
            self.alias[node] = self.alias[dst]
            return
        functional = _functional_overload(func)
        if functional is None:
            raise RuntimeError(
                f"functionalize: {func} mutates its input and has no functional variant")
        fargs = [a.name for a in functional._schema.arguments]
        bound = {}
        for i, a in enumerate(schema.arguments):
            if a.name in fargs and not (schema.kind_is_out and a.is_write and a.kwarg_only):
                v = arg(i, _missing)
                if v is not _missing:
                    bound[a.name] = self.map_args(v)
        pos, kw = [], {}
        for a in functional._schema.arguments:
            if a.name in bound:
                if a.kwarg_only:
                    kw[a.name] = bound[a.name]
                else:
                    pos.append(bound[a.name])
            elif not a.has_default():
                raise RuntimeError(f"functionalize: cannot call {functional} for {func}")
        new = self._emit_functional(functional, pos, kw, node)
        targets = [arg(i) for i in written]
        if len(targets) == 1 and not isinstance(targets[0], (list, tuple)):
            t = targets[0]
            if not isinstance(_val(node), Tensor):
                new.meta["val"] = _val(t)
            elif isinstance(_val(t), Tensor) and isinstance(_val(new), Tensor) and \
                    _val(new).dtype != _val(t).dtype:
                # an in-place op keeps its input's dtype where the functional one promotes
                # (x.add_(float64) of a float32 x): PyTorch's replace_ casts the result back
                new = self._emit(aten._to_copy.default, (new,), {"dtype": _val(t).dtype})
            self.write(t, new)
            if isinstance(_val(node), Tensor):
                self.alias[node] = self.alias[t]
            else:
                self.env[node] = new
        else:  # several written tensors, or a Tensor[] (a foreach op): one output each
            targets = [t for x in targets for t in (x if isinstance(x, (list, tuple)) else (x,))]
            if _val(node) is None:  # (an op returning nothing: its functional form's values)
                new.meta["val"] = [_val(t) for t in targets]
            outs = []
            for k, t in enumerate(targets):
                item = self.graph.call_function(operator.getitem, (new, k))
                item.meta["val"] = _val(t)
                self.write(t, item)
                outs.append(item)
            self.env[node] = new

    def _dense_like(self, value, dval):
        """A fresh copy of ``value`` laid out in ``dval``'s stride order: the destination of a
        ``copy_`` keeps its strides, and later views of it depend on them."""
        from .. import contiguous_format
        n = len(dval.shape)
        order = sorted(range(n), key=lambda d: (-dval.stride()[d], -dval.shape[d]))
        if order == list(range(n)):
            return self._emit(aten.clone.default, (value,),
                              {"memory_format": contiguous_format})
        inv = [0] * n
        for i, d in enumerate(order):
            inv[d] = i
        permuted = self._emit(aten.permute.default, (value, order), {})
        dense = self._emit(aten.clone.default, (permuted,), {"memory_format": contiguous_format})
        return self._emit(aten.permute.default, (dense, inv), {})

    def _batch_norm(self, node):
        """``native_batch_norm(x, w, b, running_mean, running_var, True, momentum, eps)``
        writes the running statistics: rewrite to the stats-free call plus their update."""
        args = list(node.args) + [None] * (8 - len(node.args))
        x, w, b, rm, rv, training, momentum, eps = args[:8]
        if not training or rm is None or rv is None:
            return False
        xa = self.get(x)
        new = self._emit(aten.native_batch_norm.default,
                         (xa, self.map_args(w), self.map_args(b), None, None, True, momentum,
                          eps), {}, like=node)
        self.env[node] = new
        xval = _val(x)
        dims = [0] + list(range(2, len(xval.shape)))
        n = 1
        for d in dims:
            n *= xval.shape[d]
        mean = self.graph.call_function(operator.getitem, (new, 1))
        mean.meta["val"] = _val(node)[1]
        var = self._emit(aten.var.correction, (xa, dims), {"correction": 1})
        var.meta["val"] = _val(rv)
        new_rm = self._emit(aten.add.Tensor, (
            self._emit(aten.mul.Tensor, (self.get(rm), 1 - momentum), {}),
            self._emit(aten.mul.Tensor, (mean, momentum), {})), {})
        new_rm.meta["val"] = _val(rm)
        self.write(rm, new_rm)
        new_rv = self._emit(aten.add.Tensor, (
            self._emit(aten.mul.Tensor, (self.get(rv), 1 - momentum), {}),
            self._emit(aten.mul.Tensor, (var, momentum), {})), {})
        new_rv.meta["val"] = _val(rv)
        self.write(rv, new_rv)
        return True


def _piece_len(step, k, base_val, dim):
    name, args = step.func._schema.base_name, step.args
    size = base_val.shape[dim]
    if name == "split_with_sizes":
        return args[0][k]
    if name == "split":
        return min(args[0], size - k * args[0])
    if name == "chunk":
        chunks = args[0]
        each = -(-size // chunks)
        return min(each, size - k * each)
    raise RuntimeError(f"functionalize: cannot write through a piece of {step.func}")


def _attr(gm, target):
    obj = gm
    for part in target.split("."):
        obj = getattr(obj, part, None)
    return obj


def functionalize_graph(gm, *, remove="mutations", epilogue=True):
    """A functional copy of aten graph ``gm`` (see the module docstring) and its
    :class:`FunctionalizationInfo`. With ``epilogue=False`` the new values of mutated inputs
    are appended to the outputs (a flat tuple), in input order."""
    if remove not in ("mutations", "mutations_and_views"):
        raise RuntimeError(f"functionalize got an invalid value for the remove argument: "
                           f"{remove!r}")
    f = _Functionalizer(gm, remove)
    out = f.run()
    g = f.graph
    result = f.map_args(out.args[0])
    mutated_inputs, mutated_constants = [], []
    input_groups = {}
    for i, ph in enumerate(f.placeholders):
        a = f.alias.get(ph)
        if a is not None and not a.chain:
            input_groups[a.root] = i
            if f.groups[a.root].mutated:
                mutated_inputs.append(i)
    for old, a in list(f.alias.items()):
        if old.op == "get_attr" and not a.chain and f.groups[a.root].mutated:
            mutated_constants.append((old.target, a.root))
    flat_out, _ = pytree.tree_flatten(out.args[0])
    output_aliases = []
    for o in flat_out:
        a = f.alias.get(o) if isinstance(o, Node) else None
        output_aliases.append(input_groups.get(a.root) if a is not None else None)
    if epilogue:
        for i in mutated_inputs:
            group = f.groups[f.alias[f.placeholders[i]].root]
            g.call_function(aten.copy_.default, (group.orig, group.base))
        for _target, root in mutated_constants:
            group = f.groups[root]
            g.call_function(aten.copy_.default, (group.orig, group.base))
        g.output(result)
    else:
        extra = [f.groups[f.alias[f.placeholders[i]].root].base for i in mutated_inputs]
        extra += [f.groups[root].base for _t, root in mutated_constants]
        flat, _ = pytree.tree_flatten(result)
        g.output(tuple(flat) + tuple(extra))
    new_gm = GraphModule(gm, g, type(gm).__name__ if type(gm) is not GraphModule else
                         getattr(gm, "_graph_name", "GraphModule"))
    return new_gm, FunctionalizationInfo(mutated_inputs, output_aliases,
                                         [t for t, _ in mutated_constants])


def functionalize(func, *, remove="mutations"):
    """``torch.func.functionalize``: run ``func`` on functional wrappers of its tensor
    arguments (the ``Functionalize`` key, ember._functorch.functional_wrapper), so it runs with
    no mutation and any Python control flow; mutated inputs get their new values with ``copy_``
    at the end, so callers see eager's state. ``remove="mutations_and_views"`` also runs views
    as ``*_copy`` ops."""
    if remove not in ("mutations", "mutations_and_views"):
        raise RuntimeError(f"functionalize got an invalid value for the remove argument: "
                           f"{remove!r}")
    reapply_views = remove == "mutations"

    @functools.wraps(func)
    def wrapped(*args, **kwargs):
        from . import functional_wrapper as fw
        from .interpreter import push_functionalize
        flat, spec = pytree.tree_flatten((args, kwargs))
        with push_functionalize(reapply_views) as layer:
            wrapped_flat = [fw.to_functional(x, layer.level) if isinstance(x, Tensor) else x
                            for x in flat]
            a, k = pytree.tree_unflatten(wrapped_flat, spec)
            out = func(*a, **k)

            def unwrap(x):
                if x.__class__ is fw.FunctionalTensorWrapper and x._level == layer.level:
                    fw.sync(x)
                    return x._value
                return x
            out = pytree.tree_map(unwrap, out)
            for x in wrapped_flat:
                fw.sync(x)
        # outside the layer: write the inputs' new values back into them (functorch's
        # _propagate_functional_input_mutation: a resize when the byte size changed, as_strided_
        # when only the metadata did, then copy_)
        for orig, w in zip(flat, wrapped_flat):
            if isinstance(orig, Tensor) and w._value is not orig:
                new = w._value
                if new.numel() * new.element_size() != orig.numel() * orig.element_size():
                    orig.resize_(new._size)
                if new._size != orig._size:
                    orig.as_strided_(new._size, new._stride)
                orig.copy_(new)
        return out
    return wrapped
