"""Code generation: C kernels (``cpp``) and the Python wrapper that calls them (``wrapper``)."""
