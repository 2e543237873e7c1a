"""Backend kernels, one package per dispatch key: ``cpu`` (NumPy), ``meta`` (shapes and dtypes
only), ``composite`` (device-independent kernels written in ember ops or pure metadata), and
``generic`` (the out=/in-place wrappers that ``autogen`` derives from a functional op)."""
