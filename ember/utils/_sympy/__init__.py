"""sympy helpers for symbolic shapes (PyTorch's ``torch.utils._sympy``)."""
