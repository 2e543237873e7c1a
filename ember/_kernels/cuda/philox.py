"""The random numbers of CUDA tensors: Philox4x32-10, the counter-based generator cuRAND and
PyTorch's CUDA kernels use (Salmon, Moraes, Dror, Shaw, "Parallel random numbers: as easy as 1,
2, 3", SC 2011), in NumPy. ``csrc/random.cu`` computes the same numbers on a GPU; this is what the
simulated device runs and what the GPU's kernels are checked against.

A CUDA generator's state is (seed, offset) (``ember.Generator.philox_next``): each random op
takes the next offset. Its numbers are the *word stream* of that call: counter ``j`` is
``(j mod 2**32, j div 2**32, offset mod 2**32, offset div 2**32)``, the key is the seed's two
halves, and counter ``j`` gives words ``4j .. 4j+3``. From the words (as ``random.cu``):

* uniform float32: element ``i`` is word ``i``, ``(w >> 8) * 2**-24`` in [0, 1);
* uniform float64: words ``2i, 2i+1``, 53 bits, ``((a >> 5) * 2**26 + (b >> 6)) * 2**-53``;
* normal: Box-Muller on pairs of uniforms, computed in double (float32: elements ``2m, 2m+1``
  from words ``2m, 2m+1``; float64: from words ``4m .. 4m+3``), the first uniform taken in
  (0, 1] so that its logarithm is finite;
* integers in a range of ``r`` values: ``from + w mod r`` with one word when ``r < 2**32``, with
  two (``a * 2**32 + b``) otherwise.

Scaling (``from + u * (to - from)``, ``mean + z * std``) is one multiply and one add, each
rounded, in the result's dtype (``random.cu`` uses the ``_rn`` intrinsics, so no fused
multiply-add changes a bit).
"""
import numpy as np

__all__ = ["philox4x32", "words", "uniform", "normal", "integers"]

_M0, _M1 = np.uint64(0xD2511F53), np.uint64(0xCD9E8D57)
_W0, _W1 = 0x9E3779B9, 0xBB67AE85
_LOW = np.uint64(0xFFFFFFFF)
_32 = np.uint64(32)


def philox4x32(counters, key):
    """Philox4x32-10 of uint32 ``counters`` (shape ``(..., 4)``) under ``key`` (two ints)."""
    c = [counters[..., i].astype(np.uint64) for i in range(4)]
    k0, k1 = int(key[0]) & 0xFFFFFFFF, int(key[1]) & 0xFFFFFFFF
    for r in range(10):
        if r:
            k0, k1 = (k0 + _W0) & 0xFFFFFFFF, (k1 + _W1) & 0xFFFFFFFF
        p0, p1 = c[0] * _M0, c[2] * _M1
        c = [(p1 >> _32) ^ c[1] ^ np.uint64(k0), p1 & _LOW,
             (p0 >> _32) ^ c[3] ^ np.uint64(k1), p0 & _LOW]
    return np.stack(c, axis=-1).astype(np.uint32)


def words(seed, offset, count):
    """The first ``count`` words of the stream of (seed, offset)."""
    n = -(-count // 4)
    j = np.arange(n, dtype=np.uint64)
    counters = np.empty((n, 4), np.uint32)
    counters[:, 0] = j & _LOW
    counters[:, 1] = j >> _32
    counters[:, 2] = offset & 0xFFFFFFFF
    counters[:, 3] = (offset >> 32) & 0xFFFFFFFF
    return philox4x32(counters, (seed & 0xFFFFFFFF, (seed >> 32) & 0xFFFFFFFF)).reshape(-1)[:count]


def _unit32(w, open_low=False):
    return ((w >> np.uint32(8)).astype(np.float64) + (1.0 if open_low else 0.0)) * 2.0 ** -24


def _unit53(a, b, open_low=False):
    m = (a >> np.uint32(5)).astype(np.float64) * 67108864.0 + (b >> np.uint32(6))
    return (m + (1.0 if open_low else 0.0)) * 2.0 ** -53


def uniform(seed, offset, n, dtype, low=0.0, high=1.0):
    """``n`` uniform numbers in [low, high) of float32 or float64 ``dtype``."""
    if dtype == np.float32:
        u = _unit32(words(seed, offset, n)).astype(np.float32)
    else:
        w = words(seed, offset, 2 * n)
        u = _unit53(w[0::2], w[1::2])
    return u * dtype(high - low) + dtype(low)


def normal(seed, offset, n, dtype, mean=0.0, std=1.0):
    """``n`` normal numbers (mean, std) of float32 or float64 ``dtype``."""
    pairs = -(-n // 2)
    if dtype == np.float32:
        w = words(seed, offset, 2 * pairs)
        u1, u2 = _unit32(w[0::2], open_low=True), _unit32(w[1::2])
    else:
        w = words(seed, offset, 4 * pairs)
        u1, u2 = _unit53(w[0::4], w[1::4], open_low=True), _unit53(w[2::4], w[3::4])
    r = np.sqrt(-2.0 * np.log(u1))
    t = 2.0 * np.pi * u2
    z = np.stack([r * np.cos(t), r * np.sin(t)], axis=-1).reshape(-1)[:n].astype(dtype)
    return z * dtype(std) + dtype(mean)


def integers(seed, offset, n, low, count):
    """``n`` int64s uniform over the ``count`` values from ``low`` (``count`` up to 2**64)."""
    if count < 1 << 32:
        v = words(seed, offset, n).astype(np.uint64) % np.uint64(count)
    else:
        w = words(seed, offset, 2 * n).astype(np.uint64)
        v = (w[0::2] << _32) | w[1::2]
        if count < 1 << 64:
            v = v % np.uint64(count)
    # low + v, wrapping as int64 arithmetic does
    return (v + np.uint64(low & 0xFFFFFFFFFFFFFFFF)).view(np.int64)
