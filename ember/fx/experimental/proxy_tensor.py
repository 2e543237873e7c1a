"""``make_fx``: record the aten-level graph of a function, as the dispatcher runs it.

Where ``symbolic_trace`` runs the program on Proxies at the Python level, ``make_fx`` runs it
on real tensors (``tracing_mode="real"``) or FakeTensors (``"fake"``) with a
:class:`ProxyTorchDispatchMode` on the dispatch-mode stack. Every operator call reaches the
dispatcher's Python key after autograd and the composite decompositions have run, so the mode
sees the OpOverloads that actually execute (``aten.add.Tensor``, ``aten._softmax.default``);
it runs each one (on the next mode down, or the kernels), and records a ``call_function`` node
whose arguments are the nodes that produced the input tensors. Each tensor is tracked by
identity, so an in-place op makes its result node the tensor's producer from then on. Tensors
the graph did not produce (captured constants, module parameters) become ``get_attr`` nodes on
attributes ``_tensor_constant<N>`` / ``_param_constant<N>`` of the returned GraphModule.

``tracing_mode="symbolic"`` runs on FakeTensors whose sizes are SymInts of one ShapeEnv
(``s0``, ``s1``, ...; 0/1 specialised, duck-sized). A symbolic size is a graph value too: the
first use of a size of a traced tensor records ``aten.sym_size.int(t, dim)``, and arithmetic on
SymInts in the traced program (``x.size(0) * 2``) records ``operator`` nodes, so the graph
computes sizes from its inputs and runs for any sizes the ShapeEnv's guards allow
(``gm.shape_env``).
"""
import inspect

from ..._core.symint import SymInt
from ..._tensor import Tensor
from ...nn import Module, Parameter
from ...utils import _pytree as pytree
from ...utils._python_dispatch import TorchDispatchMode, _get_current_dispatch_mode_stack
from .._symbolic_trace import Tracer
from ..graph import Graph
from ..graph_module import GraphModule
from ..proxy import Proxy

__all__ = ["make_fx", "ProxyTorchDispatchMode", "PythonKeyTracer", "get_isolated_graphmodule",
           "get_proxy_mode"]


class PythonKeyTracer(Tracer):
    """The tracer ``make_fx`` records into: tensors that are not produced by the graph become
    constants on its root module; every module is a leaf (no module calls are recorded:
    the ops inside them are)."""

    def __init__(self):
        super().__init__(autowrap_modules=())
        self.tensor_tracker = {}  # id(tensor) -> (tensor, Proxy of the node that produced it)
        self.storage_tracker = {}  # (id(storage), sizes, strides, offset) -> (tensor, Proxy)
        self.constant_attrs = {}  # id(tensor) -> (tensor, get_attr name)
        self.sym_tracker = {}  # sympy expr of a SymInt -> its Proxy, or a thunk making it

    def proxy_for(self, t):
        hit = self.tensor_tracker.get(id(t))
        if hit is not None and hit[0] is t:
            return hit[1]
        # another Python object for the same tensor (autograd unpacks a saved output as a new
        # object over the same storage and geometry): the same graph value
        hit = self.storage_tracker.get(_geometry_key(t))
        if hit is not None and hit[0]._dtype is t._dtype:
            return hit[1]
        return None

    def track(self, t, proxy):
        self.tensor_tracker[id(t)] = (t, proxy)
        self.storage_tracker[_geometry_key(t)] = (t, proxy)
        for i, s in enumerate(t._size):
            if isinstance(s, SymInt) and s.node.expr not in self.sym_tracker:
                # made on first use only: unused sizes leave no sym_size node
                self.sym_tracker[s.node.expr] = _SizeThunk(self, proxy, i, s)

    def sym_proxy(self, s):
        """The Proxy computing SymInt ``s`` in the graph."""
        hit = self.sym_tracker.get(s.node.expr)
        if hit is None:
            raise RuntimeError(f"make_fx: the symbolic value {s} was computed outside the "
                               f"traced program (no graph value produces it)")
        if isinstance(hit, _SizeThunk):
            hit = self.sym_tracker[s.node.expr] = hit.force()
        return hit

    def trace_sym_op(self, op, args, result):
        """Record SymInt arithmetic of the traced program (``x.size(0) * 2``)."""
        pargs = tuple(self.sym_proxy(a) if isinstance(a, SymInt) else a for a in args)
        proxy = self.create_proxy("call_function", op, pargs, {})
        proxy.node.meta["val"] = result
        self.sym_tracker.setdefault(result.node.expr, proxy)


    def constant(self, t, real=None):
        """A ``get_attr`` proxy for a tensor the graph did not produce (stored on the root:
        ``real`` when ``t`` is its FakeTensor)."""
        hit = self.constant_attrs.get(id(t))
        if hit is not None and hit[0] is t:
            return self.proxy(self.create_node("get_attr", hit[1], (), {}))
        prefix = "_param_constant" if isinstance(t, Parameter) else "_tensor_constant"
        name = self.get_fresh_qualname(prefix)
        setattr(self.root, name, real if real is not None else t)
        self.constant_attrs[id(t)] = (t, name)
        return self.proxy(self.create_node("get_attr", name, (), {}))


class _SizeThunk:
    """A size of a traced tensor, recorded as ``aten.sym_size.int(t, dim)`` when first used."""

    def __init__(self, tracer, proxy, dim, val):
        self.tracer, self.proxy, self.dim, self.val = tracer, proxy, dim, val

    def force(self):
        from ..._ops.overload import ops
        p = self.tracer.create_proxy("call_function", ops.aten.sym_size.int,
                                     (self.proxy, self.dim), {}, name="sym_size_int")
        p.node.meta["val"] = self.val
        return p


def _geometry_key(t):
    # (a view's offset may be symbolic too: a recurrent layer's per-step slices)
    return (id(t._storage), _hashable(t._size), _hashable(t._stride), _hashable((t._offset,)),
            t._dtype)


def _hashable(xs):
    """Sizes/strides as a hashable key (a SymInt by its expression)."""
    return tuple(x.node.expr if isinstance(x, SymInt) else x for x in xs)


def _snapshot(val, fake_mode):
    """What ``meta['val']`` keeps for a value: a FakeTensor (metadata, no data) for tensors."""
    from ..._subclasses.fake_tensor import FakeTensor
    if isinstance(val, FakeTensor):
        return val
    if isinstance(val, Tensor):
        fake = fake_mode.from_tensor(val)
        fake_mode._memo.pop(id(val), None)  # a later in-place op may change val's metadata
        return fake
    if isinstance(val, (tuple, list)):
        return type(val)(_snapshot(v, fake_mode) for v in val) \
            if not hasattr(val, "_fields") else val
    return val


def _set_meta(proxy, val, fake_mode):
    from ..passes.shape_prop import _extract_tensor_metadata
    node = proxy.node
    node.meta["val"] = _snapshot(val, fake_mode)
    if isinstance(val, Tensor):
        # contiguity queries on symbolic strides would add guards: left out for those
        node.meta["tensor_meta"] = _extract_tensor_metadata(
            val, include_contiguity=not any(isinstance(s, SymInt) for s in val._size))


class ProxyTorchDispatchMode(TorchDispatchMode):
    """Runs each op and records it in ``tracer.graph``; see the module docstring."""

    def __init__(self, tracer, tracing_mode, pre_dispatch=False, decomposition_table=None,
                 fake_mode=None, meta_mode=None):
        super().__init__()
        self.tracer = tracer
        self.tracing_mode = tracing_mode
        self.pre_dispatch = pre_dispatch
        self.decomposition_table = decomposition_table or {}
        self.fake_mode = fake_mode  # set in fake mode: constants are converted with it
        self.meta_mode = meta_mode  # makes meta['val'] snapshots of real tensors

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        decomposition = self.decomposition_table.get(func)
        if decomposition is not None:
            with self:  # the ops of the decomposition are recorded in its place
                return decomposition(*args, **kwargs)
        tracer = self.tracer

        # arguments as graph values: the producing node, or a constant get_attr
        def to_proxy(x):
            if isinstance(x, SymInt):
                return tracer.sym_proxy(x)
            if not isinstance(x, Tensor):
                return x
            p = tracer.proxy_for(x)
            if p is not None:
                return p
            if self.fake_mode is not None and not _is_fake(x):
                fake = self.fake_mode.from_tensor(x, static_shapes=True)
                p = tracer.constant(fake, real=x)
                tracer.track(fake, p)
                _set_meta(p, fake, self.meta_mode)
                return p
            p = tracer.constant(x)
            tracer.track(x, p)
            _set_meta(p, x, self.meta_mode)
            return p
        proxy_args = pytree.tree_map(to_proxy, _lists_as_lists(func, args))
        proxy_kwargs = pytree.tree_map(to_proxy, kwargs)

        if self.fake_mode is not None:  # real constants run as their FakeTensors
            def to_fake(x):
                if isinstance(x, Tensor) and not _is_fake(x):
                    return self.fake_mode.from_tensor(x, static_shapes=True)
                return x
            args = pytree.tree_map(to_fake, args)
            kwargs = pytree.tree_map(to_fake, kwargs)

        out = _run_untraced_sym(func, args, kwargs)

        name = tracer.graph._target_to_str(func.overloadpacket.__name__)
        proxy_out = tracer.create_proxy("call_function", func, proxy_args, proxy_kwargs,
                                        name=name)
        self._track_outputs(out, proxy_out)
        return out

    def _track_outputs(self, out, proxy_out):
        tracer = self.tracer
        _set_meta(proxy_out, out, self.meta_mode)
        if isinstance(out, Tensor):
            tracer.track(out, proxy_out)
        elif isinstance(out, (tuple, list)):
            for i, o in enumerate(out):
                if isinstance(o, Tensor):
                    item = proxy_out[i]
                    _set_meta(item, o, self.meta_mode)
                    tracer.track(o, item)
                elif isinstance(o, (tuple, list)):  # Tensor[] inside a tuple
                    item = proxy_out[i]
                    for j, oo in enumerate(o):
                        if isinstance(oo, Tensor):
                            inner = item[j]
                            _set_meta(inner, oo, self.meta_mode)
                            tracer.track(oo, inner)


def get_proxy_mode():
    """The active :class:`ProxyTorchDispatchMode` (a ``make_fx`` trace in progress), or None."""
    for mode in reversed(_get_current_dispatch_mode_stack()):
        if isinstance(mode, ProxyTorchDispatchMode):
            return mode
    return None


def _run_untraced_sym(func, args, kwargs):
    """Run an op with SymInt tracing off: a kernel's size arithmetic is not the program's."""
    from ..._core import symint
    saved = symint._trace_hooks[:]
    symint._trace_hooks.clear()
    try:
        return func(*args, **kwargs)
    finally:
        symint._trace_hooks[:] = saved


def _lists_as_lists(func, args):
    """List-typed schema arguments as Python lists (``[0]``, not ``(0,)``), as PyTorch's
    argument parser hands them to the mode."""
    schema_args = func._schema.arguments
    return tuple(list(a) if i < len(schema_args) and schema_args[i].is_list
                 and isinstance(a, tuple) else a for i, a in enumerate(args))


def _is_fake(t):
    from ..._subclasses.fake_tensor import FakeTensor
    return isinstance(t, FakeTensor)


def _detect_fake_mode(args):
    """The FakeTensorMode of the FakeTensors among ``args`` (None when there are none)."""
    for leaf in pytree.tree_leaves(args):
        if _is_fake(leaf):
            return leaf.fake_mode
    return None


def _arg_names(f, n):
    """Names of the placeholders' groups: the function's positional parameters, ``arg<i>``
    for values passed to ``*args`` (and for modules and other callables)."""
    fn = inspect.unwrap(f)
    code = getattr(fn, "__code__", None)
    if code is None:
        return [f"arg{i}" for i in range(n)]
    names = list(code.co_varnames[:code.co_argcount])
    if inspect.ismethod(f):
        names = names[1:]
    return [names[i] if i < len(names) else f"arg{i}" for i in range(n)]


def make_fx(f, decomposition_table=None, tracing_mode="real", _allow_non_fake_inputs=False,
            *, pre_dispatch=False, record_module_stack=False, _allow_fake_constant=False,
            _error_on_data_dependent_ops=True, record_stack_traces=False):
    """``make_fx(f)(*args)`` runs ``f`` on ``args`` and returns the GraphModule of the aten
    ops it ran. ``decomposition_table`` maps OpOverloads to Python functions run (and traced)
    instead of the op. ``tracing_mode``: ``"real"`` runs on the given tensors, ``"fake"`` on
    FakeTensors made from them (no data computed), ``"symbolic"`` on FakeTensors with
    symbolic sizes (see the module docstring)."""
    if tracing_mode not in ("real", "fake", "symbolic"):
        raise AssertionError(f"Unexpected tracing type: {tracing_mode}")
    decomposition_table = dict(decomposition_table or {})

    def wrapped(*args):
        if pre_dispatch:
            raise NotImplementedError(
                "make_fx(pre_dispatch=True) needs the PreDispatch key, which ember's "
                "dispatcher does not have yet; ops are recorded after autograd")
        return _trace(f, args, decomposition_table, tracing_mode, _allow_non_fake_inputs,
                      record_stack_traces)
    return wrapped


def _trace(f, args, decomposition_table, tracing_mode, allow_non_fake_inputs,
           record_stack_traces):
    from ..._subclasses.fake_tensor import FakeTensorMode
    from ...utils._python_dispatch import _disable_current_modes
    tracer = PythonKeyTracer()
    tracer.graph = Graph(tracer_cls=PythonKeyTracer)
    tracer.root = Module()
    tracer.tensor_attrs = {}
    tracer.record_stack_traces = record_stack_traces
    from ..proxy import Scope
    tracer.scope = Scope("", None)

    # fake mode: the inputs become FakeTensors of one FakeTensorMode
    fake_mode = shape_env = None
    meta_mode = FakeTensorMode(allow_non_fake_inputs=True)
    names = _arg_names(f, len(args))
    if tracing_mode in ("fake", "symbolic"):
        # inputs already fake (export fakes them with its own symbolic sizes): their mode and
        # ShapeEnv, as PyTorch's detect_fake_mode; else a fresh mode converts them
        fake_mode = _detect_fake_mode(args)
        if fake_mode is not None:
            shape_env = fake_mode.shape_env if tracing_mode == "symbolic" else None
        else:
            if tracing_mode == "symbolic":
                from .symbolic_shapes import ShapeEnv
                shape_env = ShapeEnv()
            fake_mode = FakeTensorMode(allow_non_fake_inputs=allow_non_fake_inputs,
                                       shape_env=shape_env)
        meta_mode = fake_mode

        def to_fake(x, name):
            if isinstance(x, Tensor) and not _is_fake(x):
                from ..._dynamo.source import LocalSource
                return fake_mode.from_tensor(x, source=LocalSource(name))
            return x
        converted = []
        for name, arg in zip(names, args):
            leaves, spec = pytree.tree_flatten(arg)
            leaves = [to_fake(leaf, f"{name}_{cnt}") for cnt, leaf in enumerate(leaves, 1)]
            converted.append(pytree.tree_unflatten(leaves, spec))
        args = tuple(converted)

    # one placeholder per leaf of each argument: <name>_1, <name>_2, ... (PyTorch's names)
    for name, arg in zip(names, args):
        leaves, _ = pytree.tree_flatten(arg)
        for cnt, leaf in enumerate(leaves, start=1):
            proxy = tracer.create_proxy("placeholder", f"{name}_{cnt}", (), {})
            if isinstance(leaf, Tensor):
                tracer.track(leaf, proxy)
                _set_meta(proxy, leaf, meta_mode)
            else:
                proxy.node.meta["val"] = leaf

    mode = ProxyTorchDispatchMode(tracer, tracing_mode, decomposition_table=decomposition_table,
                                  fake_mode=fake_mode, meta_mode=meta_mode)
    from ..._core import symint
    with _disable_current_modes():
        if shape_env is not None:  # SymInt arithmetic of the program becomes graph nodes
            symint._trace_hooks.append(tracer.trace_sym_op)
        try:
            if fake_mode is not None:
                with fake_mode, mode:
                    out = f(*args)
            else:
                with mode:
                    out = f(*args)
        finally:
            if shape_env is not None:
                symint._trace_hooks.remove(tracer.trace_sym_op)

    def out_arg(x):
        if isinstance(x, Tensor):
            p = tracer.proxy_for(x)
            if p is None:
                p = tracer.constant(x)
            return p.node
        if isinstance(x, Proxy):
            return x.node
        if isinstance(x, SymInt):
            return tracer.sym_proxy(x).node
        return x
    tracer.create_node("output", "output", (pytree.tree_map(out_arg, out),), {})
    name = getattr(f, "__name__", None) or type(f).__name__
    if isinstance(f, Module):
        name = type(f).__name__
    if shape_env is not None:
        _remove_unused_sym_nodes(tracer.graph)
    gm = GraphModule(tracer.root, tracer.graph, name)
    if shape_env is not None:
        gm.shape_env = shape_env  # the guards under which the graph is valid
    return gm


def _remove_unused_sym_nodes(graph):
    """Size arithmetic the program computed but no op used (composite kernels compute sizes
    above the Python key) has no effect: removed, as PyTorch's trace removes dead code."""
    import operator
    from ..._ops.overload import ops
    pure = {ops.aten.sym_size.int, operator.add, operator.sub, operator.mul, operator.floordiv,
            operator.mod, operator.neg, operator.pow}
    for node in reversed(list(graph.nodes)):
        if node.op == "call_function" and node.target in pure and not node.users:
            graph.erase_node(node)


def get_isolated_graphmodule(func, args, kwargs, tracing_mode="real", decomposition_table=None):
    """A graph of ``func(*args, **kwargs)`` traced on its own (no outer trace interferes)."""
    from ...utils._python_dispatch import _disable_current_modes
    with _disable_current_modes():
        return make_fx(lambda *a: func(*a, **kwargs), decomposition_table=decomposition_table,
                       tracing_mode=tracing_mode)(*args)
