"""Composite kernels around the grid sampler and antialiased upsampling (ATen's GridSampler.cpp,
AffineGridGenerator.cpp, UpSample.cpp front ends): ``grid_sampler`` (picks the 2-D or 3-D op),
``affine_grid_generator`` (CompositeExplicitAutograd: base grid @ theta^T) with its backward, and
the ``.vec`` overloads of the ``_upsample_*2d_aa`` ops (output size from scale factors)."""
from .resample import _compute_output_size
from ..._ops.overload import ops
from ..registration import register

_aten = ops.aten  # ops resolve when called: the op table is built after the kernels load


def grid_sampler(input, grid, interpolation_mode, padding_mode, align_corners):
    op = _aten.grid_sampler_2d if len(input._size) == 4 else _aten.grid_sampler_3d
    return op.default._call(input, grid, interpolation_mode, padding_mode, align_corners)


def _linspace_from_neg_one(like, steps, align_corners):
    """The normalized pixel centers along one axis: -1..1, pulled in by (n - 1) / n when the
    corners are not aligned; a single 0 for a length-1 axis."""
    aten = _aten
    opts = (like._dtype, None, like._device, None)
    if steps <= 1:
        if like._dtype.itemsize == 2 and like._dtype.is_floating_point:
            # ATen builds this 0 with at::tensor, which has no half-precision kernel
            raise NotImplementedError(f"\"tensor_cpu\" not implemented for "
                                      f"'{like._dtype._short}'")
        return aten.scalar_tensor.default._call(0, *opts)
    r = aten.linspace.default._call(-1, 1, steps, *opts)
    if not align_corners:
        r = aten.div.Scalar._call(aten.mul.Scalar._call(r, steps - 1), steps)
    return r


def _base_grid(like, size, align_corners):
    """(N, *spatial, k + 1): the x, y(, z) coordinates of every output point, then a 1."""
    aten = _aten
    n, spatial = size[0], list(size[2:])
    k = len(spatial)
    base = aten.empty.memory_format._call([n] + spatial + [k + 1], like._dtype, None,
                                          like._device, None, None)
    for comp in range(k):  # component 0 runs along the last (W) axis
        r = _linspace_from_neg_one(like, spatial[k - 1 - comp], align_corners)
        for _ in range(comp):
            r = aten.unsqueeze.default._call(r, -1)
        aten.copy_.default._call(aten.select.int._call(base, -1, comp), r, False)
    aten.fill_.Scalar._call(aten.select.int._call(base, -1, k), 1)
    return base


def _check_size(size):
    if len(size) not in (4, 5):
        raise RuntimeError("AffineGridGenerator needs 4d (spatial) or 5d (volumetric) inputs.")


def affine_grid_generator(theta, size, align_corners):
    _check_size(size)
    aten = _aten
    n, spatial = size[0], list(size[2:])
    k = len(spatial)
    base = _base_grid(theta, size, align_corners)
    points = 1
    for s in spatial:
        points *= s
    grid = aten.bmm.default._call(aten.view.default._call(base, [n, points, k + 1]),
                                  aten.transpose.int._call(theta, 1, 2))
    return aten.view.default._call(grid, [n] + spatial + [k])


def affine_grid_generator_backward(grad, size, align_corners):
    _check_size(size)
    aten = _aten
    n, spatial = size[0], list(size[2:])
    k = len(spatial)
    base = _base_grid(grad, size, align_corners)
    points = 1
    for s in spatial:
        points *= s
    g = aten.bmm.default._call(
        aten.transpose.int._call(aten.view.default._call(base, [n, points, k + 1]), 1, 2),
        aten.reshape.default._call(grad, [n, points, k]))
    return aten.transpose.int._call(g, 1, 2)


def _aa_vec(name):
    def kernel(input, output_size, align_corners, scale_factors):
        if len(input._size) != 4:
            raise RuntimeError(f"It is expected input_size equals to 4, but got size "
                               f"{len(input._size)}")
        out = _compute_output_size(input._size, output_size, scale_factors)
        scales = list(scale_factors) if scale_factors is not None else [None, None]
        return getattr(_aten, name).default._call(input, out, align_corners, *scales)
    kernel.__name__ = name + "_vec"
    return kernel


for _n in ("_upsample_bilinear2d_aa", "_upsample_bicubic2d_aa", "_upsample_lanczos2d_aa"):
    register(_n + ".vec", "CompositeImplicitAutograd", _aa_vec(_n))
