"""OpInfo entries of the FFT ops: the primitives ``_fft_r2c`` / ``_fft_c2r`` / ``_fft_c2c`` (every
normalization mode, one or several dims, strided inputs) and the ``fft_*`` composites behind
``ember.fft`` (n / s / dim / norm, integer promotion, complex inputs, and PyTorch's errors: half
precision, real-only transforms given complex input, bad n, norm or dims). The random samplers
are listed in NOT_IN_TABLE: their values cannot match PyTorch's streams, so
tests/test_random_ops.py checks them by their distributions."""
import numpy as np

from opinfo import NOT_IN_TABLE, OPS, OpInfo, Sample, T, tensor

_rng = np.random.default_rng(11)
_REAL = ("float32", "float64")
_COMPLEX = ("complex64", "complex128")
_LAYOUTS = ("contiguous", "transposed", "sliced", "expanded")


def ctensor(shape, dtype, layout="contiguous"):
    v = _rng.uniform(-2, 2, shape) + 1j * _rng.uniform(-2, 2, shape)
    if layout == "expanded":
        v = np.broadcast_to(v[:1], shape).copy()
    return T(v, dtype, layout)


def _any(shape, dt, layout="contiguous"):
    return ctensor(shape, dt, layout) if dt.startswith("complex") else tensor(shape, dt, layout)


def _add(name, samples, dtypes, out=None, **kw):
    OPS.append(OpInfo(name, samples, dtypes, None, out, rtol=1e-4, atol=1e-4, **kw))


# -- primitives ----------------------------------------------------------------------------------

def r2c_samples(op):
    for dt in op.dtypes:
        for lay in _LAYOUTS:
            for norm in (0, 1, 2):
                yield Sample((tensor((4, 6), dt, lay), [1], norm, True), desc=f"{dt} {lay} {norm}")
        yield Sample((tensor((4, 5), dt), [1], 0, False), desc=f"{dt} two-sided")
        yield Sample((tensor((3, 4, 5), dt), [0, 2], 2, True), desc=f"{dt} 2 dims")
        yield Sample((tensor((3, 4, 5), dt), [2, 0, 1], 1, False), desc=f"{dt} 3 dims")
        yield Sample((tensor((7,), dt), [0], 0, True), desc=f"{dt} odd 1-D")
    for bad in ("complex64", "int64", "float16"):
        yield Sample((_any((4,), bad), [0], 0, True), desc=f"{bad} input")


def c2r_samples(op):
    for dt in op.dtypes:
        for lay in _LAYOUTS:
            for norm in (0, 1, 2):
                yield Sample((ctensor((4, 4), dt, lay), [1], norm, 6), desc=f"{dt} {lay} {norm}")
                yield Sample((ctensor((4, 4), dt, lay), [1], norm, 7), desc=f"{dt} odd {norm}")
        yield Sample((ctensor((3, 4, 3), dt), [0, 2], 2, 4), desc=f"{dt} 2 dims")
        yield Sample((ctensor((3, 4, 3), dt), [2, 0], 0, 5), desc=f"{dt} 2 dims, 0 last")
    yield Sample((tensor((4, 4), "float32"), [1], 0, 6), desc="real input")


def c2c_samples(op):
    for dt in op.dtypes:
        for lay in _LAYOUTS:
            for norm in (0, 1, 2):
                for fwd in (True, False):
                    yield Sample((ctensor((4, 6), dt, lay), [1], norm, fwd),
                                 desc=f"{dt} {lay} {norm} {fwd}")
        yield Sample((ctensor((3, 4, 5), dt), [0, 2], 1, True), desc=f"{dt} 2 dims")
        yield Sample((ctensor((3, 4, 5), dt), [2, 0, 1], 2, False), desc=f"{dt} 3 dims")
        yield Sample((ctensor((3, 4), dt), [], 0, True), desc=f"{dt} no dims")
    yield Sample((tensor((4, 4), "float64"), [1], 0, True), desc="real input")


_add("_fft_r2c.default", r2c_samples, _REAL, "_fft_r2c.out")
_add("_fft_c2r.default", c2r_samples, _COMPLEX, "_fft_c2r.out")
_add("_fft_c2c.default", c2c_samples, _COMPLEX, "_fft_c2c.out")

# -- fft_* composites ----------------------------------------------------------------------------

_ALL_FFT = ("float32", "float64", "int64", "bool", "complex64", "complex128")


def one_dim_samples(op):
    """fft/ifft/rfft/irfft/hfft/ihfft: (self, n, dim, norm)."""
    for dt in op.dtypes:
        yield Sample((_any((3, 6), dt),), desc=dt)
        for norm in ("backward", "ortho", "forward"):
            yield Sample((_any((3, 6), dt), None, -1, norm), desc=f"{dt} {norm}")
        yield Sample((_any((3, 6), dt), 4), desc=f"{dt} n trims")
        yield Sample((_any((3, 6), dt), 9, 0), desc=f"{dt} n pads dim 0")
        yield Sample((_any((5,), dt),), desc=f"{dt} 1-D")
        for lay in ("transposed", "sliced", "expanded"):
            yield Sample((_any((4, 6), dt, lay), None, 0), desc=f"{dt} {lay}")
    x = tensor((3, 6), "float32")
    for bad, desc in (((x, 0), "n=0"), ((x, -2), "n<0"), ((x, None, 2), "dim out of range"),
                      ((x, None, -1, "bad"), "bad norm"), ((tensor((), "float32"),), "0-dim"),
                      ((tensor((4,), "float16"),), "half"), ((tensor((4,), "bfloat16"),), "bf16"),
                      ((tensor((3, 1), "float32"),), "size 1 (irfft: 0 points)")):
        yield Sample(bad, desc=desc)


def n_dim_samples(op):
    """fftn-style (self, s, dim, norm); the *2 ops default dim to (-2, -1)."""
    two = op.name.split(".")[0].endswith("2")
    for dt in op.dtypes:
        x = _any((3, 4, 6), dt)
        yield Sample((x,), desc=dt)
        for norm in ("backward", "ortho", "forward"):
            yield Sample((x, None, [0, 2] if not two else [-2, -1], norm), desc=f"{dt} {norm}")
        yield Sample((x, [3, 5]), desc=f"{dt} s")
        yield Sample((x, [5, -1], [2, 0]), desc=f"{dt} s with -1, dims reordered")
        yield Sample((_any((4, 6), dt, "transposed"),), desc=f"{dt} transposed")
        yield Sample((_any((4, 6), dt, "sliced"), [8, 3]), desc=f"{dt} sliced, s")
        # (torch's fft_ihfftn.out over one dim writes nothing into out: conj_physical_out's
        # arguments are swapped in SpectralOps.cpp, so that case is left to test_fft.py)
        if not two and op.name != "fft_ihfftn.default":
            yield Sample((x, None, [1]), desc=f"{dt} one dim")
            yield Sample((x, [4]), desc=f"{dt} s only")
    x = tensor((3, 4), "float32")
    for bad, desc in (((x, [2, 2, 2]), "s longer than ndim"), ((x, [2], [0, 1]), "s/dim lengths"),
                      ((x, None, [0, 0]), "repeated dims"), ((x, [0, 2]), "s=0"),
                      ((x, None, [0, 5]), "dim out of range"), ((x, None, None, "x"), "bad norm"),
                      ((tensor((4, 4), "float16"),), "half"), ((x, None, []), "no dims")):
        yield Sample(bad, desc=desc)
    if two:
        yield Sample((tensor((3,), "float32"),), desc="1-D (2-D default dims)")


for _n in ("fft", "ifft", "irfft", "hfft"):
    _add(f"fft_{_n}.default", one_dim_samples, _ALL_FFT, f"fft_{_n}.out")
for _n in ("rfft", "ihfft"):  # real input only: complex samples are the error cases
    _add(f"fft_{_n}.default", one_dim_samples, _ALL_FFT, f"fft_{_n}.out")
for _n in ("fft", "ifft", "rfft", "irfft", "hfft", "ihfft"):
    _add(f"fft_{_n}2.default", n_dim_samples, _ALL_FFT, f"fft_{_n}2.out")
    _add(f"fft_{_n}n.default", n_dim_samples, _ALL_FFT, f"fft_{_n}n.out")


def shift_samples(op):
    for dt in ("float32", "int64", "complex64", "bool"):
        for shape in [(5,), (4, 5), (3, 4, 5), (0, 3)]:
            x = _any(shape, dt)
            yield Sample((x,), desc=f"{dt} {shape}")
            yield Sample((x, [-1]), desc=f"{dt} {shape} last dim")
        yield Sample((_any((4, 5), dt, "transposed"), [0]), desc=f"{dt} transposed")
    yield Sample((tensor((3, 4), "float32"), [2]), desc="dim out of range")


_add("fft_fftshift.default", shift_samples, ("float32",))
_add("fft_ifftshift.default", shift_samples, ("float32",))


# -- random samplers: checked by tests/test_random_ops.py ------------------------------------------

NOT_IN_TABLE.update({name: "factory: checked by tests/test_fft.py" for name in """
    fft_fftfreq.default fft_fftfreq.out fft_rfftfreq.default fft_rfftfreq.out""".split()})
NOT_IN_TABLE.update({name: "random: distributions, seeds and errors checked by "
                           "tests/test_random_ops.py" for name in """
    randperm.default randperm.generator randperm.out randperm.generator_out bernoulli.default
    bernoulli.out bernoulli_.Tensor bernoulli_.float bernoulli.p bernoulli.Tensor
    bernoulli.Tensor_out bernoulli.float_out multinomial.default multinomial.out poisson.default
    poisson.out exponential_.default geometric_.default cauchy_.default log_normal_.default
    randint_like.default randint_like.Tensor randint_like.low_dtype randint_like.out
    randint_like.Tensor_out randint_like.low_dtype_out""".split()})
NOT_IN_TABLE.update({name: "random: distributions' samplers, moments and the gamma "
                           "reparameterisation gradient checked by tests/test_distributions.py"
                     for name in """_standard_gamma.default _standard_gamma_grad.default
    _sample_dirichlet.default binomial.default""".split()})
