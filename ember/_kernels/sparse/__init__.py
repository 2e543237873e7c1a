"""Kernels of sparse COO tensors (the SparseCPU and SparseCUDA dispatch keys): written in ember
ops on a sparse tensor's indices and values, which are dense tensors on its device, so one kernel
serves both keys (``coo.py``)."""
