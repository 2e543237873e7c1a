"""Inductor's settings (PyTorch's ``torch._inductor.config``), read when a graph compiles."""
import os
import sys

# threads the generated kernels use (OpenMP); None: ember.get_num_threads()
threads = None
# most nodes one fused kernel may hold
max_fusion_size = 64
# a kernel runs its outer loop on several threads when it touches at least this many elements
parallel_threshold = 262144
# a pointwise value read by up to inline_max_users consumers is recomputed in each of them
# when it costs at most inline_max_ops ops per element, instead of being stored
inline_max_users = 4
inline_max_ops = 8
# a kernel-private intermediate up to this many bytes per row lives on the stack, not in memory
row_local_max_bytes = 64 * 1024
# a row kernel moving at least streaming_store_min_bytes (None: the size of the CPU's
# last-level cache) writes its output rows with streaming stores, on x86-64
# (codegen/cpp.py's CppKernel.streamed)
streaming_stores = True
streaming_store_min_bytes = None
# the graph's wrapper in C, compiled into its kernel module, so a call is one C call (PyTorch's
# name; set by mode="reduce-overhead" on the CPU): no Python between kernels
cpp_wrapper = False
# mode="max-autotune": matrix products (mm, addmm, bmm) choose, by timing each once per shape,
# between the eager BLAS call and the C GEMM template with their pointwise consumers fused in
# (select_algorithm); max_autotune_gemm asks for that without the rest of max-autotune
max_autotune = False
max_autotune_gemm = False
# the choices autotuning may take, comma-separated: ATEN (the eager op), CPP (the C template)
max_autotune_gemm_backends = "ATEN,CPP"
# write the IR of each graph next to its generated code (also TORCH_COMPILE_DEBUG=1)
debug = os.environ.get("TORCH_COMPILE_DEBUG", "0") == "1"


class triton:
    """PyTorch's ``config.triton`` group (named for its GPU code generator), of which ember has
    the CUDA graphs switch."""
    # each compiled graph on a CUDA device runs as a CUDA graph: captured at its first call and
    # replayed after (set by mode="reduce-overhead"; cudagraphs.py)
    cudagraphs = False


_OPTIONS = ("threads", "max_fusion_size", "parallel_threshold", "inline_max_users",
            "inline_max_ops", "row_local_max_bytes", "streaming_stores",
            "streaming_store_min_bytes", "cpp_wrapper", "max_autotune",
            "max_autotune_gemm", "max_autotune_gemm_backends", "debug", "triton.cudagraphs")


def known_options():
    return list(_OPTIONS)


def _holder(name):
    """(the object holding setting ``name``, its attribute): a group's for a dotted name."""
    group, _, attr = name.rpartition(".")
    return (globals()[group] if group else _this), attr


def get(name):
    holder, attr = _holder(name)
    return getattr(holder, attr)


def _set(name, value):
    holder, attr = _holder(name)
    setattr(holder, attr, value)


def snapshot():
    """The current settings, for :func:`patch` to restore later (a compiled graph keeps the
    settings of the ``ember.compile`` call that made it)."""
    return {k: get(k) for k in _OPTIONS}


class patch:
    """``with config.patch(threads=1): ...`` or ``config.patch({...})``: settings changed
    inside the block only."""

    def __init__(self, changes=None, **kwargs):
        self.changes = dict(changes or {}, **kwargs)

    def __enter__(self):
        self.prior = {k: get(k) for k in self.changes}
        for k, v in self.changes.items():
            _set(k, v)

    def __exit__(self, *exc):
        for k, v in self.prior.items():
            _set(k, v)


_this = sys.modules[__name__]
