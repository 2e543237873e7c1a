"""Inductor's settings (PyTorch's ``torch._inductor.config``), read when a graph compiles."""
import os

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


_OPTIONS = ("threads", "max_fusion_size", "parallel_threshold", "inline_max_users",
            "inline_max_ops", "row_local_max_bytes", "streaming_stores",
            "streaming_store_min_bytes", "cpp_wrapper", "max_autotune",
            "max_autotune_gemm", "max_autotune_gemm_backends", "debug")


def known_options():
    return list(_OPTIONS)


def snapshot():
    """The current settings, for :func:`patch` to restore later (a compiled graph keeps the
    settings of the ``ember.compile`` call that made it)."""
    return {k: globals()[k] for k in _OPTIONS}


class patch:
    """``with config.patch(threads=1): ...`` or ``config.patch({...})``: settings changed
    inside the block only."""

    def __init__(self, changes=None, **kwargs):
        self.changes = dict(changes or {}, **kwargs)

    def __enter__(self):
        g = globals()
        self.prior = {k: g[k] for k in self.changes}
        g.update(self.changes)

    def __exit__(self, *exc):
        globals().update(self.prior)
