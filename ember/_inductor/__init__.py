"""ember._inductor (PyTorch's ``torch._inductor``): lowers core-ATen graphs to a loop IR, fuses
the loops and emits C/OpenMP kernels built into CPython extension modules.

The stages, in the order a graph meets them: ``decomposition`` (the table AOTAutograd traces
with), ``lowering`` + ``graph`` (fx -> IR), ``scheduler`` (fusion), ``codegen`` (C kernels and
the Python wrapper), ``codecache`` (build and load), ``compile_fx`` (the backend).
"""


def cudagraph_mark_step_begin():
    """``torch._inductor.cudagraph_mark_step_begin``, where older code calls it: the same as
    ``ember.compiler.cudagraph_mark_step_begin`` (which says why it has nothing to do)."""
    from ..compiler import cudagraph_mark_step_begin as mark
    mark()
