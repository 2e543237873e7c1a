"""TorchDynamo for ember: capture Python functions and modules into ``ember.fx`` graphs.

``ember.compile(fn)`` (or ``ember._dynamo.optimize(backend)(fn)``) returns a wrapper that owns
the call: it checks the guards of the cached entries for ``fn``'s code object (one generated
guard function per entry) and runs the matching residual code; on a miss the bytecode (CPython
3.11/3.12) is interpreted symbolically over FakeTensors (``symbolic_convert``), tensor ops go
into an fx graph handed to the backend (``backends.registry``), and graph breaks continue in
generated resume functions (``resume_execution``). ``explain`` reports graphs, breaks and
guards.

Layout (PyTorch's): ``eval_frame`` (entry points, ``disable``, ``OptimizedModule``, the
stance), ``decorators`` (``set_stance``, ``run``, ``graph_break``, ``disallow_in_graph``,
``substitute_in_graph``, ``mark_static``, ...), ``convert_frame`` (the per-code cache, misses,
recompiles), ``symbolic_convert`` (the interpreter), ``variables/`` (symbolic values),
``guards`` and ``source``, ``output_graph`` (graph, side effects, residual code),
``resume_execution``, ``backends/``, ``testing``, ``exc``, ``config``.

Dynamic shapes: ``ember.compile(dynamic=None)`` specialises sizes first and recompiles once with
a dim symbolic when it sees a second size (automatic dynamic); ``dynamic=True`` makes input sizes
symbolic (``SymInt``, ``ember.fx.experimental.symbolic_shapes``) from the start and
``mark_dynamic`` one dim; the ShapeEnv's guards (ranges, equalities, relations branched on)
replace the exact-size guards. A graph break is
resumable at a call or a conditional jump of the compiled frame (inside ``no_grad`` /
``enable_grad`` blocks too); anywhere else (inside ``autocast``, with a live closure created in
the frame) the frame runs eagerly, as PyTorch's "skip frame".
"""
from . import config, exc  # noqa: F401
from .backends.registry import list_backends, lookup_backend, register_backend  # noqa: F401
from .decorators import (disallow_in_graph, error_on_graph_break, forbid_in_graph,  # noqa: F401
                         graph_break, is_dynamo_disable_recursive, mark_static, run,
                         set_stance, skip_frame, substitute_in_graph)
from .eval_frame import (OptimizedModule, allow_in_graph, assume_constant_result,  # noqa: F401
                         disable, is_compiling, optimize, optimize_assert)

__all__ = ["optimize", "optimize_assert", "disable", "allow_in_graph", "assume_constant_result",
           "reset", "explain", "list_backends", "mark_dynamic", "maybe_mark_dynamic",
           "mark_static", "mark_static_address", "register_backend", "lookup_backend",
           "is_compiling", "OptimizedModule", "config", "exc", "run", "set_stance",
           "graph_break", "skip_frame", "disallow_in_graph", "forbid_in_graph",
           "substitute_in_graph", "error_on_graph_break", "is_dynamo_disable_recursive"]


def reset():
    """Clear every cache entry and recompile counter (PyTorch's ``torch._dynamo.reset``)."""
    from . import eval_frame
    eval_frame.reset()


def explain(f, *extra_args, **extra_kwargs):
    """``explain(fn)(*args, **kwargs)`` runs ``fn`` compiled and returns an ``ExplainOutput``:
    graphs, graph breaks with their reasons and user stacks, ops per graph, guards."""
    from .backends.debugging import ExplainOutput
    from . import eval_frame
    from .utils import compile_times

    def inner(*args, **kwargs):
        reset()

        class _Rec:
            graphs, break_reasons, guards = [], [], []
        rec = _Rec()
        rec.graphs, rec.break_reasons, rec.guards = [], [], []

        def backend(gm, example_inputs):
            return gm.forward
        eval_frame._recorders.append(rec)
        try:
            opt = optimize(backend)(f)
            opt(*args, **kwargs)
            times = compile_times(repr="str")
        finally:
            eval_frame._recorders.remove(rec)
            reset()
        # (as PyTorch's: ops are the call_function nodes; a method call is not counted)
        ops_per_graph = [[n.target for n in gm.graph.nodes if n.op == "call_function"]
                         for gm in rec.graphs]
        # PyTorch's explain counts graph breaks as graph_count - 1 (-1 when nothing compiled),
        # whatever the breaks' count: a break before any op makes no graph of its own
        return ExplainOutput(rec.graphs, len(rec.graphs), len(rec.graphs) - 1,
                             rec.break_reasons, sum(len(o) for o in ops_per_graph),
                             ops_per_graph, rec.guards, times)

    if extra_args or extra_kwargs:
        import warnings
        warnings.warn("explain(f, *args, **kwargs) is deprecated, use explain(f)(*args, "
                      "**kwargs) instead.", FutureWarning, stacklevel=2)
        return inner(*extra_args, **extra_kwargs)
    return inner


def _init_logs():
    from .. import _logging
    _logging._init_from_env()


_init_logs()


def mark_dynamic(t, index, *, min=None, max=None):  # noqa: A002  (PyTorch's names)
    """Make dim ``index`` (an int or a list of ints) of ``t`` symbolic the first time a
    compiled function sees ``t`` (no specialise-then-recompile step). As PyTorch, a size of
    0 or 1 is still specialised. ``min``/``max`` bound the symbol's range: the compiled code
    is guarded to sizes inside it, and a size outside it at compile time raises
    ``ConstraintViolationError``."""
    if isinstance(index, (list, tuple)):
        for i in index:
            mark_dynamic(t, i, min=min, max=max)
        return
    from .eval_frame import _DimRange
    # PyTorch's attributes: the marked dims, and each one's range (a dim marked again takes
    # its new range)
    if not hasattr(t, "_dynamo_dynamic_indices"):
        t._dynamo_dynamic_indices = set()
        t._dynamo_dynamic_range = set()
    t._dynamo_dynamic_indices.add(index)
    t._dynamo_dynamic_range = {r for r in t._dynamo_dynamic_range if r.dim != index}
    t._dynamo_dynamic_range.add(_DimRange(index, min, max))


@forbid_in_graph
def mark_static_address(t, guard=False):
    """Mark tensor ``t`` as staying at one address across calls (a persistent buffer, say):
    a compiled graph run as a CUDA graph (``mode="reduce-overhead"``) reads it where it lies
    instead of copying it in at every call, as it does parameters. ``guard`` is PyTorch's
    choice between recompiling and re-recording when the address changes (recorded as
    PyTorch's ``_dynamo_static_input_type``); ember's graphs check the address at each call
    either way, and one found elsewhere runs the graph as compiled."""
    from .._tensor import Tensor
    if not isinstance(t, Tensor):
        raise TypeError(f"mark_static_address expects a tensor but received {type(t)}")
    t._dynamo_static_input_type = "guarded" if guard else "unguarded"


def is_static_address(t):
    """Whether ``mark_static_address`` marked tensor ``t``."""
    return getattr(t, "_dynamo_static_input_type", None) is not None


def maybe_mark_dynamic(t, index):
    """As :func:`mark_dynamic` (PyTorch's softer variant: it may still specialise)."""
    mark_dynamic(t, index)
