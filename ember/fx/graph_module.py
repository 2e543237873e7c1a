"""``GraphModule``: an ``nn.Module`` whose ``forward`` is Python generated from a Graph.

The module copies, from the root it was built from, just the submodules, parameters, buffers
and attributes the graph's ``call_module`` and ``get_attr`` nodes reach. ``recompile()`` turns
the graph into source, compiles it and installs it as ``forward`` on a class of the module's own
(so two GraphModules never share a ``forward``). The source is registered with ``linecache``
under a unique ``<eval_with_key>.N`` file name, so tracebacks and ``inspect.getsource`` show
the generated lines.
"""
import copy
import itertools
import linecache
import sys
import traceback

from .._core.codegen import compile_source
from ..nn import Module
from .graph import Graph, _custom_builtins

__all__ = ["GraphModule"]

_next_id = itertools.count()
# attributes a GraphModule's copies take back from ``meta[_USER_PRESERVED_ATTRIBUTES_KEY]``
_USER_PRESERVED_ATTRIBUTES_KEY = "_user_preserved_attributes"


class _CodeOnlyModule(Module):
    """A module that is only the given ``__dict__`` (a GraphModule's, while it is copied or
    rebuilt; torchvision's feature extractor copies itself through it)."""

    def __init__(self, body):
        super().__init__()
        self.__dict__ = body


def _exec_with_source(src, globals_):
    """Compile ``src`` under a fresh ``<eval_with_key>.N`` name (PyTorch's) kept in
    ``linecache``."""
    key = f"<eval_with_key>.{next(_next_id)}"
    compile_source(src, key, globals_)
    return key


def _forward_from_src(src, globals_):
    globals_copy = dict(globals_)
    _exec_with_source(src, globals_copy)
    return globals_copy["forward"]


def _copy_attr(from_module, to_module, target):
    """Copy ``from_module.<target>`` (a dotted path) to ``to_module``, creating empty Modules
    for the intermediate path, as PyTorch does (the parents' other contents are not copied)."""
    *prefix, field = target.split(".")
    for item in prefix:
        f = getattr(from_module, item)
        t = getattr(to_module, item, None)
        if f is t:
            return  # already installed by an earlier node
        if t is None:
            t = Module()
            setattr(to_module, item, t)
        from_module, to_module = f, t
    orig = getattr(from_module, field)
    from .._tensor import Tensor
    from ..nn import Parameter
    # a plain tensor that is not a registered buffer stays a plain attribute
    if isinstance(orig, Tensor) and not isinstance(orig, Parameter) and \
            field in getattr(from_module, "_buffers", {}):
        to_module.register_buffer(field, orig)
    else:
        setattr(to_module, field, orig)


def _assign_attr(from_obj, to_module, target):
    """Install ``from_obj`` at the dotted path ``target`` (creating empty parents)."""
    *prefix, field = target.split(".")
    for item in prefix:
        t = getattr(to_module, item, None)
        if t is None:
            t = Module()
            setattr(to_module, item, t)
        to_module = t
    from .._tensor import Tensor
    from ..nn import Parameter
    if isinstance(from_obj, Tensor) and not isinstance(from_obj, Parameter):
        to_module.register_buffer(field, from_obj)
    else:
        setattr(to_module, field, from_obj)


class _WrappedCall:
    """Calls the generated ``forward``; on an error inside it, adds the generated lines around
    the failing one to the message (PyTorch prints the same context)."""

    def __init__(self, cls, cls_call):
        self.cls = cls
        self.cls_call = cls_call

    @staticmethod
    def _generate_error_message(frame_summary):
        err_lineno = frame_summary.lineno
        assert err_lineno is not None
        line = frame_summary.line
        all_src_lines = linecache.getlines(frame_summary.filename)
        tb_repr = traceback.format_exc()
        custom_msg = ("Call using an FX-traced Module, line " + str(err_lineno)
                      + " of the traced Module's generated forward function:")
        before_err = "".join(all_src_lines[err_lineno - 2:err_lineno])
        marker = "~" * len(line or "") + "~~~ <--- HERE"
        err_and_after_err = "\n".join(all_src_lines[err_lineno:err_lineno + 2])
        return "\n".join([tb_repr, custom_msg, before_err, marker, err_and_after_err])

    def __call__(self, obj, *args, **kwargs):
        try:
            if self.cls_call is not None:
                return self.cls_call(obj, *args, **kwargs)
            return super(self.cls, obj).__call__(*args, **kwargs)
        except Exception as e:
            assert e.__traceback__
            topmost = traceback.StackSummary.extract(traceback.walk_tb(e.__traceback__))[-1]
            if "eval_with_key" in topmost.filename:
                print(self._generate_error_message(topmost), file=sys.stderr)
                raise e.with_traceback(None)  # noqa: B904
            raise


class GraphModule(Module):
    """An ``nn.Module`` generated from a Graph; see the module docstring."""

    def __new__(cls, *args, **kwargs):
        # every instance gets a class of its own: recompile() sets forward on it
        for t in cls.__mro__:
            c = t.__qualname__.split(".")[-1]
            if c != "GraphModuleImpl":
                cls = t
                break

        class GraphModuleImpl(cls):
            pass
        return super().__new__(GraphModuleImpl)

    def __init__(self, root, graph, class_name="GraphModule"):
        super().__init__()
        self.__class__.__name__ = class_name
        if isinstance(root, Module):
            if hasattr(root, "training"):
                self.training = root.training
            for node in graph.nodes:
                if node.op in ("get_attr", "call_module"):
                    assert isinstance(node.target, str)
                    _copy_attr(root, self, node.target)
        elif isinstance(root, dict):
            targets_to_copy = []
            for node in graph.nodes:
                if node.op in ("get_attr", "call_module"):
                    assert isinstance(node.target, str)
                    if node.target not in root:
                        raise RuntimeError(f"Node {node} referenced target {node.target} but "
                                           f"that target was not provided in ``root``!")
                    targets_to_copy.append(node.target)
            # parents before children, so a submodule is not overwritten by an empty one
            targets_to_copy.sort(key=lambda t: t.count("."))
            for target_to_copy in targets_to_copy:
                _assign_attr(root[target_to_copy], self, target_to_copy)
        else:
            raise RuntimeError(f"Unsupported type {root} passed for root!")
        self.graph = graph
        self._tracer_cls = None
        if self.graph._tracer_cls and "<locals>" not in self.graph._tracer_cls.__qualname__:
            self._tracer_cls = self.graph._tracer_cls
        self._tracer_extras = {}
        if self.graph._tracer_extras:
            self._tracer_extras = self.graph._tracer_extras
        self.meta = {}

    @property
    def graph(self):
        return self._graph

    @graph.setter
    def graph(self, g):
        assert isinstance(g, Graph), f"Expected a Graph instance, but got {type(g)}"
        self._graph = g
        g.owning_module = self
        self.recompile()

    @property
    def code(self):
        """The generated Python source of ``forward``."""
        if not hasattr(self, "_code"):
            raise RuntimeError("Code has not been generated! Please report a bug to PyTorch")
        return self._code

    def recompile(self):
        """Regenerate ``forward`` from ``self.graph`` (call after changing the graph)."""
        python_code = self._graph.python_code(root_module="self")
        self._code = python_code.src
        self._lineno_map = python_code._lineno_map
        cls = type(self)
        co_fields = self._graph._co_fields if hasattr(self._graph, "_co_fields") else {}
        cls.forward = _forward_from_src(self._code, python_code.globals)
        cls.forward.__qualname__ = "forward"
        for k, v in co_fields.items():
            setattr(cls.forward, k, v)
        cls_call = cls.__call__ if "__call__" in vars(cls) else None
        if "_wrapped_call" not in vars(cls):
            cls._wrapped_call = _WrappedCall(cls, cls_call)

        def call_wrapped(self, *args, **kwargs):
            return self._wrapped_call(self, *args, **kwargs)
        cls.__call__ = call_wrapped
        return python_code

    def print_readable(self, print_output=True, include_stride=False, include_device=False,
                       colored=False, *, fast_sympy_print=False, expanded_def=False):
        """The module as a class definition: ``forward`` with tensor annotations and the
        source line each group of nodes came from; nested GraphModules too."""
        return self._print_readable(self, self._get_name(), print_output)

    @staticmethod
    def _print_readable(module, module_name, print_output):
        graph = module.graph
        verbose_code = graph.python_code(root_module="self", verbose=True).src
        verbose_code = verbose_code.lstrip("\n").strip()
        module_code = f"class {module_name}(ember.nn.Module):\n"
        module_code += "\n".join("    " + line for line in verbose_code.split("\n")) + "\n"
        submodule_code_list = [""]
        for submodule_name, submodule in module.named_children():
            if hasattr(submodule, "graph"):
                submodule_code_list.append(
                    GraphModule._print_readable(submodule, submodule_name, False))
        submodule_code = "\n".join(submodule_code_list)
        submodule_code = "\n".join("    " + line if line else line
                                   for line in submodule_code.split("\n"))
        output = module_code + submodule_code
        if print_output:
            print(module_code + submodule_code)
        return output

    def _get_name(self):
        return type(self).__name__

    def __str__(self):
        orig_str = super().__str__()
        print_readable_reminder = ("# To see more debug info, please use "
                                   "`graph_module.print_readable()`")
        return "\n".join([orig_str, self._code, print_readable_reminder])

    # -- editing ----------------------------------------------------------------------------
    def add_submodule(self, target, m):
        *prefix, field = target.split(".")
        mod = self
        for item in prefix:
            submod = getattr(mod, item, None)
            if submod is None:
                submod = Module()
                setattr(mod, item, submod)
            if not isinstance(submod, Module):
                return False
            mod = submod
        mod.add_module(field, m)
        return True

    def delete_submodule(self, target):
        atoms = target.split(".")
        path, target_submod = atoms[:-1], atoms[-1]
        mod = self
        for item in path:
            if not hasattr(mod, item):
                return False
            mod = getattr(mod, item)
            if not isinstance(mod, Module):
                return False
        if not hasattr(mod, target_submod):
            return False
        if not isinstance(getattr(mod, target_submod), Module):
            return False
        delattr(mod, target_submod)
        return True

    def delete_all_unused_submodules(self):
        used = []
        for node in self.graph.nodes:
            if node.op in ("call_module", "get_attr"):
                fullpath = node.target.split(".")
                for i in range(1, len(fullpath) + 1):
                    used.append(".".join(fullpath[:i]))
        to_delete = [name for name, _ in self.named_modules() if name and name not in used]
        for name in to_delete:
            self.delete_submodule(name)

    # -- copying and pickling ---------------------------------------------------------------
    def __deepcopy__(self, memo):
        res = type(self).__new__(type(self))  # a class of its own, as every GraphModule
        memo[id(self)] = res
        fake_mod = _CodeOnlyModule(copy.deepcopy(
            {k: v for k, v in self.__dict__.items() if k not in ("_graph",)}, memo))
        GraphModule.__init__(res, fake_mod, copy.deepcopy(self._graph, memo),
                             self.__class__.__name__)
        for attr in ("meta", "_tracer_extras"):
            if attr in fake_mod.__dict__:
                setattr(res, attr, fake_mod.__dict__[attr])
        for k, v in fake_mod.__dict__.items():
            if k not in res.__dict__:
                res.__dict__[k] = v
        for name, value in getattr(res, "meta", {}).get(_USER_PRESERVED_ATTRIBUTES_KEY,
                                                         {}).items():
            setattr(res, name, value)
        return res

    def __copy__(self):
        res = GraphModule(self, self.graph, self.__class__.__name__)
        res.meta = getattr(self, "meta", {})
        return res

    def __reduce__(self):
        """Pickled as its module dict plus the generated source (as PyTorch does): the
        graph is rebuilt by re-tracing that source on load."""
        dict_without_graph = self.__dict__.copy()
        python_code = self.recompile()
        import_block = _format_import_block(python_code.globals)
        del dict_without_graph["_graph"]
        return (reduce_graph_module, (dict_without_graph, import_block,
                                      self.__class__.__name__))


def _format_import_block(globals_):
    """Source that rebuilds the globals of generated code when a GraphModule is unpickled."""
    lines = ["import ember", "from math import inf, nan", "NoneType = type(None)",
             "device = ember.device"]
    builtins_ = _custom_builtins()
    for name, obj in globals_.items():
        if name in builtins_:
            continue
        mod = getattr(obj, "__module__", None)
        qual = getattr(obj, "__qualname__", getattr(obj, "__name__", None))
        if mod is None or qual is None or "<" in qual:
            raise RuntimeError(f"GraphModule pickling: cannot import global {name!r} ({obj})")
        lines.append(f"from {mod} import {qual.split('.')[0]} as _{name}_root")
        rest = qual.split(".")[1:]
        lines.append(f"{name} = _{name}_root" + "".join(f".{r}" for r in rest))
    return "\n".join(lines)


def reduce_graph_module(body, import_block, class_name="GraphModule"):
    """Unpickle: rebuild the forward from source, re-trace it into a Graph."""
    fn_src = body.get("_code")
    assert fn_src is not None
    globals_ = {}
    exec(compile(import_block, "<import_block>", "exec"), globals_)
    forward = _forward_from_src(import_block + "\n" + fn_src, globals_)
    return _deserialize_graph_module(forward, body, class_name)


def _deserialize_graph_module(forward, body, class_name):
    from ._symbolic_trace import Tracer

    class CodeOnlyModule(_CodeOnlyModule):
        pass

    CodeOnlyModule.forward = forward

    class KeepModules(Tracer):
        def is_leaf_module(self, _, __):
            return True

    com = CodeOnlyModule(body)
    graph = KeepModules().trace(com)
    gm = GraphModule(com, graph, class_name=class_name)
    for k, v in body.items():
        if not hasattr(gm, k):
            setattr(gm, k, v)
    return gm
