"""Activation checkpointing and offloading as module wrappers (PyTorch's
``torch.distributed.algorithms._checkpoint``)."""
