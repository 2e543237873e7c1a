"""Lowerings that choose among kernels by timing them (PyTorch's ``torch._inductor.kernel``):
``mm`` (mm, addmm, bmm under ``max-autotune``)."""
from . import mm  # noqa: F401  (registers the lowerings)
