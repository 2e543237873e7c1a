"""OpInfo entries of the grid sampler, affine grid and antialiased upsampling ops
(ember/_kernels/cpu/grid.py, composite/grid.py). Their backward ops are reached through autograd
and checked against PyTorch's gradients by tests/test_nn_functional_grid.py."""
import numpy as np

from opinfo import NOT_IN_TABLE, OPS, OpInfo, Sample, T, tensor

_F = ("float32", "float64")
_FH = _F + ("float16", "bfloat16")
_rng = np.random.default_rng(7)


def _add(name, samples, dtypes=_F, out=None, rtol=1e-5, atol=1e-5):
    OPS.append(OpInfo(name, samples, dtypes, None, out, rtol, atol))


def _grid(shape, dtype, layout="contiguous", span=1.3):
    """Sampling positions in [-span, span], inside and outside the image, plus exact corners."""
    g = _rng.uniform(-span, span, shape)
    g.flat[:4] = [-1.0, 1.0, 0.0, 0.5]
    return T(g, dtype, layout)


# ---- grid_sampler_2d / 3d / grid_sampler ----------------------------------------------------

def _sampler_samples(k, name):
    sp = (5, 6, 4)[:k]          # input spatial sizes (H, W) or (D, H, W)
    osp = (3, 4, 2)[:k]         # output points
    modes = (0, 1, 2) if k == 2 else (0, 1)

    def gen(op):
        for dt in op.dtypes:
            for mode in modes:
                for pad in (0, 1, 2):
                    for align in (False, True):
                        yield Sample((tensor((2, 3) + sp, dt), _grid((2,) + osp + (k,), dt),
                                      mode, pad, align), desc=f"{dt} {mode} {pad} {align}")
            yield Sample((tensor((2, 3) + sp, dt, "transposed"),
                          _grid((2,) + osp + (k,), dt, "sliced", 2.5), 0, 2, False),
                         desc=f"{dt} strided far outside")
            yield Sample((tensor((2, 3) + sp, dt, "expanded"), _grid((2,) + osp + (k,), dt),
                          1, 1, True), desc=f"{dt} expanded")
            yield Sample((tensor((0, 3) + sp, dt), _grid((0,) + osp + (k,), dt), 0, 0, False),
                         desc=f"{dt} empty batch")
            yield Sample((tensor((2, 0) + sp, dt), _grid((2,) + osp + (k,), dt), 0, 0, False),
                         desc=f"{dt} empty channels")
            yield Sample((tensor((2, 3) + sp, dt), _grid((2, 0) + osp[1:] + (k,), dt), 0, 0,
                          False), desc=f"{dt} empty grid")
        # errors
        yield Sample((tensor((2, 3) + sp, "float32"), _grid((1,) + osp + (k,), "float32"), 0, 0,
                      False), desc="batch mismatch")
        yield Sample((tensor((2, 3) + sp, "float32"), _grid((2,) + osp + (k + 1,), "float32"),
                      0, 0, False), desc="last dim")
        yield Sample((tensor((2, 3) + (0,) + sp[1:], "float32"),
                      _grid((2,) + osp + (k,), "float32"), 0, 0, False), desc="empty spatial")
        yield Sample((tensor((2, 3) + sp, "float32"), _grid((2,) + osp + (k,), "float64"), 0, 0,
                      False), desc="dtype mismatch")
        yield Sample((tensor((2, 3) + sp, "int64"), _grid((2,) + osp + (k,), "int64"), 0, 0,
                      False), desc="int64")
        if name != "grid_sampler.default":
            yield Sample((tensor((2, 3, 4) + sp, "float32"), _grid((2, 1) + osp + (k,), "float32"),
                          0, 0, False), desc="rank mismatch")
        if k == 3:
            yield Sample((tensor((2, 3) + sp, "float32"), _grid((2,) + osp + (k,), "float32"),
                          2, 0, False), desc="3d bicubic")
    return gen


# bfloat16 is left out: ATen's bfloat16 arithmetic rounds differently from
# ml_dtypes', which moves nearest-mode ties and bicubic sums by more than bfloat16's tolerance
_add("grid_sampler_2d.default", _sampler_samples(2, "grid_sampler_2d.default"),
     _F + ("float16",), "grid_sampler_2d.out", rtol=1e-4, atol=1e-4)
_add("grid_sampler_3d.default", _sampler_samples(3, "grid_sampler_3d.default"),
     _F + ("float16",),
     "grid_sampler_3d.out", rtol=1e-4, atol=1e-4)
_add("grid_sampler.default", _sampler_samples(2, "grid_sampler.default"), _F, rtol=1e-4,
     atol=1e-4)
_add("grid_sampler.default", _sampler_samples(3, "grid_sampler.default"), _F, rtol=1e-4,
     atol=1e-4)


# ---- affine_grid_generator ------------------------------------------------------------------

def _affine_samples(op):
    for dt in op.dtypes:
        for align in (False, True):
            yield Sample((tensor((2, 2, 3), dt), [2, 3, 4, 5], align), desc=f"{dt} 2d {align}")
            yield Sample((tensor((2, 3, 4), dt, "transposed"), [2, 1, 3, 4, 2], align),
                         desc=f"{dt} 3d {align}")
            yield Sample((tensor((1, 2, 3), dt), [1, 1, 1, 3], align), desc=f"{dt} unit size")
        yield Sample((tensor((2, 2, 3), dt), [2, 3, 4], False), desc=f"{dt} bad size")


_add("affine_grid_generator.default", _affine_samples, _FH, "affine_grid_generator.out",
     rtol=1e-5, atol=1e-5)


def _affine_backward_samples(op):
    for dt in op.dtypes:
        yield Sample((tensor((2, 4, 5, 2), dt), [2, 3, 4, 5], False), desc=f"{dt} 2d")
        yield Sample((tensor((2, 1, 3, 4, 3), dt, "transposed"), [2, 1, 1, 3, 4], True),
                     desc=f"{dt} 3d")


_add("affine_grid_generator_backward.default", _affine_backward_samples, _F)


# ---- antialiased upsampling -----------------------------------------------------------------

_AA = ("_upsample_bilinear2d_aa", "_upsample_bicubic2d_aa", "_upsample_lanczos2d_aa")


def _aa_samples(name):
    lanczos = "lanczos" in name

    def gen(op):
        for dt in op.dtypes:
            for out, scales, desc in [((3, 4), None, "down"), ((13, 5), None, "up and down"),
                                      ((4, 2), [0.5, 0.3], "scales"), ((6, 7), None, "same")]:
                for align in ((False,) if lanczos else (False, True)):
                    layout = "transposed" if desc == "down" else "contiguous"
                    x = tensor((2, 3, 8, 7), dt, layout) if dt != "uint8" else \
                        T(_rng.integers(0, 256, (2, 3, 8, 7)), dt, layout)
                    yield Sample((x, list(out), align) + tuple(scales or ()),
                                 desc=f"{dt} {desc} {align}")
            yield Sample((tensor((0, 3, 6, 7), dt), [3, 3], False), desc=f"{dt} empty batch")
        yield Sample((tensor((2, 3, 6, 7), "float32"), [3], False), desc="output_size length")
        yield Sample((tensor((3, 6, 7), "float32"), [3, 3], False), desc="3d input")
        yield Sample((tensor((2, 3, 6, 7), "float32"), [0, 3], False), desc="zero output")
        yield Sample((tensor((2, 0, 6, 7), "float32"), [3, 3], False), desc="no channels")
        for dt in ("float16", "int64"):
            yield Sample((tensor((2, 3, 6, 7), dt), [3, 3], False), desc=dt)
    return gen


def _aa_vec_samples(op):
    for dt in op.dtypes:
        yield Sample((tensor((2, 3, 8, 7), dt), [3, 5], False, None), desc=f"{dt} size")
        yield Sample((tensor((2, 3, 8, 7), dt), None, False, [0.5, 0.7]), desc=f"{dt} scales")
        yield Sample((tensor((2, 3, 8, 7), dt), [3, 5], False, [0.5, 0.7]), desc=f"{dt} both")


for _n in _AA:
    _add(f"{_n}.default", _aa_samples(_n), _F + ("uint8",), f"{_n}.out", rtol=1e-5, atol=1e-5)
    _add(f"{_n}.vec", _aa_vec_samples, _F, rtol=1e-5, atol=1e-5)

# ---- backward ops: checked through autograd ---------------------------------------------------

for _b in ["grid_sampler_2d_backward.default", "grid_sampler_3d_backward.default"] + \
        [f"{n}_backward.default" for n in _AA]:
    NOT_IN_TABLE[_b] = ("backward op: checked against PyTorch's gradients by "
                        "tests/test_nn_functional_grid.py")
