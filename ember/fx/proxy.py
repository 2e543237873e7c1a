"""``Proxy``: the stand-in value symbolic tracing runs a program on, and ``TracerBase``.

Every operation on a Proxy — an operator, a method call, an attribute read, an ember function
(through ``__torch_function__``) — records a Node in the tracer's graph and returns a new Proxy
for its result. What cannot be recorded raises :class:`TraceError`: using a Proxy as a Python
bool (control flow on a traced value) or iterating one of unknown length.
"""
import collections
import copy
import dis
import inspect
import operator
import sys
import traceback

from . import traceback as fx_traceback
from .graph import _MAGIC, _REFLECTABLE, Graph
from .node import Node, map_aggregate

__all__ = ["TracerBase", "GraphAppendingTracer", "TraceError", "Proxy", "Attribute",
           "ParameterProxy", "Scope", "ScopeContextManager"]


class TraceError(ValueError):
    pass


class Scope:
    """The module path and type whose ``forward`` is being traced (for ``nn_module_stack``)."""

    def __init__(self, module_path, module_type):
        self.module_path = module_path
        self.module_type = module_type


class ScopeContextManager:
    def __init__(self, scope, current_scope):
        self._prev_scope = Scope(scope.module_path, scope.module_type)
        scope.module_path = current_scope.module_path
        scope.module_type = current_scope.module_type
        self._scope = scope

    def __enter__(self):
        return self._scope

    def __exit__(self, *args):
        self._scope.module_path = self._prev_scope.module_path
        self._scope.module_type = self._prev_scope.module_type


_FX_FILES = ("ember/fx/", "ember\\fx\\")

# The node meta fields a tracer copies from fx.traceback's current meta (PyTorch's list)
_COPY_META_FIELDS = [
    "nn_module_stack", "torch_fn", "source_fn_stack", "original_aten", "recompute",
    "ac_graph_id", "has_backward_hook", "from_node", "quantization_tag",
    "_numeric_debug_handle", "custom", "partitioner_tag",
]


class TracerBase:
    graph: Graph
    record_stack_traces = False
    check_mutable_operations = False
    trace_asserts = False
    proxy_buffer_attributes = False
    traced_func_name = "forward"

    def __init__(self):
        self.scope = Scope("", None)
        self.module_stack = collections.OrderedDict()
        self.node_name_to_scope = {}

    def create_node(self, kind, target, args, kwargs, name=None, type_expr=None):
        if kind == "call_function" and self.check_mutable_operations:
            from .operator_schemas import check_for_mutable_operation
            check_for_mutable_operation(target, args, kwargs)
        node = self.graph.create_node(kind, target, args, kwargs, name, type_expr)
        self.node_name_to_scope[node.name] = (self.scope.module_path, self.scope.module_type)
        if fx_traceback.has_preserved_node_meta():
            # the metadata the context holds (a stack trace set, annotations, the node an
            # Interpreter is replaying) wins over the tracer's own module stack
            current_meta = fx_traceback.get_current_meta()
            stack_trace = current_meta.get("stack_trace")
            if stack_trace:
                node.stack_trace = stack_trace
                if fx_traceback.GRADIENT_ACC_SPECIAL_STACK in stack_trace:
                    node.meta["is_gradient_acc"] = True
                    node.meta["autograd_backward"] = True
            for field in _COPY_META_FIELDS:
                if field in current_meta:
                    node.meta[field] = copy.copy(current_meta[field])
            replay_node = fx_traceback.get_current_replay_node()
            if replay_node is not None:
                node.meta["is_functional_regenerated"] = True
                if "custom" in replay_node.meta:
                    node.meta["custom"] = replay_node.meta.get("custom")
                if "stack_trace" in replay_node.meta:
                    node.stack_trace = replay_node.meta.get("stack_trace")
            if current_meta.get("autograd_backward", False):
                node.meta["autograd_backward"] = True
        elif self.module_stack:
            node.meta["nn_module_stack"] = collections.OrderedDict(self.module_stack)
        return node

    def proxy(self, node):
        return Proxy(node, self)

    def create_proxy(self, kind, target, args, kwargs, name=None, type_expr=None,
                     proxy_factory_fn=None):
        """Record a node whose arguments are ``args``/``kwargs`` with Proxies replaced by
        their nodes, and return a Proxy for it."""
        args_ = self.create_arg(args)
        kwargs_ = self.create_arg(kwargs)
        assert isinstance(args_, tuple)
        assert isinstance(kwargs_, dict)
        node = self.create_node(kind, target, args_, kwargs_, name, type_expr)
        proxy = self.proxy(node) if proxy_factory_fn is None else proxy_factory_fn(node)
        if self.record_stack_traces and not proxy.node.stack_trace:
            proxy.node.stack_trace = _user_stack_trace()
        return proxy

    def _find_user_frame(self):
        frame = inspect.currentframe()
        while frame and any(p in frame.f_code.co_filename for p in _FX_FILES):
            frame = frame.f_back
        return frame

    def create_arg(self, a):
        """An argument as it is stored in a node: Proxies become their nodes, containers
        are walked, constants pass through."""
        if isinstance(a, Proxy):
            return a.node
        if hasattr(a, "__fx_create_arg__"):
            return a.__fx_create_arg__(self)
        if isinstance(a, tuple):
            if hasattr(a, "_fields"):
                return type(a)(*(self.create_arg(elem) for elem in a))
            return tuple(self.create_arg(elem) for elem in a)
        if isinstance(a, list):
            return [self.create_arg(elem) for elem in a]
        if isinstance(a, dict):
            r = {}
            for k, v in a.items():
                k = self.create_arg(k)

                def no_node(arg):
                    if isinstance(arg, Node):
                        raise RuntimeError(f"Keys for dictionaries used as an argument cannot "
                                           f"contain a Node. Got key: {k}")
                map_aggregate(k, no_node)
                r[k] = self.create_arg(v)
            return r
        if isinstance(a, slice):
            return slice(self.create_arg(a.start), self.create_arg(a.stop),
                         self.create_arg(a.step))
        if isinstance(a, range):
            return range(self.create_arg(a.start), self.create_arg(a.stop),
                         self.create_arg(a.step))
        if isinstance(a, Node) or a is None or a is ... or \
                isinstance(a, (str, int, float, bool, complex)) or _is_base_type(a):
            return a
        raise NotImplementedError(f"argument of type: {type(a)}")

    def to_bool(self, obj):
        raise TraceError("symbolically traced variables cannot be used as inputs to control "
                         "flow")

    def iter(self, obj):
        raise TraceError("Proxy object cannot be iterated. This can be attempted when the "
                         "Proxy is used in a loop or as a *args or **kwargs function argument. "
                         "See the torch.fx docs on pytorch.org for a more detailed explanation "
                         "of what types of control flow can be traced, and check out the Proxy "
                         "docstring for help troubleshooting Proxy iteration errors")

    def keys(self, obj):
        return Attribute(obj, "keys")()


def _is_base_type(a):
    """dtypes, devices, layouts, memory formats and other ember enums are constants."""
    from .._core.device import device, layout, memory_format
    from .._core.dtype import dtype
    return isinstance(a, (dtype, device, layout, memory_format)) or isinstance(a, type(...))


def _user_stack_trace():
    """The stack at the point of recording, without frames of ember.fx (as PyTorch's
    ``CapturedTraceback`` summary)."""
    frames = [f for f in traceback.extract_stack()
              if not any(p in f.filename for p in _FX_FILES)]
    return "".join(traceback.format_list(frames[-1:])) if frames else ""


_BARE_PROXY_REGISTERED = []


class GraphAppendingTracer(TracerBase):
    """A tracer that appends to an existing graph (for Proxies built by hand)."""

    def __init__(self, graph):
        super().__init__()
        self.graph = graph
        # Proxies built by hand (code generators such as e3nn's) live outside any trace, which
        # is what keeps Proxy in overrides._TF_ON otherwise: from now on ember functions
        # called on them must consult __torch_function__, as for a Tensor subclass defining it
        if Proxy not in _BARE_PROXY_REGISTERED:
            from .. import overrides
            overrides._TF_ON.append(Proxy)
            _BARE_PROXY_REGISTERED.append(Proxy)
        self.scope = Scope("", None)
        self.module_stack = collections.OrderedDict()
        self.node_name_to_scope = {}


class Proxy:
    """A value being traced; operations on it are recorded in ``tracer.graph``."""

    def __init__(self, node, tracer=None):
        if tracer is None:
            tracer = GraphAppendingTracer(node.graph)
        self.tracer = tracer
        self.node = node

    def __repr__(self):
        return f"Proxy({self.node.name})"

    def __getattr__(self, k):
        # note: not added to the graph until it is used (a method call needs no getattr node)
        return Attribute(self, k)

    def __getstate__(self):
        return self.__dict__

    def __deepcopy__(self, memo):
        import copy
        new_dict = {}
        for k, v in self.__dict__.items():
            try:
                new_obj = copy.deepcopy(v, memo)
            except Exception:  # noqa: BLE001  (the tracer and graph are shared, as PyTorch does)
                new_obj = v
            new_dict[k] = new_obj
        new_proxy = Proxy(new_dict["node"], new_dict["tracer"])
        for k, v in new_dict.items():
            new_proxy.__dict__[k] = v
        return new_proxy

    def __setstate__(self, d):
        self.__dict__ = d

    def __call__(self, *args, **kwargs):
        return self.tracer.create_proxy("call_method", "__call__", (self,) + args, kwargs)

    def __iter__(self):
        # `a, b = proxy` unpacks a known number of values: look at the caller's bytecode
        frame = inspect.currentframe()
        assert frame is not None
        calling_frame = frame.f_back
        assert calling_frame is not None
        inst_list = list(dis.get_instructions(calling_frame.f_code))
        if sys.version_info >= (3, 11):
            from bisect import bisect_left
            inst_idx = bisect_left(inst_list, calling_frame.f_lasti, key=lambda x: x.offset)
        else:
            inst_idx = calling_frame.f_lasti // 2
        inst = inst_list[inst_idx]
        if inst.opname == "UNPACK_SEQUENCE":
            return (self[i] for i in range(inst.argval))
        return self.tracer.iter(self)

    def __abs__(self):
        return self.tracer.create_proxy("call_function", operator.abs, (self,), {})

    def __bool__(self):
        return self.tracer.to_bool(self)

    def keys(self):
        return self.tracer.keys(self)

    def __len__(self):
        raise RuntimeError("'len' is not supported in symbolic tracing by default. If you want "
                           "this call to be recorded, please call torch.fx.wrap('len') at "
                           "module scope")

    @classmethod
    def __torch_function__(cls, orig_method, types, args=None, kwargs=None):
        args = args if args else ()
        kwargs = kwargs if kwargs else {}
        tracers = {}

        def find_tracer(a):
            if isinstance(a, cls):
                tracers[a.tracer] = None
        map_aggregate(args, find_tracer)
        map_aggregate(kwargs, find_tracer)
        if len(tracers) > 1:
            raise RuntimeError(f"Found multiple different tracers {list(tracers.keys())} while "
                               f"trying to trace operations {orig_method}")
        tracer = next(iter(tracers.keys()))
        from ..overrides import is_tensor_method_or_property
        if is_tensor_method_or_property(orig_method):
            return tracer.create_proxy("call_method", orig_method.__name__, args, kwargs)
        return tracer.create_proxy("call_function", orig_method, args, kwargs,
                                   name=tracer.graph._target_to_str(orig_method.__name__))


class Attribute(Proxy):
    """``proxy.attr``: a ``getattr`` node if used as a value, a ``call_method`` if called."""

    def __init__(self, root, attr):
        self.root = root
        self.attr = attr
        self.tracer = root.tracer
        self._node = None

    @property
    def node(self):
        if self._node is None:
            self._node = self.tracer.create_proxy("call_function", getattr,
                                                  (self.root, self.attr), {}).node
        return self._node

    def __call__(self, *args, **kwargs):
        return self.tracer.create_proxy("call_method", self.attr, (self.root,) + args, kwargs)


class ParameterProxy(Proxy):
    """A Proxy for a parameter: shape, size(), dim() and friends read the real parameter
    instead of being recorded."""

    def __init__(self, tracer, node, name, param):
        super().__init__(node, tracer)
        self.param = param
        self.name = name

    def __repr__(self):
        return f"ParameterProxy({self.name})"

    @property
    def shape(self):
        return self.param.shape

    def size(self):
        return self.param.size()

    def dim(self):
        return self.param.dim()

    @property
    def ndim(self):
        return self.param.ndim

    def numel(self):
        return self.param.numel()

    def nelement(self):
        return self.param.nelement()


def _make_magic(method):
    def impl(*args, **kwargs):
        tracer = args[0].tracer
        target = getattr(operator, method)
        return tracer.create_proxy("call_function", target, args, kwargs)
    impl.__name__ = method
    as_magic = f'__{method.strip("_")}__'
    setattr(Proxy, as_magic, impl)


def _make_reflected(orig_method_name):
    method_name = f'__r{orig_method_name.strip("_")}__'

    def impl(self, rhs):
        target = getattr(operator, orig_method_name)
        return self.tracer.create_proxy("call_function", target, (rhs, self), {})
    impl.__name__ = method_name
    impl.__qualname__ = method_name
    setattr(Proxy, method_name, impl)


for _method in _MAGIC:
    if hasattr(operator, _method):  # 'div' is a Python 2 name, printed but never recorded
        _make_magic(_method)
for _orig in _REFLECTABLE:
    if hasattr(operator, _orig):
        _make_reflected(_orig)
