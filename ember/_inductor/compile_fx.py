"""The ``inductor`` backend (PyTorch's ``torch._inductor.compile_fx``).

``compile_fx`` runs AOTAutograd with Inductor's decompositions and the min-cut partitioner;
each resulting graph (forward, backward, or inference) goes to ``compile_fx_inner``:
lower to IR (``graph``), fuse (``scheduler``), write C and the Python wrapper
(``codegen``), build the C module (``codecache``) and return the wrapper's ``call``. Under
``config.cpp_wrapper`` (``mode="reduce-overhead"``) the wrapper is also written in C, into the
same module, and that ``call`` is the one returned (``codegen/cpp_wrapper.py``).

Without a working C compiler the graphs run as AOTAutograd traced them (``aot_eager``) after
one warning naming ``CC``/``CXX``; a compile error in generated code raises.
"""
import hashlib
import itertools
import logging
import os
import time
import warnings

from .._core.codegen import compile_source
from .._dynamo import is_static_address
from ..nn.parameter import Parameter
from . import codecache, config, cudagraphs
from .codegen.cpp import module_source
from .codegen.cpp_wrapper import CppWrapperCodeGen
from .codegen.wrapper import WrapperCodeGen
from .exc import InvalidCxxCompiler
from .graph import GraphLowering
from .scheduler import Scheduler
from .virtualized import set_graph_handler

__all__ = ["compile_fx", "compile_fx_inner", "CompiledGraph"]

log = logging.getLogger("ember._inductor")
output_code_log = logging.getLogger("ember._inductor.__output_code")
_graph_ids = itertools.count()
_warned_no_compiler = False


class CompiledGraph:
    """A compiled graph: ``call(args)`` (boxed: it takes the argument list and clears it),
    with the generated sources kept for inspection: ``source_code`` the Python wrapper (the one
    that runs unless ``config.cpp_wrapper``), ``c_source_code`` the C module (kernels, and the C
    wrapper that runs under ``cpp_wrapper``)."""

    _boxed_call = True

    def __init__(self, call, wrapper_source, c_source, path, fallbacks):
        self.current_callable = call
        self.source_code = wrapper_source
        self.c_source_code = c_source
        self.path = path
        self.fallbacks = fallbacks

    def __call__(self, args):
        return self.current_callable(args)


def compile_fx_inner(gm, example_inputs, *, graph_name=None):
    """Lower, fuse and compile one AOT graph; returns a boxed callable."""
    global _warned_no_compiler
    name = graph_name or f"graph_{next(_graph_ids)}"
    times = {}
    t0 = time.perf_counter()
    # nodes nobody reads (the empty() a decomposed clone leaves) would run as eager calls;
    # mutating and random ops are kept (Node.is_impure)
    if gm.graph.eliminate_dead_code():
        gm.recompile()
    graph = GraphLowering(gm, example_inputs, name=name).run()
    times["lowering"] = time.perf_counter() - t0
    with set_graph_handler(graph):
        t0 = time.perf_counter()
        scheduler = Scheduler(graph)
        times["scheduling"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        wrapper = (CppWrapperCodeGen if config.cpp_wrapper else WrapperCodeGen)(graph, scheduler)
        py_src = wrapper.generate()
        ir_text = scheduler.describe() if config.debug else None
    c_wrapper = wrapper.c_wrapper if config.cpp_wrapper else None
    # named by content, so another graph or process with the same kernels (and C wrapper)
    # shares the build
    digest = hashlib.sha256("".join([k[1] for k in wrapper.kernels]
                                    + ([c_wrapper[0]] if c_wrapper else [])).encode()).hexdigest()
    module_name = f"ember_inductor_{digest[:16]}"
    try:
        c_src = module_source(module_name, wrapper.kernels,
                              vector_math=codecache.compiler_features()["mvec"],
                              wrapper=c_wrapper)
        times["codegen"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        kernels = codecache.CppCodeCache.load(c_src, module_name)
    except InvalidCxxCompiler as e:
        if not _warned_no_compiler:
            warnings.warn(f"{e}\nThe compiled graphs run eagerly (aot_eager) instead.")
            _warned_no_compiler = True
        return gm
    times["c build"] = time.perf_counter() - t0
    path = codecache.source_path(c_src, module_name)
    # beside the C source (several wrappers may share one module), named by content
    py_digest = hashlib.sha256(py_src.encode()).hexdigest()[:16]
    py_path = os.path.join(os.path.dirname(path), f"wrapper_{py_digest}.py")
    codecache.write_atomic(py_path, py_src)
    namespace = dict(wrapper.constants, **graph.constants, kernels=kernels)
    compile_source(py_src, py_path, namespace)
    call = namespace["call"]
    if c_wrapper:
        # the Python wrapper stays for reading (and is printed); the C one runs
        call = kernels.bind(wrapper.constant_values(namespace))
        output_code_log.debug("Output code written to: %s\n# cpp_wrapper: the C call() at the "
                              "end of the C module replaces this Python wrapper\n%s\n"
                              "# C kernels and wrapper: %s\n%s", py_path, py_src, path, c_src)
    else:
        output_code_log.debug("Output code written to: %s\n%s\n# C kernels: %s\n%s",
                              py_path, py_src, path, c_src)
    if config.debug:
        ir_path = os.path.join(os.path.dirname(path), f"ir_{py_digest}.txt")
        codecache.write_atomic(ir_path, ir_text)
        log.warning("inductor %s: IR written to %s", name, ir_path)
    log.info("inductor %s: %d kernels, %d fallbacks; %s", name, len(wrapper.kernels),
             sum(graph.fallbacks.values()),
             ", ".join(f"{k} {v * 1e3:.1f} ms" for k, v in times.items()))
    return CompiledGraph(call, py_src, c_src, path, graph.fallbacks)


def compile_fx(model, example_inputs, *, mode=None, options=None, **kwargs):
    """``ember.compile(backend="inductor")``: AOTAutograd with Inductor's decompositions,
    every graph compiled by :func:`compile_fx_inner`. ``ember.compile``'s ``options=`` arrive
    as keyword arguments (``config`` names)."""
    from .._functorch.aot_autograd import aot_module_simplified, \
        min_cut_rematerialization_partition
    from .decomposition import select_decomp_table
    with config.patch(_options(mode, {**(options or {}), **kwargs})):
        settings = config.snapshot()
    num_example_inputs = len(example_inputs)

    def compiler(is_backward):
        def inner(gm, inputs):
            with config.patch(settings):
                if not config.triton.cudagraphs:
                    return compile_fx_inner(gm, inputs)
                reason = cudagraphs.skip_reason(gm)
                if reason is not None:
                    cudagraphs.log_skip(reason)
                    return compile_fx_inner(gm, inputs)
                # a replayed graph's wrapper runs at the warm-up and the capture only: not
                # worth a C wrapper (whose build takes seconds for a big graph)
                with config.patch(cpp_wrapper=False):
                    compiled = compile_fx_inner(gm, inputs)
            return cudagraphs.CUDAGraphed(compiled, fixed(gm, inputs, is_backward))
        return inner

    def fixed(gm, inputs, is_backward):
        """The inputs a graph reads where they lie (PyTorch's static inputs). Backward: the
        values saved by the forward (all but the tangents), which the forward's replays leave
        at the same addresses. Forward: the parameters, those aot_module_simplified lifted
        (first) and those Dynamo made graph inputs, and tensors marked with
        ``ember._dynamo.mark_static_address``."""
        if is_backward:
            return range(sum(not n.name.startswith("tangents") for n in _placeholders(gm)))
        lifted = len(inputs) - num_example_inputs
        return list(range(lifted)) + [
            lifted + i for i, x in enumerate(example_inputs)
            if isinstance(x, Parameter) or is_static_address(x)]
    on_cuda = any(getattr(x, "device", None) is not None and x.device.type == "cuda"
                  for x in example_inputs)
    return aot_module_simplified(model, example_inputs, fw_compiler=compiler(False),
                                 bw_compiler=compiler(True),
                                 decompositions=select_decomp_table("cuda" if on_cuda
                                                                    else "cpu"),
                                 partition_fn=min_cut_rematerialization_partition)


def _placeholders(gm):
    return [n for n in gm.graph.nodes if n.op == "placeholder"]


_warned_modes = set()

# mode -> the config settings it stands for (PyTorch's torch._inductor.list_mode_options, less
# Triton's coordinate descent). CUDA graphs take the graphs on a CUDA device; on the CPU,
# reduce-overhead's part is the wrapper in C, which removes the per-call overhead there.
MODE_OPTIONS = {
    "default": {},
    "reduce-overhead": {"triton.cudagraphs": True, "cpp_wrapper": True},
    "max-autotune-no-cudagraphs": {"max_autotune": True},
    "max-autotune": {"max_autotune": True, "triton.cudagraphs": True},
}


def _options(mode, options):
    # the mode's settings first: options= given beside a mode override them, as in PyTorch
    opts = {**MODE_OPTIONS.get(mode or "default", {}), **(options or {})}
    if mode not in (None, *MODE_OPTIONS) and mode not in _warned_modes:
        _warned_modes.add(mode)
        warnings.warn(f"ember.compile(mode={mode!r}): ember's Inductor does not implement this "
                      f"mode yet (it implements {', '.join(map(repr, MODE_OPTIONS))}); the "
                      "graphs compile as mode='default'")
    unknown = [k for k in opts if k not in config.known_options()]
    if unknown:
        raise RuntimeError(f"Unexpected optimization option {unknown[0]}, known options are "
                           f"{config.known_options()}")
    return opts
