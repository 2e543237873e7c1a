"""``ember.jit.trace``: record the ATen ops a function or module runs on example inputs into an
``ember.fx`` graph (``make_fx`` on real tensors, parameters and buffers lifted to graph inputs so
the traced module keeps sharing them with the original), and wrap it as a ``TracedModule`` /
``ScriptFunction``. Python control flow runs once, at trace time: converting a tensor to a Python
value is warned about with PyTorch's ``TracerWarning``, and ``check_trace`` re-traces and re-runs
as PyTorch does."""
import copy
import sys
import warnings

from .. import no_grad
from .._tensor import Tensor
from ..utils import _pytree as pytree
from ..utils._python_dispatch import TorchDispatchMode
from . import _internal

__all__ = ["trace", "trace_module", "TracerWarning", "TracingCheckError"]


class TracerWarning(Warning):
    """A construct the tracer cannot record (PyTorch's ``torch.jit.TracerWarning``)."""

    @staticmethod
    def ignore_lib_warnings():
        # the library's own shape checks convert tensors to Python values too
        warnings.filterwarnings("ignore", category=TracerWarning, module="ember.(?!jit)")


TracerWarning.ignore_lib_warnings()


def _indent(s):
    return "\n".join("\t" + line for line in s.splitlines())


class TracingCheckError(Exception):
    def __init__(self, graph_diff_error, tensor_compare_error, extra_msg=None):
        self.message = "Tracing failed sanity checks!\n"
        if extra_msg is not None:
            self.message += extra_msg + "\n"
        if graph_diff_error is not None:
            self.message += "ERROR: Graphs differed across invocations!\n"
            self.message += _indent(graph_diff_error) + "\n"
        if tensor_compare_error is not None:
            self.message += ("ERROR: Tensor-valued Constant nodes differed in value across "
                             "invocations. This often indicates that the tracer has encountered "
                             "untraceable code.\n")
            self.message += _indent(tensor_compare_error) + "\n"
        super().__init__(self.message)


# Tensor methods that hand a value to Python, and the words of PyTorch's warning for each
_CONVERSIONS = {"__bool__": "a Python boolean", "__int__": "a Python integer",
                "__float__": "a Python float", "__index__": "a Python index",
                "__complex__": "a Python complex", "item": "a Python number"}


class _ConversionWarnings(TorchDispatchMode):
    """Sits above the tracer's mode: the op that reads a tensor's value (``_local_scalar_dense``,
    reached from ``Tensor.__bool__``/``item``/...) is where the trace stops following data, so it
    is warned about at the user's line, as PyTorch's tracer does."""

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if func.overloadpacket.__name__ in ("_local_scalar_dense", "item", "is_nonzero"):
            self._warn()
        return func(*args, **(kwargs or {}))

    @staticmethod
    def _warn():
        import ember._tensor as tensor_module
        frame = sys._getframe(2)
        kind = "a Python number"
        # which Tensor conversion method asked for the value
        while frame is not None:
            code = frame.f_code
            if code.co_filename == tensor_module.__file__ and code.co_name in _CONVERSIONS:
                kind = _CONVERSIONS[code.co_name]
                break
            frame = frame.f_back
        _internal._warn_at_user_frame(
            f"Converting a tensor to {kind} might cause the trace to be incorrect. We can't "
            "record the data flow of Python values, so this value will be treated as a "
            "constant in the future. This means that the trace might not generalize to other "
            "inputs!", TracerWarning, frame or sys._getframe(2))


_STRICT_MSG = ("Encountering a {} at the output of the tracer might cause the trace to be "
               "incorrect, this is only valid if the container structure does not change based "
               "on the module's inputs. Consider using a constant container instead (e.g. for "
               "`list`, use a `tuple` instead. for `dict`, use a `NamedTuple` instead). If you "
               "absolutely need this and know the side effects, pass strict=False to trace() to "
               "allow this behavior.")


def _check_strict(out):
    """PyTorch's strict mode: a dict output is an error, a list output a warning."""
    if isinstance(out, dict):
        raise RuntimeError(_STRICT_MSG.format("dict"))
    if isinstance(out, list):
        _internal._warn_at_user_frame(_STRICT_MSG.format("list"), TracerWarning)
    if isinstance(out, (tuple, list)):
        for o in out:
            _check_strict(o)


def _input_names(fn, n):
    import inspect
    try:
        names = [p.name for p in inspect.signature(fn).parameters.values()
                 if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        names = []
    return [names[i] if i < len(names) else f"input_{i}" for i in range(n)]


class _Recording:
    """One graph: ``gm`` takes the state (parameters, then buffers, by ``state_names``) and then
    the flattened example inputs; ``in_spec`` rebuilds ``(args, kwargs)``."""

    def __init__(self, gm, state_names, in_spec, key):
        self.gm, self.state_names, self.in_spec, self.key = gm, state_names, in_spec, key


def _key(leaves):
    """Shapes, dtypes and devices the graph is specialised to (sizes are literals in it)."""
    return tuple((tuple(x.shape), x.dtype, x.device) if isinstance(x, Tensor) else
                 (type(x), x) for x in leaves)


def _record(fn, module, args, kwargs, strict):
    from ..func import functional_call
    from ..fx.experimental.proxy_tensor import make_fx
    state = {}
    if module is not None:
        state.update({n: p.detach() for n, p in module.named_parameters()})
        state.update(dict(module.named_buffers()))
    state_names = list(state)
    leaves, in_spec = pytree.tree_flatten((tuple(args), dict(kwargs)))
    n_state = len(state_names)

    def flat_fn(*flat):
        a, k = pytree.tree_unflatten(list(flat[n_state:]), in_spec)
        with _ConversionWarnings():
            if module is not None:
                out = functional_call(module, dict(zip(state_names, flat[:n_state])), a, k)
            else:
                out = fn(*a, **k)
        if strict:
            _check_strict(out)
        return out

    _internal._tracing_depth += 1
    try:
        with no_grad():
            gm = make_fx(flat_fn, tracing_mode="real")(*state.values(), *leaves)
    finally:
        _internal._tracing_depth -= 1
    # PyTorch-like input names: the state by attribute path, the inputs by parameter name
    target = module.forward if module is not None else fn
    names = [n.replace(".", "_") for n in state_names] + \
        _input_names(target, len(args)) + list(kwargs)
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    if len(placeholders) == len(state_names) + len(leaves):
        # one placeholder per leaf: the kwargs' leaves keep their keys' names
        names = names[:n_state] + [
            names[n_state + i] if i < len(names) - n_state else f"input_{i}"
            for i in range(len(leaves))]
        for node, name in zip(placeholders, names):
            node.target = node.name = gm.graph._target_to_str(name) \
                if hasattr(gm.graph, "_target_to_str") else name
    gm.graph.eliminate_dead_code()
    gm.recompile()
    return _Recording(gm, state_names, in_spec, _key(leaves))


def _as_tuple(example_inputs):
    if isinstance(example_inputs, (Tensor, dict)):
        return (example_inputs,)
    if not isinstance(example_inputs, tuple):
        return tuple(example_inputs) if isinstance(example_inputs, list) else (example_inputs,)
    return example_inputs


def _clone_inputs(x):
    return pytree.tree_map(lambda t: t.detach().clone().requires_grad_(t.requires_grad)
                           if isinstance(t, Tensor) else copy.deepcopy(t), x)


def _run_check(traced, func, module, check_inputs, check_tolerance, strict):
    """PyTorch's ``_check_trace``: re-trace on each check input (the graph must be the same),
    then compare the trace's outputs with the Python function's."""
    from ..random import fork_rng
    from ..testing import assert_close
    for inputs in check_inputs:
        args, kwargs = inputs if isinstance(inputs, _KwInputs) else (_as_tuple(inputs), {})
        leaves, _ = pytree.tree_flatten((tuple(args), dict(kwargs)))
        rec = traced._recordings[0]
        if _key(leaves) == rec.key:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", TracerWarning)
                again = _record(func, module, _clone_inputs(args), _clone_inputs(kwargs), strict)
            if again.gm.code != rec.gm.code:
                import difflib
                diff = "\n".join(difflib.unified_diff(
                    rec.gm.code.splitlines(), again.gm.code.splitlines(),
                    "First diverging operator:", "", lineterm=""))
                raise TracingCheckError(diff, None)
        with no_grad(), fork_rng():
            traced_outs = traced(*_clone_inputs(args), **_clone_inputs(kwargs))
        with no_grad(), fork_rng():
            callee = module if module is not None else func
            fn_outs = callee(*_clone_inputs(args), **_clone_inputs(kwargs))
        t_leaves = [t for t in pytree.tree_leaves(traced_outs) if isinstance(t, Tensor)]
        f_leaves = [t for t in pytree.tree_leaves(fn_outs) if isinstance(t, Tensor)]
        if len(t_leaves) != len(f_leaves):
            raise TracingCheckError(None, None, extra_msg="ERROR: Traced function outputs do not "
                                    "match the Python function outputs")
        for i, (orig, ref) in enumerate(zip(t_leaves, f_leaves)):
            try:
                assert_close(orig.double(), ref.double(), rtol=check_tolerance,
                             atol=1e-5, equal_nan=True)
            except AssertionError as e:
                warnings.warn(f"Output nr {i + 1}. of the traced function does not match the "
                              "corresponding output of the Python function. Detailed error:\n"
                              f"{e}", category=TracerWarning, stacklevel=4)


class _KwInputs(tuple):
    """(args, kwargs) of one check input given as keyword arguments."""


def trace(func, example_inputs=None, optimize=None, check_trace=True, check_inputs=None,
          check_tolerance=1e-5, strict=True, _force_outplace=False, _module_class=None,
          _compilation_unit=None, example_kwarg_inputs=None, _store_inputs=True):
    """Run ``func`` on ``example_inputs`` and return the recorded graph as a ``TracedModule``
    (for an ``nn.Module``) or a ``ScriptFunction`` (for a function); see the module docstring."""
    from ..nn import Module
    from ._script import ScriptFunction, ScriptModule, TracedModule
    warnings.warn("`torch.jit.trace` is deprecated. Please switch to `torch.compile` or `torch.export`.",
                  DeprecationWarning)
    if isinstance(func, ScriptModule):
        warnings.warn("The input to trace is already a ScriptModule, tracing it is a no-op. "
                      "Returning the object as is.", stacklevel=2)
        return func
    if optimize is not None:
        warnings.warn("`optimize` is deprecated and has no effect. Use `with "
                      "torch.jit.optimized_execution()` instead", FutureWarning, stacklevel=2)
    if example_inputs is None and example_kwarg_inputs is None:
        raise RuntimeError("example_kwarg_inputs or example_inputs must be provided to trace")
    if example_kwarg_inputs is not None and not isinstance(example_kwarg_inputs, dict):
        raise RuntimeError("example_kwarg_inputs should be a dict")
    args = _as_tuple(example_inputs) if example_inputs is not None else ()
    kwargs = dict(example_kwarg_inputs or {})
    module = func if isinstance(func, Module) else None
    if module is None and hasattr(func, "__self__") and isinstance(func.__self__, Module) \
            and func.__name__ == "forward":
        module = func.__self__
    rec = _record(func, module, args, kwargs, strict)
    name = type(module).__name__ if module is not None else getattr(func, "__name__", "fn")
    if module is not None:
        traced = TracedModule(module, rec, strict=strict)
    else:
        traced = ScriptFunction(func, name=name, _recording=rec, _strict=strict)
    if _store_inputs:
        traced._example_inputs = (_clone_inputs(args), _clone_inputs(kwargs))
    if check_trace:
        checks = [(_KwInputs((args, kwargs)))] if check_inputs is None else \
            [c if not isinstance(c, dict) else _KwInputs(((), c)) for c in check_inputs]
        _run_check(traced, func, module, checks, check_tolerance, strict)
    return traced


def trace_module(mod, inputs, check_trace=True, check_inputs=None, check_tolerance=1e-5,
                 strict=True, _force_outplace=False, _module_class=None,
                 _compilation_unit=None, example_inputs_is_kwarg=False, _store_inputs=True):
    """``inputs``: ``{"forward": example_inputs}`` (PyTorch's form). Only ``forward`` is traced
    into the returned module; other method names raise (ember records one entry point)."""
    warnings.warn("`torch.jit.trace_method` is deprecated. Please switch to `torch.compile` or `torch.export`.",
                  DeprecationWarning)
    if not isinstance(inputs, dict):
        raise AttributeError("expected a dictionary of (method_name, input) pairs")
    extra = [k for k in inputs if k != "forward"]
    if extra:
        raise NotImplementedError(f"ember.jit.trace_module traces forward only, not {extra}")
    kw = {"example_kwarg_inputs": inputs["forward"]} if example_inputs_is_kwarg else \
        {"example_inputs": inputs["forward"]}
    return trace(mod, check_trace=check_trace, check_inputs=check_inputs,
                 check_tolerance=check_tolerance, strict=strict, _store_inputs=_store_inputs,
                 **kw)
