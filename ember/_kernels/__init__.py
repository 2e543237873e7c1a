"""Backend kernels, one package per dispatch key: ``cpu`` (NumPy), ``meta`` (shapes and dtypes
only), ``composite`` (device-independent kernels written in ember ops or pure metadata),
``generic`` (the out=/in-place wrappers that ``autogen`` derives from a functional op), and
``math_bits`` (the Conjugate and Negative keys: lazy conjugate and negative views). The
shape/dtype/argument rules every backend applies are ``rules`` (which imports no backend);
kernels generated from table rows reach the dispatcher through ``registration``."""

import warnings as _warnings

# The hot path of add/sub/mul skips NumPy's error-state context (it costs more than the
# addition), so ``inf * 0`` would make NumPy warn where PyTorch is silent. Floating-point
# warnings raised from ember's own kernel modules are NumPy's, never ember's: ignore them there.
_warnings.filterwarnings("ignore", r"(invalid value|divide by zero|overflow) encountered",
                         RuntimeWarning, r"ember\._kernels\.")
