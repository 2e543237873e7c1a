"""ember._inductor (PyTorch's torch._inductor)"""
