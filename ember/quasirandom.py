"""``ember.quasirandom``: PyTorch's ``SobolEngine``, a generator of (scrambled) Sobol sequences.

The engine is PyTorch's Python class; the four ATen functions under it
(``_sobol_engine_initialize_state_``, ``_sobol_engine_draw``, ``_sobol_engine_ff_``,
``_sobol_engine_scramble_``, C++ loops in PyTorch) are the private functions of this module:

- The direction numbers are Joe and Kuo's (search criterion D(6), 21201 dimensions), the table
  PyTorch compiles in. SciPy ships the same table (``scipy/stats/_sobol_direction_numbers.npz``:
  primitive polynomials ``poly`` and initial numbers ``vinit``); it is read, and the Bratley-Fox
  recurrence run over it, with NumPy on those host arrays, once, when the first engine is made.
  The recurrence is sequential in the bit and runs vectorised over the dimensions.
- Drawing and fast-forwarding are written in ember ops on int64 tensors. PyTorch XORs the state
  with the direction number of the rightmost zero bit of each point's index, one point after the
  other; that sequence of XORs from index ``a`` to ``b`` is the XOR of the direction numbers of
  the bits set in ``gray(a) ^ gray(b)`` (``gray(k) = k ^ (k >> 1)``), so all points of a draw come
  from one XOR per bit, with bit for bit PyTorch's values.
- Scrambling is PyTorch's: a random lower-triangular binary matrix with a unit diagonal per
  dimension multiplies the direction numbers' bits over GF(2) (a linear matrix scramble, LMS),
  and a random 30-bit digital shift is the starting state. The random bits come from an
  ``ember.Generator`` seeded with ``seed``, whose stream differs from PyTorch's, so scrambled
  points differ from PyTorch's for the same seed (they are the same for the same matrices).

PyTorch reads past its direction table once an engine has made more than ``2**30`` points; here
a draw or fast-forward beyond that raises ``ValueError``.
"""
import importlib.util
import os

import numpy as np

import ember

__all__ = ["SobolEngine"]

_MAXBIT = 30
_MAXDIM = 21201
_RECIPD = 1.0 / (1 << _MAXBIT)

_direction_table = None  # (21201, 30) int64 NumPy array, made by the first engine


def _direction_numbers():
    """The direction numbers of all dimensions, each already shifted to its bit (row d, column j:
    the j-th direction number of dimension d times ``2**(MAXBIT - 1 - j)``)."""
    global _direction_table
    if _direction_table is None:
        # find the file without importing scipy.stats (a second of imports)
        scipy_dir = importlib.util.find_spec("scipy").submodule_search_locations[0]
        with np.load(os.path.join(scipy_dir, "stats", "_sobol_direction_numbers.npz")) as table:
            poly, vinit = table["poly"][:_MAXDIM], table["vinit"][:_MAXDIM]
        v = np.zeros((_MAXDIM, _MAXBIT), dtype=np.int64)
        v[0] = 1  # the first dimension is van der Corput's sequence
        p = poly[1:]
        m = np.frexp(p.astype(np.float64))[1].astype(np.int64) - 1  # the polynomials' degrees
        rows = np.arange(1, _MAXDIM)
        cols = np.arange(vinit.shape[1])
        v[1:, :vinit.shape[1]] = np.where(cols < m[:, None], vinit[1:], 0)
        for j in range(1, _MAXBIT):
            active = j >= m  # rows whose first m numbers are given and j-th is computed
            newv = v[rows, np.maximum(j - m, 0)]
            for k in range(min(j, int(m.max()))):
                coefficient = (p >> np.maximum(m - 1 - k, 0)) & 1
                use = active & (k < m) & (coefficient == 1)
                newv ^= np.where(use, v[1:, j - k - 1] << (k + 1), 0)
            v[1:, j] = np.where(active, newv, v[1:, j])
        v <<= np.arange(_MAXBIT - 1, -1, -1, dtype=np.int64)
        _direction_table = v
    return _direction_table


def _sobol_engine_initialize_state_(sobolstate, dimension):
    """Fill ``sobolstate`` (dimension x MAXBIT, int64) with the first ``dimension`` rows of the
    direction numbers."""
    sobolstate.copy_(ember.tensor(_direction_numbers()[:dimension]))
    return sobolstate


def _gray(index):
    return index ^ (index >> 1)


def _sobol_engine_draw(quasi, n, sobolstate, dimension, num_generated, dtype):
    """The ``n`` points after the state ``quasi`` (the point of index ``num_generated``), in
    ``dtype`` and times ``2**-MAXBIT``, and the state after them. As in PyTorch, a float32 point
    may round up to 1.0."""
    if dtype not in (ember.float32, ember.float64):
        raise NotImplementedError(f"\"_sobol_engine_draw\" not implemented for '{dtype._short}'")
    if n < 0:
        raise RuntimeError(f"Trying to create tensor with negative dimension {n}: [{n}, {dimension}]")
    flips = _gray(ember.arange(num_generated + 1, num_generated + n + 1)) ^ _gray(num_generated)
    points = quasi.expand(n, dimension).clone(memory_format=ember.contiguous_format)
    for bit in range((num_generated + n).bit_length()):
        points.bitwise_xor_(((flips >> bit) & 1).unsqueeze(1) * sobolstate[:, bit])
    wquasi = points[-1].clone() if n else quasi.clone(memory_format=ember.contiguous_format)
    return points.to(dtype).mul_(_RECIPD), wquasi


def _sobol_engine_ff_(quasi, n, sobolstate, dimension, num_generated):
    """Advance the state ``quasi`` (the point of index ``num_generated``) by ``n`` points, in
    place."""
    if n > 0:
        flips = _gray(num_generated + n) ^ _gray(num_generated)
        for bit in range(flips.bit_length()):
            if flips >> bit & 1:
                quasi.bitwise_xor_(sobolstate[:, bit])
    return quasi


def _sobol_engine_scramble_(sobolstate, ltm, dimension):
    """Multiply the bits of each dimension's direction numbers by its lower-triangular matrix
    in ``ltm`` (dimension x MAXBIT x MAXBIT, 0/1) with the diagonal set to 1, modulo 2, in place.
    Row p and column k of a matrix stand for bit ``MAXBIT - 1 - p`` of the result and bit
    ``MAXBIT - 1 - k`` of the direction number, as in PyTorch."""
    diag_true = ltm.clone(memory_format=ember.contiguous_format)
    diag_true.diagonal(0, -2, -1).fill_(1)
    pow2s = ember.pow(2, ember.arange(_MAXBIT - 1, -1, -1))
    # (dimension, MAXBIT numbers, MAXBIT bits)
    bits = (sobolstate.unsqueeze(-1) & pow2s).ne(0).to(ember.long)
    scrambled = ember.matmul(bits, diag_true.transpose(-2, -1)) & 1
    sobolstate.copy_((scrambled * pow2s).sum(-1))
    return sobolstate


class SobolEngine:
    r"""
    The :class:`ember.quasirandom.SobolEngine` is an engine for generating
    (scrambled) Sobol sequences. Sobol sequences are an example of low
    discrepancy quasi-random sequences.

    This implementation of an engine for Sobol sequences is capable of
    sampling sequences up to a maximum dimension of 21201. It uses direction
    numbers from https://web.maths.unsw.edu.au/~fkuo/sobol/ obtained using the
    search criterion D(6) up to the dimension 21201. This is the recommended
    choice by the authors.

    Scrambling, as in PyTorch, applies a random linear matrix scramble (a lower-triangular
    binary matrix with a unit diagonal per dimension) to the direction numbers and starts
    from a random digital shift, both drawn from a generator seeded with ``seed``; the
    generator's stream is ember's, so scrambled points differ from PyTorch's.

    References:
      - Art B. Owen. Scrambling Sobol and Niederreiter-Xing points.
        Journal of Complexity, 14(4):466-489, December 1998.

      - I. M. Sobol. The distribution of points in a cube and the accurate
        evaluation of integrals.
        Zh. Vychisl. Mat. i Mat. Phys., 7:784-802, 1967.

    Args:
        dimension (Int): The dimensionality of the sequence to be drawn
        scramble (bool, optional): Setting this to ``True`` will produce
                                   scrambled Sobol sequences. Scrambling is
                                   capable of producing better Sobol
                                   sequences. Default: ``False``.
        seed (Int, optional): This is the seed for the scrambling. The seed
                              of the random number generator is set to this,
                              if specified. Otherwise, it uses a random seed.
                              Default: ``None``

    Examples::

        >>> soboleng = ember.quasirandom.SobolEngine(dimension=5)
        >>> soboleng.draw(3)
        tensor([[0.0000, 0.0000, 0.0000, 0.0000, 0.0000],
                [0.5000, 0.5000, 0.5000, 0.5000, 0.5000],
                [0.7500, 0.2500, 0.2500, 0.2500, 0.7500]])
    """

    MAXBIT = _MAXBIT
    MAXDIM = _MAXDIM

    def __init__(self, dimension, scramble=False, seed=None):
        if dimension > self.MAXDIM or dimension < 1:
            raise ValueError(
                "Supported range of dimensionality "
                f"for SobolEngine is [1, {self.MAXDIM}]"
            )

        self.seed = seed
        self.scramble = scramble
        self.dimension = dimension

        cpu = ember.device("cpu")

        self.sobolstate = ember.zeros(dimension, self.MAXBIT, device=cpu, dtype=ember.long)
        _sobol_engine_initialize_state_(self.sobolstate, self.dimension)

        if not self.scramble:
            self.shift = ember.zeros(self.dimension, device=cpu, dtype=ember.long)
        else:
            self._scramble()

        self.quasi = self.shift.clone(memory_format=ember.contiguous_format)
        self._first_point = (self.quasi / 2**self.MAXBIT).reshape(1, -1)
        self.num_generated = 0

    def _check_count(self, n):
        total = self.num_generated + n
        if total > 1 << self.MAXBIT:
            raise ValueError(
                f"SobolEngine generates at most 2**{self.MAXBIT} points: {self.num_generated} "
                f"points have been previously generated, then: n={self.num_generated}+{n}={total}."
            )

    def draw(self, n=1, out=None, dtype=None):
        r"""
        Function to draw a sequence of :attr:`n` points from a Sobol sequence.
        Note that the samples are dependent on the previous samples. The size
        of the result is :math:`(n, dimension)`.

        Args:
            n (Int, optional): The length of sequence of points to draw.
                               Default: 1
            out (Tensor, optional): The output tensor
            dtype (:class:`ember.dtype`, optional): the desired data type of the
                                                    returned tensor.
                                                    Default: ``None``
        """
        if dtype is None:
            dtype = ember.get_default_dtype()
        self._check_count(n)

        if self.num_generated == 0:
            if n == 1:
                result = self._first_point.to(dtype)
            else:
                result, self.quasi = _sobol_engine_draw(
                    self.quasi, n - 1, self.sobolstate, self.dimension, self.num_generated,
                    dtype=dtype,
                )
                result = ember.cat((self._first_point.to(dtype), result), dim=-2)
        else:
            result, self.quasi = _sobol_engine_draw(
                self.quasi, n, self.sobolstate, self.dimension, self.num_generated - 1,
                dtype=dtype,
            )

        self.num_generated += n

        if out is not None:
            out.resize_as_(result).copy_(result)
            return out

        return result

    def draw_base2(self, m, out=None, dtype=None):
        r"""
        Function to draw a sequence of :attr:`2**m` points from a Sobol sequence.
        Note that the samples are dependent on the previous samples. The size
        of the result is :math:`(2**m, dimension)`.

        Args:
            m (Int): The (base2) exponent of the number of points to draw.
            out (Tensor, optional): The output tensor
            dtype (:class:`ember.dtype`, optional): the desired data type of the
                                                    returned tensor.
                                                    Default: ``None``
        """
        n = 2**m
        total_n = self.num_generated + n
        if not (total_n & (total_n - 1) == 0):
            raise ValueError(
                "The balance properties of Sobol' points require "
                f"n to be a power of 2. {self.num_generated} points have been "
                f"previously generated, then: n={self.num_generated}+2**{m}={total_n}. "
                "If you still want to do this, please use "
                "'SobolEngine.draw()' instead."
            )
        return self.draw(n=n, out=out, dtype=dtype)

    def reset(self):
        r"""
        Function to reset the ``SobolEngine`` to base state.
        """
        self.quasi.copy_(self.shift)
        self.num_generated = 0
        return self

    def fast_forward(self, n):
        r"""
        Function to fast-forward the state of the ``SobolEngine`` by
        :attr:`n` steps. This is equivalent to drawing :attr:`n` samples
        without using the samples.

        Args:
            n (Int): The number of steps to fast-forward by.
        """
        self._check_count(n)
        if self.num_generated == 0:
            _sobol_engine_ff_(self.quasi, n - 1, self.sobolstate, self.dimension, self.num_generated)
        else:
            _sobol_engine_ff_(self.quasi, n, self.sobolstate, self.dimension, self.num_generated - 1)
        self.num_generated += n
        return self

    def _scramble(self):
        g = None
        if self.seed is not None:
            g = ember.Generator()
            g.manual_seed(self.seed)

        cpu = ember.device("cpu")

        # the digital shift: the starting state
        shift_ints = ember.randint(2, (self.dimension, self.MAXBIT), device=cpu, generator=g)
        self.shift = ember.mv(shift_ints, ember.pow(2, ember.arange(0, self.MAXBIT, device=cpu)))

        # the linear matrix scramble: one lower-triangular matrix per dimension
        ltm_dims = (self.dimension, self.MAXBIT, self.MAXBIT)
        ltm = ember.randint(2, ltm_dims, device=cpu, generator=g).tril()

        _sobol_engine_scramble_(self.sobolstate, ltm, self.dimension)

    def __repr__(self):
        fmt_string = [f"dimension={self.dimension}"]
        if self.scramble:
            fmt_string += ["scramble=True"]
        if self.seed is not None:
            fmt_string += [f"seed={self.seed}"]
        return self.__class__.__name__ + "(" + ", ".join(fmt_string) + ")"
