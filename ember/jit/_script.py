"""The objects ``ember.jit`` returns: ``ScriptModule`` (``RecursiveScriptModule`` from
``script``/``load``, ``TracedModule`` from ``trace``) and ``ScriptFunction``. A script module
wraps the original module and shares its parameters, buffers and submodules (as PyTorch's do);
``script`` runs it through ``ember.compile(fullgraph=True, backend="eager")`` and falls back to
eager when capture fails, saying once which happened; ``save`` writes an ``ember.export``
program traced on the inputs recorded at trace time or at the first call."""
import enum
import warnings

from .. import no_grad
from .._tensor import Tensor
from ..nn import Module
from ..utils import _pytree as pytree
from . import _internal

__all__ = ["ScriptModule", "RecursiveScriptModule", "TracedModule", "ScriptFunction", "script"]


def _clone(x):
    return pytree.tree_map(lambda t: t.detach().clone() if isinstance(t, Tensor) else t, x)


class _Capture:
    """``ember.compile(fn, fullgraph=True)`` with the eager backend, remembering the captured
    graphs; after a capture failure it runs ``fn`` eagerly. The first call says which (once)."""

    def __init__(self, fn, what):
        import ember
        self.fn, self.what = fn, what
        self.graphs = []
        self.mode = None  # "compiled" or "eager", known after the first call
        self.reason = None
        self.example_inputs = None

        def backend(gm, example_inputs):
            from .._dynamo.backends.registry import lookup_backend
            self.graphs.append(gm)
            return lookup_backend("eager")(gm, example_inputs)
        self.compiled = ember.compile(fn, fullgraph=True, backend=backend)

    def __call__(self, *args, **kwargs):
        from .._dynamo.exc import Unsupported
        if self.example_inputs is None:
            self.example_inputs = (_clone(args), _clone(kwargs))
        if self.mode != "eager":
            try:
                out = self.compiled(*args, **kwargs)
            except Unsupported as e:
                self.reason = str(e).splitlines()[0] if str(e) else type(e).__name__
                self._switch_to_eager()
            else:
                if self.mode is None:
                    self.mode = "compiled"
                    _internal._warn_at_user_frame(
                        f"ember.jit.script({self.what}): captured whole by "
                        "ember.compile(fullgraph=True, backend='eager'); it runs as that graph "
                        "(not TorchScript)", UserWarning)
                return out
        return self.fn(*args, **kwargs)

    def _switch_to_eager(self):
        self.mode = "eager"
        _internal._warn_at_user_frame(
            f"ember.jit.script({self.what}): ember.compile(fullgraph=True) could not capture it "
            f"({self.reason}); it runs eagerly as Python", UserWarning)

    def graph_module(self, attr):
        if self.mode is None:
            raise RuntimeError(f"ember.jit.script({self.what}): {attr} is the graph captured at "
                               "the first call; call the scripted object once first")
        if self.mode == "eager":
            raise RuntimeError(f"ember.jit.script({self.what}) runs eagerly (capture failed: "
                               f"{self.reason}), so it has no {attr}")
        return self.graphs[-1]


class ScriptModule(Module):
    """A module whose forward is a recorded or captured graph (PyTorch's
    ``torch.jit.ScriptModule``). It shares the wrapped module's parameters, buffers and
    submodules; attributes it lacks are looked up on the wrapped module."""

    def __init__(self, original=None):
        super().__init__()
        if original is not None:
            object.__setattr__(self, "_original", original)
            for name in ("_parameters", "_buffers", "_non_persistent_buffers_set", "_modules"):
                object.__setattr__(self, name, getattr(original, name))
            object.__setattr__(self, "training", original.training)

    def __getattr__(self, name):
        try:
            return super().__getattr__(name)
        except AttributeError:
            original = self.__dict__.get("_original")
            if original is None or name.startswith("__"):
                raise
        value = getattr(original, name)
        if _internal.get_torchscript_modifier(value) in (
                _internal.FunctionModifiers.UNUSED, _internal.FunctionModifiers._DROP):
            return _internal._unused_stub(name)
        return value

    def train(self, mode=True):
        super().train(mode)
        original = self.__dict__.get("_original")
        if original is not None:
            object.__setattr__(original, "training", mode)  # the wrapped forward reads it
        return self

    @property
    def original_name(self):
        if "_original_name" in self.__dict__:
            return self.__dict__["_original_name"]
        original = self.__dict__.get("_original")
        return type(original if original is not None else self).__name__

    @property
    def graph(self):
        return self._graph_module("graph").graph

    @property
    def inlined_graph(self):
        return self.graph

    @property
    def code(self):
        return self._graph_module("code").code

    def _graph_module(self, attr):
        raise NotImplementedError

    def _program(self):
        """The ``ember.export`` program this module saves as."""
        from ..export import export
        inputs = self.__dict__.get("_example_inputs")
        if inputs is None:
            raise RuntimeError(f"{type(self).__name__}.save: no example inputs recorded; call "
                               "the scripted module once first (ember exports the program "
                               "traced on the first call's inputs)")
        args, kwargs = inputs
        return _export_or_explain(export, self._export_target(), args, kwargs,
                                  type(self).__name__)

    def _export_target(self):
        return self.__dict__["_original"]

    def save(self, f, _extra_files=None):
        """Write this module as an ``ember.export`` program that ``ember.jit.load`` reads."""
        from . import _serialization
        _serialization.save(self, f, _extra_files)

    def save_to_buffer(self, _extra_files=None):
        import io
        buf = io.BytesIO()
        self.save(buf, _extra_files)
        return buf.getvalue()


class RecursiveScriptModule(ScriptModule):
    """What ``ember.jit.script(module)`` and ``ember.jit.load`` return."""

    def __init__(self, original, *, capture=True, program=None):
        super().__init__(original)
        object.__setattr__(self, "_capture",
                           _Capture(original, type(original).__name__) if capture else None)
        object.__setattr__(self, "_program_loaded", program)
        object.__setattr__(self, "_example_inputs", None)

    def forward(self, *args, **kwargs):
        capture = self.__dict__["_capture"]
        if capture is None:  # a loaded program: its inputs are the flattened user inputs
            return self._original._run_flat(_program_inputs(self.__dict__["_program_loaded"],
                                                            args, kwargs))
        out = capture(*args, **kwargs)
        if self.__dict__["_example_inputs"] is None:
            object.__setattr__(self, "_example_inputs", capture.example_inputs)
        return out

    def _graph_module(self, attr):
        program = self.__dict__["_program_loaded"]
        if program is not None:
            return program.graph_module
        return self.__dict__["_capture"].graph_module(attr)

    def _program(self):
        program = self.__dict__["_program_loaded"]
        if program is None:
            return super()._program()
        from ..export import ExportedProgram
        # the loaded graph with the module's current state (it may have been trained since)
        state = dict(self._original.named_parameters())
        state.update(self._original.named_buffers())
        return ExportedProgram(program.graph_module, program.graph_signature,
                               {n: state[n] for n in program.state_dict}, program._out_spec)

    def extra_repr(self):
        return f"original_name={self.original_name}"


def _program_inputs(program, args, kwargs):
    """The leaves of ``(args, kwargs)`` in the program's input order: keyword inputs are named
    by their keys in the signature, so they are put in that order whatever order they come in."""
    if kwargs:
        from ..export import InputKind
        names = [s.arg.name for s in program.graph_signature.input_specs
                 if s.kind == InputKind.USER_INPUT]
        order = [n for n in names if n in kwargs]
        kwargs = {n: kwargs[n] for n in order + [k for k in kwargs if k not in order]}
    return pytree.tree_leaves((tuple(args), dict(kwargs)))


class TracedModule(ScriptModule):
    """What ``ember.jit.trace(module, ...)`` returns: forward runs the recorded ATen graph with
    the module's current parameters and buffers as its first inputs."""

    def __init__(self, original, recording, strict=True):
        super().__init__(original)
        object.__setattr__(self, "_recordings", [recording])
        object.__setattr__(self, "_strict", strict)
        object.__setattr__(self, "_example_inputs", None)

    def forward(self, *args, **kwargs):
        from ._trace import _key, _record
        leaves, _ = pytree.tree_flatten((tuple(args), dict(kwargs)))
        key = _key(leaves)
        rec = next((r for r in self._recordings if r.key == key), None)
        if rec is None:
            # sizes are literals in the graph: other shapes get their own recording
            rec = _record(None, self._original, args, kwargs, self._strict)
            self._recordings.append(rec)
        state = dict(self.named_parameters())
        state.update(self.named_buffers())
        out = rec.gm(*[state[n] for n in rec.state_names], *leaves)
        return out

    def _graph_module(self, attr):
        return self._recordings[0].gm

    def _export_target(self):
        return self  # the recorded graph itself, not a new run of the Python code


def _export_or_explain(export, target, args, kwargs, what):
    """``ember.export`` of ``target`` on the recorded inputs; its failure (data-dependent
    Python control flow cannot be exported) says that it is ``save`` that needs the export."""
    try:
        return export(target, tuple(args), kwargs or None)
    except Exception as e:
        raise RuntimeError(f"{what}.save: ember.jit saves through ember.export, which could not "
                           f"export this program on the recorded inputs ({type(e).__name__}: "
                           f"{e}); data-dependent Python control flow cannot be saved") from e


class _FunctionAsModule(Module):
    """A function as a module's forward, so that ``ember.export`` can take it."""

    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, *args, **kwargs):
        return self.fn(*args, **kwargs)


class ScriptFunction:
    """What ``ember.jit.script(fn)`` and ``ember.jit.trace(fn, ...)`` return (PyTorch's
    ``torch.jit.ScriptFunction``): callable, with ``graph``, ``code``, ``save``."""

    def __init__(self, fn, *, name=None, _recording=None, _strict=True):
        self._fn = fn
        self.name = self.qualified_name = name or getattr(fn, "__name__", "fn")
        self.__name__ = self.name
        self.__doc__ = getattr(fn, "__doc__", None)
        self._recordings = [_recording] if _recording is not None else None
        self._strict = _strict
        self._capture = _Capture(fn, self.name) if _recording is None else None
        self._example_inputs = None

    def __call__(self, *args, **kwargs):
        if self._capture is not None:
            out = self._capture(*args, **kwargs)
            if self._example_inputs is None:
                self._example_inputs = self._capture.example_inputs
            return out
        from ._trace import _key, _record
        leaves, _ = pytree.tree_flatten((tuple(args), dict(kwargs)))
        key = _key(leaves)
        rec = next((r for r in self._recordings if r.key == key), None)
        if rec is None:
            rec = _record(self._fn, None, args, kwargs, self._strict)
            self._recordings.append(rec)
        return rec.gm(*leaves)

    def _graph_module(self, attr):
        if self._capture is not None:
            return self._capture.graph_module(attr)
        return self._recordings[0].gm

    @property
    def graph(self):
        return self._graph_module("graph").graph

    @property
    def inlined_graph(self):
        return self.graph

    @property
    def code(self):
        return self._graph_module("code").code

    def _program(self):
        from ..export import export
        if self._example_inputs is None:
            raise RuntimeError(f"ScriptFunction.save: no example inputs recorded for "
                               f"{self.name}; call it once first")
        args, kwargs = self._example_inputs
        body = self if self._capture is None else self._fn
        return _export_or_explain(export, _FunctionAsModule(body), args, kwargs, "ScriptFunction")

    def save(self, f, _extra_files=None):
        from . import _serialization
        _serialization.save(self, f, _extra_files)

    def __repr__(self):
        return f"<ember.jit.ScriptFunction object {self.name}>"


def script(obj, optimize=None, _frames_up=0, _rcb=None, example_inputs=None):
    """A module or function run through ``ember.compile(fullgraph=True, backend="eager")``,
    eagerly where that capture fails; see the package docstring for what this is and is not."""
    warnings.warn("`torch.jit.script` is deprecated. Please switch to `torch.compile` or `torch.export`.",
                  DeprecationWarning)
    if optimize is not None:
        warnings.warn("`optimize` is deprecated and has no effect. Use `with "
                      "torch.jit.optimized_execution()` instead", FutureWarning, stacklevel=2)
    if isinstance(obj, (ScriptModule, ScriptFunction)):
        return obj
    if isinstance(obj, Module):
        scripted = RecursiveScriptModule(obj)
        if example_inputs:
            for inputs in example_inputs:
                with no_grad():
                    scripted(*inputs)
        return scripted
    if isinstance(obj, type):
        # PyTorch's checks of a TorchScript class; the class itself is returned, as PyTorch
        # returns it after compiling it, and its Python methods are what run
        if issubclass(obj, Module):
            raise RuntimeError(f"Type '{obj}' cannot be compiled since it inherits from "
                               "nn.Module, pass an instance instead")
        if not issubclass(obj, enum.Enum) and len(obj.mro()) > 2:
            raise RuntimeError("TorchScript classes does not support inheritance yet. "
                               "Please directly inherit from 'object'.")
        return obj
    if callable(obj):
        if _internal.get_torchscript_modifier(obj) in (_internal.FunctionModifiers.IGNORE,
                                                       _internal.FunctionModifiers.UNUSED):
            return obj
        return ScriptFunction(obj)
    raise RuntimeError(f"ember.jit.script: cannot script an object of type {type(obj).__name__}")
