"""Meta kernels of frexp and complex (``cpu/pointwise_more.py``): their rules
(``rules/pointwise.py``), no data. heaviside, gcd, lcm and nextafter are pointwise rows whose
Meta kernels ``meta/pointwise.py`` registers."""
from ..._core import dtype as D
from ..._core.device import META
from ..._core.tensor_impl import empty_tensor
from ..rules.pointwise import broadcast_shape, check_complex, check_frexp


def meta_frexp_Tensor(self):
    check_frexp(self)
    return (empty_tensor(self._size, self._dtype, META),
            empty_tensor(self._size, D.int32, META))


def meta_complex(real, imag):
    dt = check_complex(real, imag)
    return empty_tensor(broadcast_shape(real, imag), dt, META)
