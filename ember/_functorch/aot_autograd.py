"""AOTAutograd: trace forward and backward ahead of time, partition, run as an autograd.Function.

The pipeline (PyTorch's, ``torch/_functorch/aot_autograd.py``):

1. **metadata**: trace the function once on FakeTensors with ``make_fx`` and functionalize the
   graph, which says which inputs it mutates and which outputs alias inputs;
2. **joint graph**: trace ``joint(primals, tangents)`` — the forward outputs and
   ``autograd.grad`` of the differentiable ones against the tangents — with ``make_fx`` and the
   decomposition table, then functionalize it (in-place ops gone, mutated inputs returned as
   extra forward outputs) and retrace it through the table until only functional ops remain;
3. **partition** it into a forward graph (outputs: user outputs, new values of mutated inputs,
   values saved for backward) and a backward graph (inputs: saved values and tangents) with
   :func:`default_partition` or :func:`min_cut_rematerialization_partition`;
4. **compile** both with the given compilers and run them inside an ``autograd.Function``:
   compiled regions compose with eager autograd and hooks; input mutations are replayed with
   ``copy_`` after the forward; outputs aliasing inputs are regenerated as views of them.

When no input requires grad (or grad mode is off) only the forward is traced and compiled (the
inference graph). Random ops are traced in forward once and their outputs (dropout masks) are
saved, never recomputed, so forward and backward see eager's masks for the same seed; tracing
runs on FakeTensors and leaves the RNG state as it found it.
"""
import functools
import itertools
import operator
import os
import sys
import time

from .. import autograd as _autograd
from .._core import strides as _st
from .._core.tensor_impl import CONJUGATE, NEGATIVE
from .._dispatch import tls as _tls
from .._dispatch.keys import AUTOCAST_BITS
from ..amp import autocast_mode as _autocast_mode
from .._tensor import Tensor
from ..fx.experimental.proxy_tensor import make_fx
from ..fx.graph import Graph
from ..fx.graph_module import GraphModule
from ..fx.interpreter import Interpreter
from ..fx.node import Node
from ..utils import _pytree as pytree
from .functionalize import functionalize_graph

__all__ = ["aot_function", "aot_module", "aot_module_simplified", "aot_autograd",
           "default_partition", "min_cut_rematerialization_partition", "make_boxed_func",
           "nop", "saved_tensor_bytes", "aot_eager", "aot_eager_decomp_partition"]

AOT_COUNTER = itertools.count()


def nop(gm, example_inputs):
    """The identity compiler: run the graph as it is (what ``aot_eager`` uses)."""
    return gm


def make_boxed_func(f):
    def g(args):
        return f(*args)
    g._boxed_call = True
    return g


def _log(kind, name, gm):
    logs = os.environ.get("TORCH_LOGS", "")
    wanted = {s.strip().lstrip("+") for s in logs.split(",")}
    if kind in wanted:
        print(f"TRACED GRAPH ({kind})\n ===== {name} =====\n{gm.print_readable(False)}"
              if hasattr(gm, "print_readable") else f"===== {name} =====\n{gm.code}",
              file=sys.stderr)


# ---------------------------------------------------------------------------------------------
# tracing

def _rng_preserved(fn):
    """Tracing must not advance the global RNG (eager and compiled then draw the same masks)."""
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        from .. import random as _random
        state = _random.get_rng_state()
        try:
            return fn(*args, **kwargs)
        finally:
            _random.set_rng_state(state)
    return wrapper


def _is_mutating(gm):
    return any(n.op == "call_function" and hasattr(n.target, "_schema")
               and n.target._schema.is_mutable for n in gm.graph.nodes)


def _placeholder_inputs(gm):
    """Real tensors with each placeholder's metadata (what a retrace runs on)."""
    from .. import empty_strided
    out = []
    for n in gm.graph.nodes:
        if n.op != "placeholder":
            continue
        v = n.meta.get("val")
        if isinstance(v, Tensor):
            out.append(empty_strided(tuple(v.shape), tuple(v.stride()), dtype=v.dtype,
                                     device=v.device))
        else:
            out.append(v)
    return out


def _retrace(gm, decompositions):
    """``gm`` traced again through the decomposition table (flat inputs and outputs)."""
    names = [n.target for n in gm.graph.nodes if n.op == "placeholder"]

    def run(*args):
        return Interpreter(gm).run(*args)
    new = make_fx(run, decomposition_table=decompositions, tracing_mode="fake",
                  _allow_non_fake_inputs=True)(*_placeholder_inputs(gm))
    for n, name in zip([n for n in new.graph.nodes if n.op == "placeholder"], names):
        n.target = name
        n.name = name
    new.recompile()
    return new


def _to_functional(gm, decompositions):
    """Functionalize ``gm`` (mutated inputs appended to its outputs) and lower it through the
    table until it holds no mutation and no op the table decomposes."""
    fgm, info = functionalize_graph(gm, epilogue=False)
    for _ in range(4):
        needs = any(n.op == "call_function" and n.target in decompositions
                    for n in fgm.graph.nodes)
        if not needs:
            break
        fgm = _retrace(fgm, decompositions)
        if _is_mutating(fgm):
            fgm, _ = functionalize_graph(fgm, epilogue=False)
    return fgm, info


# ---------------------------------------------------------------------------------------------
# partitioning

def _extract(joint, inputs, outputs, name):
    """A graph computing ``outputs`` (joint nodes) from ``inputs`` (joint nodes that become
    placeholders, in order); anything else needed is copied from the joint graph."""
    g = Graph()
    env = {}
    for n in inputs:
        p = g.placeholder(n.name)
        p.meta = dict(n.meta)
        env[n] = p

    def copy(n):
        stack = [n]
        while stack:
            cur = stack[-1]
            if cur in env:
                stack.pop()
                continue
            if cur.op == "placeholder":
                raise RuntimeError(f"partition: {name} graph needs {cur.name}, which is not "
                                   f"one of its inputs")
            missing = [a for a in cur.all_input_nodes if a not in env]
            if missing:
                stack.extend(missing)
                continue
            env[cur] = g.node_copy(cur, lambda a: env[a])
            stack.pop()
        return env[n]
    outs = [copy(o) if isinstance(o, Node) else o for o in outputs]
    g.output(tuple(outs))
    gm = GraphModule(joint, g, name)
    return gm


def _split_outputs(joint, num_fwd_outputs):
    out = next(n for n in joint.graph.nodes if n.op == "output")
    flat = list(out.args[0])
    return flat[:num_fwd_outputs], flat[num_fwd_outputs:]


def _placeholders(joint):
    ps = [n for n in joint.graph.nodes if n.op == "placeholder"]
    return ([p for p in ps if not p.target.startswith("tangents")],
            [p for p in ps if p.target.startswith("tangents")])


def _ancestors(nodes):
    seen = set()
    stack = [n for n in nodes if isinstance(n, Node)]
    while stack:
        n = stack.pop()
        if n in seen:
            continue
        seen.add(n)
        stack.extend(n.all_input_nodes)
    return seen


def _is_tensor_node(n):
    return isinstance(n.meta.get("val"), Tensor)


def _order(joint, nodes):
    index = {n: i for i, n in enumerate(joint.graph.nodes)}
    return sorted(set(nodes), key=index.__getitem__)


def _saved_to_graphs(joint, saved, num_fwd_outputs):
    primals, tangents = _placeholders(joint)
    fwd_outs, bwd_outs = _split_outputs(joint, num_fwd_outputs)
    saved = _order(joint, saved)
    fw = _extract(joint, primals, list(fwd_outs) + saved, "GraphModule")
    bw = _extract(joint, saved + tangents, bwd_outs, "GraphModule")
    fw.meta = {"saved": [n.name for n in saved]}
    return fw, bw


def default_partition(joint_module, _joint_inputs=None, *, num_fwd_outputs):
    """Save every forward value the backward uses (PyTorch's default partitioner): the
    forward graph computes exactly the forward outputs; any joint node outside it that does not
    need the tangents is computed in backward from saved forward values."""
    primals, _ = _placeholders(joint_module)
    fwd_outs, _ = _split_outputs(joint_module, num_fwd_outputs)
    forward = _ancestors(fwd_outs) | set(primals)
    saved = []
    for n in joint_module.graph.nodes:
        if n not in forward or n.op == "output":
            continue
        if not any(u not in forward and u.op != "output" for u in n.users):
            continue
        if _is_tensor_node(n) or n.op == "placeholder":
            saved.append(n)
        else:  # a tuple of tensors cannot be saved: save the pieces only backward reads
            saved.extend(u for u in n.users if u.target is operator.getitem
                         and u not in forward and u.users)
    return _saved_to_graphs(joint_module, saved, num_fwd_outputs)


_RANDOM = {"native_dropout", "rand", "randn", "rand_like", "randn_like", "randint", "randperm",
           "bernoulli", "normal", "uniform", "multinomial", "randint_like", "exponential",
           "poisson", "dropout"}
_CHEAP = {"view", "permute", "expand", "alias", "squeeze", "unsqueeze", "slice", "select",
          "full", "full_like", "scalar_tensor", "arange", "_to_copy", "clone", "where",
          "empty", "empty_strided", "reshape", "split_with_sizes", "cat", "t", "transpose",
          "_unsafe_view", "fill", "zeros", "ones", "iota"}


def _ban_recompute(n):
    """Nodes the min-cut partitioner must not recompute in backward: random ops (their
    masks must be the forward's), matmuls/convolutions/reductions (expensive), custom ops."""
    if n.op != "call_function":
        return n.op == "placeholder"
    t = n.target
    if t is operator.getitem:
        return False
    if not hasattr(t, "_schema"):
        return True
    name = t._schema.base_name
    if name in _RANDOM or "nondeterministic_seeded" in t.tags:
        return True
    if t.namespace != "aten":
        return True
    return not ("pointwise" in t.tags or name in _CHEAP)


def _nbytes(n):
    v = n.meta.get("val")
    if isinstance(v, Tensor):
        return max(v.numel() * v.element_size(), 1)
    return None


def min_cut_rematerialization_partition(joint_module, _joint_inputs=None, compiler="inductor",
                                        *, num_fwd_outputs, recomputable_ops=None):
    """Save the cheapest set of values (bytes) that separates forward from backward, letting
    backward recompute cheap pointwise chains from it (PyTorch's min-cut partitioner; the cut
    is a max-flow over ``scipy.sparse.csgraph.maximum_flow``)."""
    import numpy as np
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import maximum_flow

    joint = joint_module
    primals, tangents = _placeholders(joint)
    fwd_outs, bwd_outs = _split_outputs(joint, num_fwd_outputs)
    fwd_out_nodes = {o for o in fwd_outs if isinstance(o, Node)}
    required_fw = _ancestors(fwd_outs) | set(primals)
    required_bw = set()
    for n in joint.graph.nodes:
        if n in tangents or any(a in required_bw for a in n.all_input_nodes):
            if n.op != "output":
                required_bw.add(n)
    required_bw.update(o for o in bwd_outs if isinstance(o, Node) and o.op != "output")
    # only nodes that backward (transitively) needs matter
    needed_by_bw = _ancestors([o for o in bwd_outs if isinstance(o, Node)])

    INF = 2 ** 31 - 1  # scipy's max-flow takes int32 capacities
    ids = {"source": 0, "sink": 1}

    def vid(name):
        if name not in ids:
            ids[name] = len(ids)
        return ids[name]
    edges = {}

    def edge(u, v, cap):
        key = (vid(u), vid(v))
        edges[key] = min(INF, edges.get(key, 0) + cap) if cap < INF else INF

    for n in joint.graph.nodes:
        if n.op == "output" or n not in needed_by_bw:
            continue
        if n in required_bw:
            edge(n.name + "_in", "sink", INF)
            continue
        if n.op == "placeholder" or (_ban_recompute(n) and n in required_fw) or \
                (_ban_recompute(n) and n.op == "call_function"):
            edge("source", n.name + "_in", INF)
        w = _nbytes(n)
        if w is not None and n.op != "placeholder" and n not in fwd_out_nodes:
            # graph inputs and forward outputs are in memory anyway: on a tie, save one of
            # them rather than a new value
            w += w // 10
        edge(n.name + "_in", n.name + "_out", INF if w is None else min(w, INF - 1))
        for u in n.users:
            if u.op != "output" and u in needed_by_bw:
                edge(n.name + "_out", u.name + "_in", INF)
    size = len(ids)
    rows, cols, caps = [], [], []
    for (u, v), c in edges.items():
        rows.append(u)
        cols.append(v)
        caps.append(c)
    mat = csr_matrix((np.array(caps, dtype=np.int32), (rows, cols)), shape=(size, size))
    flow = maximum_flow(mat, 0, 1)
    # the source side of the cut: vertices reachable in the residual graph (scipy's flow is
    # skew-symmetric, so capacity minus flow also holds the reverse edges' residuals)
    residual = (mat - flow.flow).tocsr()
    reach = {0}
    stack = [0]
    while stack:
        u = stack.pop()
        start, end = residual.indptr[u], residual.indptr[u + 1]
        for v, c in zip(residual.indices[start:end], residual.data[start:end]):
            if c > 0 and v not in reach:
                reach.add(int(v))
                stack.append(int(v))
    by_name = {n.name: n for n in joint.graph.nodes}
    saved = []
    for (u, v), _c in edges.items():
        if u in reach and v not in reach:
            names = {i: k for k, i in ids.items()}
            un, vn = names[u], names[v]
            if not (un.endswith("_in") and vn.endswith("_out") and un[:-3] == vn[:-4]):
                raise RuntimeError(f"min-cut partition cut an infinite edge {un} -> {vn}")
            saved.append(by_name[un[:-3]])
    return _saved_to_graphs(joint, saved, num_fwd_outputs)


def saved_tensor_bytes(fw_module):
    """Bytes of the values a forward graph returns for backward (its ``meta['saved']``)."""
    saved = set(getattr(fw_module, "meta", {}).get("saved", ()))
    total = 0
    out = next(n for n in fw_module.graph.nodes if n.op == "output")
    for n in out.args[0]:
        if isinstance(n, Node) and n.name in saved:
            total += _nbytes(n) or 0
    return total


# ---------------------------------------------------------------------------------------------
# compiling one signature

class _Compiled:
    """Everything traced and compiled for one input signature."""

    def __init__(self, flat_fn, inputs, config):
        self.config = config
        t0 = time.perf_counter()
        self._build(flat_fn, inputs)
        self.trace_seconds = time.perf_counter() - t0

    @_rng_preserved
    def _build(self, flat_fn, inputs):
        from .. import is_grad_enabled
        cfg = self.config
        decomps = cfg["decompositions"] or {}
        n_in = len(inputs)
        self.n_in = n_in
        # 1. metadata: forward alone, functionalized
        trace = functools.partial(make_fx, decomposition_table=decomps, tracing_mode="fake",
                                  _allow_non_fake_inputs=True)
        # Non-leaf inputs that require grad trace as leaves: which of them the function
        # mutates is learnt with them detached, and the outputs' metadata from a trace that
        # mutates clones of those (as the joint graph below does).
        nonleaf = [i for i, x in enumerate(inputs) if isinstance(x, Tensor) and
                   x.requires_grad and not x.is_leaf] if is_grad_enabled() else []
        mutated_nonleaf = []
        if nonleaf:
            detached = [x.detach() if i in nonleaf else x for i, x in enumerate(inputs)]
            _, probe = functionalize_graph(trace(flat_fn)(*detached), epilogue=False)
            mutated_nonleaf = [i for i in probe.mutated_inputs if i in nonleaf]
        if mutated_nonleaf:
            def cloned_fn(*xs):
                return flat_fn(*[x.clone() if i in mutated_nonleaf else x
                                 for i, x in enumerate(xs)])
            fw_only = trace(cloned_fn)(*inputs)
            info = probe
        else:
            fw_only = trace(flat_fn)(*inputs)
            info = None
        out_node = next(n for n in fw_only.graph.nodes if n.op == "output")
        out_vals = [a.meta.get("val") if isinstance(a, Node) else a
                    for a in pytree.tree_flatten(out_node.args[0])[0]]
        self.out_spec = pytree.tree_flatten(_plain(out_node.args[0]))[1]
        if info is None:
            _, info = functionalize_graph(fw_only, epilogue=False)
        self.mutated = list(info.mutated_inputs)
        self.output_aliases = info.output_aliases
        self.n_out = len(out_vals)
        # a mutated input that requires grad (a non-leaf: a leaf raises eager's error) gets its
        # new value as a differentiable forward output, copied into it with autograd on, so it
        # ends with eager's CopyBackwards history (PyTorch's treatment)
        self.mutated_grad = []
        for i in self.mutated:
            if isinstance(inputs[i], Tensor) and inputs[i].requires_grad and is_grad_enabled():
                if inputs[i].is_leaf:
                    raise RuntimeError("a leaf Variable that requires grad is being used in "
                                       "an in-place operation.")
                self.mutated_grad.append(i)
        self.mutated_meta = {i: (tuple(inputs[i].shape), inputs[i].dtype, inputs[i].device)
                             for i in self.mutated_grad}
        self.out_requires_grad = [isinstance(v, Tensor) and v.requires_grad for v in out_vals]
        self.out_is_tensor = [isinstance(v, Tensor) for v in out_vals]
        # per call, only the outputs that are regenerated as views of an input are looked at
        # (with the conjugate and negative bits the traced view flipped: the compiled graph's
        # buffers hold values, so its output has none)
        self.alias_outputs = [(k, src, (out_vals[k]._keyset ^ inputs[src]._keyset) & _MATH_BITS)
                              for k, src in enumerate(self.output_aliases)
                              if src is not None and self.out_is_tensor[k]
                              and not self.out_requires_grad[k]]
        self.unflatten = _unflattener(self.out_spec)
        self.needs_autograd = is_grad_enabled() and any(
            isinstance(x, Tensor) and x.requires_grad for x in inputs) and \
            (any(self.out_requires_grad) or bool(self.mutated_grad))
        if not self.needs_autograd:
            gm, _ = _to_functional(fw_only, decomps)
            _log("aot_graphs", "Forward graph (inference)", gm)
            self.fw_module = gm
            compiler = cfg["inference_compiler"] or cfg["fw_compiler"]
            self.fw = compiler(gm, _placeholder_inputs(gm))
            return
        # 2. joint graph
        grad_inputs = [i for i, x in enumerate(inputs)
                       if isinstance(x, Tensor) and x.requires_grad]
        diff_outs = [i for i, r in enumerate(self.out_requires_grad) if r]
        self.grad_inputs, self.diff_outs = grad_inputs, diff_outs
        mutated_grad = self.mutated_grad
        tangents = [_tangent_like(out_vals[i]) for i in diff_outs] + \
            [_tangent_like(inputs[i]) for i in mutated_grad]
        grad_present = {}

        def joint(primals, tangents):
            # the function mutates clones of the inputs that require grad, whose final values
            # are differentiable outputs like the others
            args = list(primals)
            for i in mutated_grad:
                args[i] = primals[i].clone()
            outs = pytree.tree_flatten(flat_fn(*args))[0]
            diff = [outs[i] for i in diff_outs] + [args[i] for i in mutated_grad]
            grads = _autograd.grad(diff, [primals[i] for i in grad_inputs], tangents,
                                   allow_unused=True)
            present = [g is not None for g in grads]
            grad_present["mask"] = present
            return list(outs) + [args[i] for i in mutated_grad], \
                [g for g in grads if g is not None]
        joint_gm = make_fx(joint, decomposition_table=decomps, tracing_mode="fake",
                           _allow_non_fake_inputs=True)(list(inputs), tangents)
        _log("aot_joint_graph", "Joint graph", joint_gm)
        self.grad_present = grad_present["mask"]
        fjoint, jinfo = _to_functional(joint_gm, decomps)
        # forward outputs: user outputs, then mutated inputs' new values; then the gradients
        n_grads = sum(self.grad_present)
        out = next(n for n in fjoint.graph.nodes if n.op == "output")
        flat = list(out.args[0])
        n_user = self.n_out + len(mutated_grad)
        user, grads, tail = flat[:self.n_out], flat[n_user:n_user + n_grads], \
            flat[n_user + n_grads:]
        # the new values of the mutated inputs, in self.mutated's order: the clones' from the
        # joint's outputs, the others' from functionalization's extra outputs
        new_vals = dict(zip(mutated_grad, flat[self.n_out:n_user]))
        new_vals.update(zip(jinfo.mutated_inputs, tail))
        mut = [new_vals[i] for i in self.mutated]
        out.args = (tuple(user + mut + grads),)
        fjoint.recompile()
        num_fwd = self.n_out + len(mut)
        # the forward outputs marked non-differentiable (of those that are tensors at run time)
        diff_mut = {self.n_out + self.mutated.index(i) for i in mutated_grad}
        self.non_diff = [k for k in range(num_fwd) if k not in diff_mut and
                         (k >= self.n_out or not self.out_requires_grad[k])]
        fjoint.meta = {"num_fwd_outputs": num_fwd}
        self.joint_module = fjoint
        # 3. partition
        fw_gm, bw_gm = cfg["partition_fn"](fjoint, None, num_fwd_outputs=num_fwd)
        self.fw_module, self.bw_module = fw_gm, bw_gm
        self.num_fwd = num_fwd
        _log("aot_graphs", "Forward graph", fw_gm)
        _log("aot_graphs", "Backward graph", bw_gm)
        self.fw = cfg["fw_compiler"](fw_gm, _placeholder_inputs(fw_gm))
        self.bw = cfg["bw_compiler"](bw_gm, _placeholder_inputs(bw_gm))

    # -- running --------------------------------------------------------------------------------
    def __call__(self, inputs):
        from .. import no_grad
        if not self.needs_autograd:
            with no_grad():
                outs = list(_call(self.fw, inputs))
            user, mut = outs[:self.n_out], outs[self.n_out:]
        else:
            outs = _CompiledFunction.apply(self, *inputs)
            user, mut = list(outs[:self.n_out]), list(outs[self.n_out:self.num_fwd])
        for i, v in zip(self.mutated, mut):
            if inputs[i] is not v:
                if i in self.mutated_grad and self.needs_autograd:
                    inputs[i].copy_(v)  # recorded: the input's history is CopyBackwards
                else:
                    with no_grad():
                        inputs[i].copy_(v)
        for k, src, flips in self.alias_outputs:
            # an output that is a view of an input is regenerated as a view of the input,
            # detached when the input requires grad (these outputs do not: `x.detach()`), as
            # PyTorch's gen_alias_from_base
            if isinstance(user[k], Tensor):
                o = user[k]
                v = inputs[src].as_strided(o.size(), o.stride(), o.storage_offset())
                if v.requires_grad:
                    v = v.detach()
                if flips & CONJUGATE:
                    v = v._conj()
                if flips & NEGATIVE:
                    v = v._neg_view()
                user[k] = v
        return self.unflatten(user)


_MATH_BITS = CONJUGATE | NEGATIVE


def _unflattener(spec):
    """``leaves -> tree`` of ``spec``: pytree's, or for the usual output structures (one leaf,
    a tuple or list of leaves) the container built directly (it runs on every call)."""
    if spec.is_leaf():
        return operator.itemgetter(0)
    if spec.type in (tuple, list) and all(c.is_leaf() for c in spec.children()):
        return spec.type
    return lambda leaves: pytree.tree_unflatten(leaves, spec)


def _plain(x):
    """fx's immutable containers back as the dicts and lists the function returned."""
    if isinstance(x, dict):
        return {k: _plain(v) for k, v in x.items()}
    if isinstance(x, list):
        return [_plain(v) for v in x]
    if isinstance(x, tuple) and not hasattr(x, "_fields"):
        return tuple(_plain(v) for v in x)
    return x


def _tangent_like(v):
    from .. import empty
    return empty(tuple(v.shape), dtype=v.dtype, device=v.device)


def _call(compiled, args):
    if getattr(compiled, "_boxed_call", False):
        return compiled(list(args))
    return compiled(*args)


class _CompiledFunction(_autograd.Function):
    """The runtime wrapper: forward runs the compiled forward graph and saves what backward
    reads; backward runs the compiled backward graph."""

    @staticmethod
    def forward(ctx, compiled, *inputs):
        outs = list(_call(compiled.fw, inputs))
        nf = compiled.num_fwd
        fwd, saved = outs[:nf], outs[nf:]
        ctx.compiled = compiled
        # an input about to be overwritten by its new value is saved as it is now
        if compiled.mutated:
            for k, v in enumerate(saved):
                if any(v is inputs[i] for i in compiled.mutated):
                    saved[k] = v.detach().clone()
        ctx.save_for_backward(*[s for s in saved if isinstance(s, Tensor)])
        ctx.saved_extra = [s for s in saved if not isinstance(s, Tensor)]
        non_diff = [fwd[k] for k in compiled.non_diff if isinstance(fwd[k], Tensor)]
        if non_diff:
            ctx.mark_non_differentiable(*non_diff)
        return tuple(fwd)

    @staticmethod
    def backward(ctx, *grad_outputs):
        compiled = ctx.compiled
        if _tls.state.grad_enabled:
            raise RuntimeError("torch.compile with aot_autograd does not currently support "
                               "double backward")
        tangents = []
        for i in compiled.diff_outs:
            g = grad_outputs[i]
            if g is None:
                from .. import zeros_like
                g = zeros_like(compiled_out_val(compiled, i))
            tangents.append(_contiguous(g))
        for i in compiled.mutated_grad:  # the new values of mutated inputs
            k = compiled.n_out + compiled.mutated.index(i)
            g = grad_outputs[k]
            if g is None:
                from .. import zeros
                shape, dtype, device = compiled.mutated_meta[i]
                g = zeros(shape, dtype=dtype, device=device)
            tangents.append(_contiguous(g))
        grads = list(_call(compiled.bw, list(ctx.saved_tensors) + tangents))
        result = [None] * compiled.n_in
        it = iter(grads)
        for i, present in zip(compiled.grad_inputs, compiled.grad_present):
            if present:
                result[i] = next(it)
        return (None,) + tuple(result)


def _contiguous(g):
    """``g.contiguous()``; a plain tensor that already is one is returned without the call."""
    if g.__class__ is Tensor and _st.is_contiguous(g._size, g._stride):
        return g
    return g.contiguous()


def compiled_out_val(compiled, i):
    out = next(n for n in compiled.fw_module.graph.nodes if n.op == "output")
    return out.args[0][i].meta["val"]


# ---------------------------------------------------------------------------------------------
# the entry points

def _signature(flat):
    """What a traced graph depends on besides the argument structure: grad mode, the autocast
    state (a graph traced under autocast holds its casts) and each leaf's metadata. Read from
    the state objects directly: this runs on every call of a compiled function."""
    state, autocast = _tls.state, _autocast_mode.state
    key = [state.grad_enabled, state.excluded & AUTOCAST_BITS, autocast.dtype["cpu"],
           autocast.dtype["cuda"]]
    for x in flat:
        if isinstance(x, Tensor):
            key.append((tuple(x._size), tuple(x._stride), x._dtype, x._device,
                        x._requires_grad))
        else:
            key.append(("V", repr(x)))
    return tuple(key)


# argument types the per-call fast path of aot_function takes as leaves without tree_flatten
_LEAF_TYPES = (int, float, bool, type(None))


def aot_function(fn, fw_compiler, bw_compiler=None, partition_fn=default_partition,
                 decompositions=None, num_params_buffers=0, keep_inference_input_mutations=False,
                 inference_compiler=None, *, dynamic=False, enable_log=True):
    """``fn`` traced ahead of time into forward and backward graphs compiled by
    ``fw_compiler``/``bw_compiler`` (see the module docstring). Retraces when the inputs'
    shapes, dtypes, strides or requires_grad change, or non-tensor arguments do."""
    config = {"fw_compiler": fw_compiler, "bw_compiler": bw_compiler or fw_compiler,
              "partition_fn": partition_fn, "decompositions": decompositions,
              "inference_compiler": inference_compiler}
    cache = {}

    @functools.wraps(fn)
    def returned(*args, **kwargs):
        if not kwargs and args and type(args[0]) is list and all(
                isinstance(a, Tensor) or type(a) in _LEAF_TYPES
                for part in (args[0], args[1:]) for a in part):
            # aot_module_simplified's call, (params, *tensors): the structure is its two
            # lengths, and the leaves are the arguments themselves
            leaves, spec = args[0] + list(args[1:]), None
            structure = (len(args[0]), len(args))
        else:
            leaves, spec = pytree.tree_flatten((args, kwargs))
            structure = repr(spec)
        tensor_idx = [i for i, x in enumerate(leaves) if isinstance(x, Tensor)]
        # the same tensor passed twice (tied weights) is one graph input (PyTorch's
        # remove_dupe_args): its gradient then sums both uses
        first, slot, inputs = {}, [], []
        for i in tensor_idx:
            x = leaves[i]
            k = first.get(id(x))
            if k is None:
                k = first[id(x)] = len(inputs)
                inputs.append(x)
            slot.append(k)
        key = (structure, _signature(leaves), tuple(slot))
        compiled = cache.get(key)
        if compiled is None:
            if spec is None:
                leaves, spec = pytree.tree_flatten((args, kwargs))
            def flat_fn(*tensors):
                vals = list(leaves)
                for i, k in zip(tensor_idx, slot):
                    vals[i] = tensors[k]
                a, k = pytree.tree_unflatten(vals, spec)
                return fn(*a, **k)
            compiled = _Compiled(flat_fn, inputs, config)
            cache[key] = compiled
        return compiled(inputs)
    returned._aot_cache = cache
    return returned


def _functional_module_fn(mod):
    from ..func import functional_call
    names = [n for n, _ in mod.named_parameters(remove_duplicate=False)] + \
        [n for n, _ in mod.named_buffers(remove_duplicate=False)]

    def fn(state, *args, **kwargs):
        return functional_call(mod, dict(zip(names, state)), args, kwargs)
    return names, fn


def aot_module(mod, *args, **kwargs):
    """``mod`` as a module whose forward runs through :func:`aot_function`; its parameters and
    buffers are graph inputs (so buffer updates, e.g. BatchNorm statistics, reach it)."""
    from ..nn import Module
    names, fn = _functional_module_fn(mod)
    compiled_fn = aot_function(fn, *args, **kwargs)

    class AOTModule(Module):
        def __init__(self):
            super().__init__()
            self.orig_module = mod

        def forward(self, *a, **k):
            state = [t for _, t in mod.named_parameters(remove_duplicate=False)] + \
                [t for _, t in mod.named_buffers(remove_duplicate=False)]
            return compiled_fn(state, *a, **k)
    del names
    return AOTModule()


def aot_module_simplified(mod, args, fw_compiler, bw_compiler=None,
                          partition_fn=default_partition, decompositions=None,
                          keep_inference_input_mutations=False, inference_compiler=None,
                          cudagraphs=None, **_ignored):
    """What ``torch.compile`` backends call: ``mod`` (a GraphModule from Dynamo) with its
    parameters and buffers lifted to inputs; returns a callable over the user inputs (the
    same positional arguments as ``args``)."""
    params = [t for _, t in mod.named_parameters(remove_duplicate=False)] + \
        [t for _, t in mod.named_buffers(remove_duplicate=False)]
    names, fn = _functional_module_fn(mod)
    del names
    compiled_fn = aot_function(fn, fw_compiler, bw_compiler, partition_fn, decompositions,
                               inference_compiler=inference_compiler)

    def forward(*runtime_args):
        if len(runtime_args) == 1 and isinstance(runtime_args[0], list) and \
                not isinstance(args, list):
            runtime_args = tuple(runtime_args[0])
        return compiled_fn(params, *runtime_args)
    forward.zero_grad = getattr(mod, "zero_grad", None)
    forward.named_parameters = getattr(mod, "named_parameters", None)
    forward._aot_compiled = compiled_fn
    return forward


def aot_autograd(**kwargs):
    """A ``torch.compile`` backend ``(gm, example_inputs) -> callable`` built on
    :func:`aot_module_simplified` with the given ``fw_compiler``, ``bw_compiler``,
    ``partition_fn``, ``decompositions`` (what ``torch._dynamo.backends.common.aot_autograd``
    returns)."""
    def backend(gm, example_inputs):
        kw = dict(kwargs)
        kw.setdefault("bw_compiler", kw.get("fw_compiler"))
        return aot_module_simplified(gm, example_inputs, **kw)
    backend.kwargs = kwargs
    return backend


def _aot_eager_decomp_partition(gm, example_inputs):
    from .._decomp import core_aten_decompositions
    return aot_module_simplified(gm, example_inputs, fw_compiler=nop, bw_compiler=nop,
                                 decompositions=core_aten_decompositions(),
                                 partition_fn=min_cut_rematerialization_partition)


# The backends ``torch.compile(backend="aot_eager")`` and ``"aot_eager_decomp_partition"``
# name (Dynamo's registry wires these): graphs run as traced; the second one lowers to core
# ATen and uses the min-cut partitioner.
aot_eager = aot_autograd(fw_compiler=nop)
aot_eager_decomp_partition = _aot_eager_decomp_partition
