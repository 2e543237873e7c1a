"""Compiler backends for captured graphs (PyTorch's torch._dynamo.backends)."""
