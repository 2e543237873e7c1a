"""``ember.special``: PyTorch's ``torch.special`` functions. Each is the generated binding of its
``special_*`` aten op (``python_module: special`` in native_functions.yaml): CPU kernels for the
functions of their own (ember/_kernels/cpu/special.py), decompositions for the aliases of
existing ops (``expit`` is ``sigmoid``, ``gammainc`` is ``igamma`` ...), so ``out=``, type
promotion, broadcasting and autograd behave as for every other op."""
from .._C import _special as _bindings  # the generated special_* bindings

__all__ = ['airy_ai', 'bessel_j0', 'bessel_j1', 'bessel_y0', 'bessel_y1', 'chebyshev_polynomial_t',
           'chebyshev_polynomial_u', 'chebyshev_polynomial_v', 'chebyshev_polynomial_w',
           'digamma', 'entr', 'erf', 'erfc', 'erfcx', 'erfinv', 'exp2', 'expit', 'expm1',
           'gammainc', 'gammaincc', 'gammaln', 'hermite_polynomial_h', 'hermite_polynomial_he',
           'i0', 'i0e', 'i1', 'i1e', 'laguerre_polynomial_l', 'legendre_polynomial_p', 'log1p',
           'log_ndtr', 'log_softmax', 'logit', 'logsumexp', 'modified_bessel_i0',
           'modified_bessel_i1', 'modified_bessel_k0', 'modified_bessel_k1', 'multigammaln',
           'ndtr', 'ndtri', 'polygamma', 'psi', 'round', 'shifted_chebyshev_polynomial_t',
           'shifted_chebyshev_polynomial_u', 'shifted_chebyshev_polynomial_v',
           'shifted_chebyshev_polynomial_w', 'scaled_modified_bessel_k0',
           'scaled_modified_bessel_k1', 'sinc', 'softmax', 'spherical_bessel_j0', 'xlog1py',
           'xlogy', 'zeta']

globals().update({_name: getattr(_bindings, "special_" + _name) for _name in __all__})
