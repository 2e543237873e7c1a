"""Shape, dtype, device and argument rules of the operators, one module per op area, for every
backend: the CPU kernels compute what a rule allows, the Meta kernels allocate what it says, and
the CUDA kernels call the same functions. A rule raises PyTorch's error for bad arguments and
returns what the result will be (its dtype, its shape); it never touches data and never imports
a backend's kernel module (``tests/test_architecture.py`` checks that)."""


def check_failed(condition):
    """The message of ATen's ``TORCH_CHECK(condition)`` with no message of its own."""
    return (f"Expected {condition} to be true, but got false.  (Could this error message be "
            f"improved?  If so, please report an enhancement request to PyTorch.)")
