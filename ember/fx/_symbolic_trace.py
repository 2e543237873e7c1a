"""``symbolic_trace`` and ``Tracer``: run a module's ``forward`` (or a function) on Proxies and
record what it does as a Graph.

During a trace the tracer patches ``nn.Module.__call__`` (submodule calls: recorded as
``call_module`` for leaf modules, traced through otherwise) and ``nn.Module.__getattr__``
(parameters become ``get_attr`` nodes), and replaces functions registered with :func:`wrap`, the
functions of the autowrap modules (``math``) and ``ember.nn.functional`` in the globals the
traced code reads, so calls to them on Proxies are recorded as ``call_function`` nodes instead
of being executed. Everything is restored when the trace ends, also on error.
"""
import builtins
import collections
import functools
import inspect
import math
import types
import warnings

from .._core.api_name import as_ember
from ..nn import Module, Parameter, Sequential
from ..utils import _pytree as pytree
from .graph import Graph
from .graph_module import GraphModule
from .proxy import ParameterProxy, Proxy, TracerBase

__all__ = ["Tracer", "symbolic_trace", "wrap", "PH", "PHBase", "ProxyableClassMeta"]

HAS_VARSTUFF = inspect.CO_VARARGS | inspect.CO_VARKEYWORDS

# (id(globals dict), function name) -> globals dict: functions registered with wrap()
_wrapped_fns_to_patch = collections.OrderedDict()
_proxyable_classes = {}


class ProxyableClassMeta(type):
    """A metaclass whose classes' constructors are recorded (``call_function`` on the class)
    when called with Proxies, instead of running on them."""

    def __init__(cls, name, bases, attrs):
        _proxyable_classes.setdefault(cls)
        super().__init__(name, bases, attrs)

    def __call__(cls, *args, **kwargs):
        instance = cls.__new__(cls)
        if not _is_fx_tracing_flag:
            cls.__init__(instance, *args, **kwargs)
            return instance
        found_proxies = []

        def check_proxy(a):
            if isinstance(a, Proxy):
                found_proxies.append(a)
        pytree.tree_map(check_proxy, (args, kwargs))
        if found_proxies:
            tracer = found_proxies[0].tracer
            return tracer.create_proxy("call_function", cls, args, kwargs)
        cls.__init__(instance, *args, **kwargs)
        return instance


_is_fx_tracing_flag = False


def is_fx_tracing():
    return _is_fx_tracing_flag


class PHBase:
    """Marks an input of ``concrete_args`` that should stay a placeholder."""

    def __repr__(self):
        return "PH"


PH = PHBase()


def _assert(condition, message):
    """``assert`` as a function, so that specialising a concrete argument can be recorded."""
    assert condition, message


def _assert_is_none(value, msg):
    assert value is None, msg


def wrap(fn_or_name):
    """Called at module scope: calls to this function (by name, in that module) are recorded
    as ``call_function`` nodes instead of being traced through."""
    if not callable(fn_or_name) and not isinstance(fn_or_name, str):
        raise RuntimeError("Unsupported type for global function! Must be either a callable or "
                           "string name")
    if callable(fn_or_name):
        assert not isinstance(fn_or_name, str)
        fn_name = fn_or_name.__name__
    else:
        fn_name = fn_or_name
    currentframe = inspect.currentframe()
    assert currentframe is not None
    f = currentframe.f_back
    assert f is not None
    if f.f_code.co_name != "<module>":
        raise NotImplementedError("wrap must be called at the top level of a module")
    _wrapped_fns_to_patch[(id(f.f_globals), fn_name)] = f.f_globals
    return fn_or_name


def _find_proxy(*objects_to_search):
    proxy = None

    def find(x):
        nonlocal proxy
        if isinstance(x, Proxy):
            proxy = x
    pytree.tree_map(find, objects_to_search)
    return proxy


def _create_wrapped_func(orig_fn, mark_wrapped=True):
    @functools.wraps(orig_fn)
    def wrapped(*args, **kwargs):
        proxy = _find_proxy(args, kwargs)
        if proxy is not None:
            return_proxy = proxy.tracer.create_proxy("call_function", orig_fn, args, kwargs)
            if mark_wrapped:
                return_proxy.node.meta["is_wrapped"] = True
            return return_proxy
        return orig_fn(*args, **kwargs)
    wrapped.__fx_orig__ = orig_fn
    return wrapped


class _Patcher:
    """Attribute/global replacements, undone in reverse order on exit."""

    def __init__(self):
        self.patches_made = []
        self.visited = set()

    def patch(self, frame_dict, name, new_fn, deduplicate=True):
        new_fn.__fx_already_patched = deduplicate
        if name not in frame_dict and hasattr(builtins, name):
            self.patches_made.append(("del", frame_dict, name, None))
        elif getattr(frame_dict[name], "__fx_already_patched", False):
            return
        else:
            self.patches_made.append(("set", frame_dict, name, frame_dict[name]))
        frame_dict[name] = new_fn

    def patch_method(self, cls, name, new_fn, deduplicate=True):
        new_fn.__fx_already_patched = deduplicate
        orig_fn = getattr(cls, name)
        if getattr(orig_fn, "__fx_already_patched", False):
            return
        self.patches_made.append(("attr", cls, name, cls.__dict__.get(name, _MISSING)))
        setattr(cls, name, new_fn)

    def visit_once(self, thing):
        idx = id(thing)
        if idx in self.visited:
            return False
        self.visited.add(idx)
        return True

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc_val, exc_tb):
        while self.patches_made:
            kind, where, name, orig = self.patches_made.pop()
            if kind == "del":
                where.pop(name, None)
            elif kind == "set":
                where[name] = orig
            elif orig is _MISSING:
                delattr(where, name)
            else:
                setattr(where, name, orig)
        self.visited.clear()


_MISSING = object()


def _patch_wrapped_functions(patcher):
    for (_, name), frame_dict in _wrapped_fns_to_patch.copy().items():
        if name not in frame_dict and hasattr(builtins, name):
            orig_fn = getattr(builtins, name)
        else:
            orig_fn = frame_dict[name]
        patcher.patch(frame_dict, name, _create_wrapped_func(orig_fn))


def _autowrap_check(patcher, frame_dict, function_ids):
    """Replace, in ``frame_dict``, the functions whose ids are in ``function_ids``."""
    if patcher.visit_once(frame_dict):
        functional_ids = _functional_ids()
        for name, value in list(frame_dict.items()):
            if not name.startswith("_") and callable(value) and id(value) in function_ids:
                # ember.nn.functional calls are what PyTorch's __torch_function__ records:
                # no wrap() statement in the generated code for them
                patcher.patch(frame_dict, name, _create_wrapped_func(
                    value, mark_wrapped=id(value) not in functional_ids))


def _functional_ids():
    return {id(f) for f in _functional_functions()[1].values()}


def _functional_functions():
    """ember.nn.functional's public functions: PyTorch records them through
    ``__torch_function__``; here they are replaced while tracing (same nodes)."""
    from ..nn import functional as F
    return F, {name: fn for name, fn in vars(F).items()
               if not name.startswith("_") and isinstance(fn, types.FunctionType)
               and as_ember(fn.__module__) == F.__name__}


class Tracer(TracerBase):
    """Records a Graph from a module's ``forward`` or a function; subclass to change which
    modules are leaves (``is_leaf_module``) or how values become node arguments."""

    def __init__(self, autowrap_modules=(math,), autowrap_functions=(),
                 param_shapes_constant=False):
        super().__init__()
        self._autowrap_function_ids = {
            id(value) for name, value in
            (item for m in autowrap_modules for item in m.__dict__.items())
            if not name.startswith("_") and callable(value)}
        self._autowrap_function_ids.update(id(f) for f in autowrap_functions)
        self._autowrap_modules = list(autowrap_modules)
        self._autowrap_functions = autowrap_functions
        self.param_shapes_constant = param_shapes_constant
        self.submodule_paths = None
        self.root_module_name = ""
        self.scope = None
        self.module_stack = collections.OrderedDict()
        self.num_calls = {}
        self.node_name_to_scope = {}

    _qualified_name_counter = collections.defaultdict(int)

    def get_fresh_qualname(self, prefix):
        """A name ``prefix<N>`` not yet an attribute of the root."""
        i = 0
        while hasattr(self.root, f"{prefix}{i}"):
            i += 1
        return f"{prefix}{i}"

    def create_arg(self, a):
        from .._tensor import Tensor
        if isinstance(a, Parameter):
            for n, p in self.root.named_parameters():
                if a is p:
                    return self.create_node("get_attr", n, (), {})
            raise NameError("parameter is not a member of this module")
        if isinstance(a, Tensor):
            for n_, p_ in self.root.named_buffers():
                if a is p_:
                    return self.create_node("get_attr", n_, (), {})
        elif isinstance(a, Module):
            for n_, p_ in self.root.named_modules():
                if a is p_:
                    return self.create_node("get_attr", n_, (), {})
            raise NameError("module is not installed as a submodule")
        elif isinstance(a, tuple) and hasattr(a, "_fields"):
            args = tuple(self.create_arg(elem) for elem in a)
            return self.create_node("call_function", a.__class__, args, {})
        if isinstance(a, Tensor):
            entry = self.tensor_attrs.get(id(a))
            qualname = entry[1] if entry is not None and entry[0] is a else None
            if not qualname:
                qualname = self.get_fresh_qualname("_tensor_constant")
                self.tensor_attrs[id(a)] = (a, qualname)
                setattr(self.root, qualname, a)
            return self.create_node("get_attr", qualname, (), {})
        if type(a) in _proxyable_classes:
            qualname = self.get_fresh_qualname(f"_{a.__class__.__name__}_constant_")
            setattr(self.root, qualname, a)
            return self.create_node("get_attr", qualname, (), {})
        return super().create_arg(a)

    def is_leaf_module(self, m, module_qualified_name):
        """Built-in ``ember.nn`` layers are leaves (recorded as ``call_module``) except
        ``Sequential``; user modules are traced through."""
        return as_ember(m.__module__).startswith("ember.nn") and not isinstance(m, Sequential)

    def path_of_module(self, mod):
        if self.submodule_paths:
            path = self.submodule_paths.get(mod)
            if path is None:
                raise NameError("module is not installed as a submodule")
            return path
        for n, p in self.root.named_modules():
            if mod is p:
                return n
        raise NameError("module is not installed as a submodule")

    def call_module(self, m, forward, args, kwargs):
        from .proxy import Scope, ScopeContextManager
        module_qualified_name = self.path_of_module(m)
        with ScopeContextManager(self.scope, Scope(module_qualified_name, type(m))) as _scope:
            num_calls = self.num_calls.get(module_qualified_name, 0)
            module_key = f"{_scope.module_path}@{num_calls}" if num_calls > 0 \
                else _scope.module_path
            self.module_stack[module_key] = (module_qualified_name, _scope.module_type)
            self.num_calls[module_qualified_name] = num_calls + 1
            if not self.is_leaf_module(m, module_qualified_name):
                ret_val = forward(*args, **kwargs)
            else:
                ret_val = self.create_proxy("call_module", module_qualified_name, args, kwargs)
            self.module_stack.popitem(last=True)
        return ret_val

    def getattr(self, attr, attr_val, parameter_proxy_cache):
        """What reading ``module.attr`` gives while tracing: a Proxy for a parameter."""
        def maybe_get_proxy_for_attr(attr_val, collection_to_search, cache):
            for n, p in collection_to_search:
                if attr_val is p:
                    if n not in cache:
                        factory = None if not self.param_shapes_constant else \
                            (lambda node: ParameterProxy(self, node, n, attr_val))
                        cache[n] = self.create_proxy("get_attr", n, (), {},
                                                     proxy_factory_fn=factory)
                    return cache[n]
            return None
        if isinstance(attr_val, Parameter):
            maybe = maybe_get_proxy_for_attr(attr_val, self.root.named_parameters(),
                                             parameter_proxy_cache)
            if maybe is not None:
                return maybe
        from .._tensor import Tensor
        if self.proxy_buffer_attributes and isinstance(attr_val, Tensor):
            maybe = maybe_get_proxy_for_attr(attr_val, self.root.named_buffers(),
                                             parameter_proxy_cache)
            if maybe is not None:
                return maybe
        return attr_val

    # -- the root's arguments ---------------------------------------------------------------
    def create_args_for_root(self, root_fn, is_module, concrete_args=None):
        fn_for_analysis = inspect.unwrap(root_fn)
        co = fn_for_analysis.__code__
        total_args = co.co_argcount + co.co_kwonlyargcount
        names_iter = iter(co.co_varnames)
        args = []
        skip_arg_idx = 0
        if is_module:
            if total_args == 0:
                raise RuntimeError("``self`` argument cannot be part of *args expansion!")
            skip_arg_idx = 1
            next(names_iter)
            args.append(self.root)
        sig = inspect.signature(fn_for_analysis)
        arg_names = [next(names_iter) for _ in range(skip_arg_idx, total_args)]
        if isinstance(concrete_args, tuple):
            if len(concrete_args) != len(arg_names):
                raise RuntimeError(f"Tracing expected {len(arg_names)} arguments but got "
                                   f"{len(concrete_args)} concrete arguments")
            concrete_args = dict(zip(arg_names, concrete_args))

        def proxy_placeholder(name):
            return self._proxy_placeholder(name, concrete_args, sig, fn_for_analysis)
        args.extend(proxy_placeholder(name) for name in arg_names)
        if co.co_kwonlyargcount > 0 or co.co_flags & HAS_VARSTUFF:
            if co.co_flags & inspect.CO_VARARGS:
                args.append(proxy_placeholder("*" + next(names_iter)))
            if co.co_flags & inspect.CO_VARKEYWORDS:
                args.append(proxy_placeholder("**" + next(names_iter)))
            root_fn = _patch_function(root_fn, len(args))
        return root_fn, args

    def _proxy_placeholder(self, name, concrete_args, sig, fn_for_analysis):
        if concrete_args is not None and name in concrete_args:
            cnt = 0

            def replace_ph(x):
                nonlocal cnt
                cnt += 1
                param = sig.parameters[name]
                default = () if param.default is inspect.Parameter.empty else (param.default,)
                out = self.create_proxy("placeholder", f"{name}_{cnt}", default, {})
                if isinstance(x, PHBase):
                    if x is not PH:
                        for attr_name, attr in x.__dict__.items():  # the PH's attributes
                            setattr(out, attr_name, attr)
                    return out
                if type(x) in (bool, int, float, str, complex, type(None)) or x is None:
                    if x is None:
                        self.create_proxy("call_function", _assert_is_none,
                                          (out, f"{name} has been specialized to have value "
                                                f"None but got another value"), {})
                    else:
                        self.create_proxy("call_function", _assert,
                                          (out == x, f"{name} has been specialized to have "
                                                     f"value {x} but got another value"), {})
                else:
                    warnings.warn(f"Was not able to add assertion to guarantee correct input "
                                  f"{name} to specialized function. It is up to the user to "
                                  f"make sure that your inputs match the inputs you "
                                  f"specialized the function with.")
                return x
            return pytree.tree_map(replace_ph, concrete_args[name])
        if name[0] == "*":
            default = ()
        else:
            param = sig.parameters[name]
            default = () if param.default is inspect.Parameter.empty else (param.default,)
        return self.create_proxy("placeholder", name, default, {},
                                 type_expr=fn_for_analysis.__annotations__.get(name, None))

    # -- the trace --------------------------------------------------------------------------
    def trace(self, root, concrete_args=None):
        """Run ``root`` (a Module's ``forward`` or a function) on Proxies; returns the Graph."""
        global _is_fx_tracing_flag
        from .. import overrides
        old_is_fx_tracing_flag = _is_fx_tracing_flag
        _is_fx_tracing_flag = True
        # __torch_function__ is consulted only while _TF_ON is non-empty (see ember.overrides)
        overrides._TF_ON.append(Proxy)
        try:
            if isinstance(root, Module):
                self.root = root
                fn = getattr(type(root), self.traced_func_name)
                self.root_module_name = root._get_name()
                self.submodule_paths = {mod: name for name, mod in root.named_modules()}
            else:
                self.root = Module()
                fn = root
            tracer_cls = getattr(self, "__class__", None)
            self.graph = Graph(tracer_cls=tracer_cls)
            if hasattr(fn, "__code__"):
                code = fn.__code__
                self.graph._co_fields = {"co_name": code.co_name,
                                         "co_filename": code.co_filename,
                                         "co_firstlineno": code.co_firstlineno}
            # tensors reachable as attributes of the root are get_attr'd by their path
            self.tensor_attrs = {}

            def collect_tensor_attrs(m, prefix_atoms):
                from .._tensor import Tensor
                for k, v in m.__dict__.items():
                    if isinstance(v, Tensor):
                        self.tensor_attrs[id(v)] = (v, ".".join(prefix_atoms + [k]))
                for k, v in m.named_children():
                    collect_tensor_attrs(v, prefix_atoms + [k])
            collect_tensor_attrs(self.root, [])

            assert isinstance(fn, types.FunctionType)
            fn_globals = fn.__globals__
            from .proxy import Scope
            self.scope = Scope("", None)
            fn, args = self.create_args_for_root(fn, isinstance(root, Module), concrete_args)
            parameter_proxy_cache = {}

            _orig_module_call = Module.__call__
            _orig_module_getattr = Module.__getattr__

            def module_getattr_wrapper(mod, attr):
                attr_val = _orig_module_getattr(mod, attr)
                return self.getattr(attr, attr_val, parameter_proxy_cache)

            def module_call_wrapper(mod, *args, **kwargs):
                def forward(*args, **kwargs):
                    return _orig_module_call(mod, *args, **kwargs)
                _autowrap_check(patcher, getattr(getattr(mod, "forward", mod), "__globals__",
                                                 {}), self._autowrap_function_ids)
                return self.call_module(mod, forward, args, kwargs)

            F, functional = _functional_functions()
            functional_ids = {id(f) for f in functional.values()}
            with _Patcher() as patcher:
                patcher.patch_method(Module, "__getattr__", module_getattr_wrapper,
                                     deduplicate=False)
                patcher.patch_method(Module, "__call__", module_call_wrapper,
                                     deduplicate=False)
                _patch_wrapped_functions(patcher)
                self._autowrap_function_ids |= functional_ids
                _autowrap_check(patcher, fn_globals, self._autowrap_function_ids)
                for module in self._autowrap_modules:
                    _autowrap_check(patcher, module.__dict__, self._autowrap_function_ids)
                _autowrap_check(patcher, vars(F), functional_ids)
                self.create_node("output", "output", (self.create_arg(fn(*args)),), {},
                                 type_expr=fn.__annotations__.get("return", None))
                self._autowrap_function_ids -= functional_ids
            self.submodule_paths = None
        finally:
            _is_fx_tracing_flag = old_is_fx_tracing_flag
            overrides._TF_ON.remove(Proxy)
        return self.graph

    def __deepcopy__(self, memo):
        import copy
        new_tracer = Tracer.__new__(Tracer)
        for k, v in self.__dict__.items():
            if k in {"_autowrap_search"}:
                new_obj = copy.copy(v)
            else:
                new_obj = copy.deepcopy(v, memo)
            new_tracer.__dict__[k] = new_obj
        return new_tracer


def _patch_function(fn, nargs):
    """``fn`` with its keyword-only, ``*args`` and ``**kwargs`` parameters made positional,
    so each receives one Proxy."""
    co = fn.__code__
    co_flags = co.co_flags & ~HAS_VARSTUFF
    co_args = co.replace(co_argcount=nargs, co_kwonlyargcount=0, co_flags=co_flags)
    new_fn = types.FunctionType(co_args, fn.__globals__, fn.__name__, fn.__defaults__,
                                fn.__closure__)
    return new_fn


def symbolic_trace(root, concrete_args=None):
    """Trace ``root`` (an ``nn.Module`` or a function) into a :class:`GraphModule`.
    ``concrete_args`` fixes some inputs to values (partial specialisation)."""
    tracer = Tracer()
    graph = tracer.trace(root, concrete_args)
    name = root.__class__.__name__ if isinstance(root, Module) else root.__name__
    return _make_graph_module(tracer.root, graph, name)


def _make_graph_module(root, graph, class_name="GraphModule"):
    return GraphModule(root, graph, class_name)

