"""ember._inductor (PyTorch's torch._inductor): lowers core-ATen graphs to a loop IR, fuses and
emits C/OpenMP kernels."""
