"""Random ops PyTorch builds from other ops: randperm (an empty tensor filled by
randperm.generator_out), bernoulli's functional forms (empty_like + bernoulli_), randint_like
(empty_like + random_) and the out= forms whose schemas autogen cannot derive. They serve every
device, because the ops they call have a kernel per device.
"""
from ..._core import dtype as D
from ..._core.device import contiguous_format
from ..._ops.overload import ops
from ..generic import write_checked, write_out
from .factory import empty_like, fill_new


def randperm_generator(n, generator, dtype=D.int64, layout=None, device=None,
                       pin_memory=None):
    r = ops.aten.empty.memory_format._call([n], dtype or D.int64, layout, device, pin_memory,
                                           None)
    return ops.aten.randperm.generator_out._call(n, generator, r)


def randperm(n, dtype=D.int64, layout=None, device=None, pin_memory=None):
    return randperm_generator(n, None, dtype, layout, device, pin_memory)


def randperm_out(n, out):
    return ops.aten.randperm.generator_out._call(n, None, out)


def bernoulli(self, generator=None):
    """Each element is 1 with probability ``self`` at that place. As ATen's, the result is
    contiguous whatever ``self``'s strides (LEGACY_CONTIGUOUS_MEMORY_FORMAT), so the draws fill
    it in logical order."""
    return fill_new(ops.aten.bernoulli_.Tensor._call, _contiguous_like(self), self, generator)


def bernoulli_p(self, p, generator=None):
    return fill_new(ops.aten.bernoulli_.float._call, _contiguous_like(self), p, generator)


def _contiguous_like(self):
    return empty_like(self, memory_format=contiguous_format)


def bernoulli_Tensor(self, p, generator=None):
    return ops.aten.bernoulli_.Tensor._call(empty_like(self), p, generator)


def bernoulli_float_out(self, p=0.5, generator=None, out=None):
    write_checked("bernoulli.p", (self, p, generator), (bernoulli_p(self, p, generator),), (out,),
                  "bernoulli.float_out")
    return out


def randint_like_low_dtype(self, low, high, dtype=None, layout=None, device=None,
                           pin_memory=None, memory_format=None):
    if low >= high:  # checked here too so that meta tensors (whose random_ checks nothing) fail
        raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={low} "
                           f">= to={high}")
    r = empty_like(self, dtype, layout, device, pin_memory, memory_format)
    return getattr(ops.aten.random_, "from")._call(r, low, high, None)


def randint_like(self, high, dtype=None, layout=None, device=None, pin_memory=None,
                 memory_format=None):
    return randint_like_low_dtype(self, 0, high, dtype, layout, device, pin_memory, memory_format)


def randint_like_Tensor(self, high, dtype=None, layout=None, device=None, pin_memory=None,
                        memory_format=None):
    if high._size or high._device.type != "cpu":
        raise RuntimeError("high must be a scalar tensor and on CPU")
    return randint_like_low_dtype(self, 0, int(high.item()), dtype, layout, device, pin_memory,
                                  memory_format)


# randint_like's out= forms draw in out's dtype, as PyTorch's do (any out dtype is taken)

def randint_like_out(self, high, memory_format=None, out=None):
    r = randint_like(self, high, out._dtype, memory_format=memory_format)
    write_out("randint_like", (r,), (out,))
    return out


def randint_like_low_dtype_out(self, low, high, memory_format=None, out=None):
    r = randint_like_low_dtype(self, low, high, out._dtype, memory_format=memory_format)
    write_out("randint_like", (r,), (out,))
    return out


def randint_like_Tensor_out(self, high, memory_format=None, out=None):
    r = randint_like_Tensor(self, high, out._dtype, memory_format=memory_format)
    write_out("randint_like", (r,), (out,))
    return out


def poisson_out(self, generator=None, out=None):
    write_checked("poisson", (self, generator), (ops.aten.poisson.default._call(self, generator),),
                  (out,), "poisson.out")
    return out
