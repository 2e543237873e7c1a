"""``_grouped_mm`` (and ``nn.functional.grouped_mm``) against PyTorch's CPU kernel: the four
operand layouts (2d x 3d, 3d x 2d and 2d x 2d with ``offs``, 3d x 3d without), row- and
column-major operands, the three accepted dtypes, ``offs`` cut as slices (empty, clamped and
overlapping groups), the result's padded strides, gradients and their layouts, the Meta
kernel's shapes, and every check's error message in ATen's order.

ATen leaves the result's rows (columns) past ``offs[-1]`` uninitialized, and so the gradients
computed from them; values are compared on the covered part, where ember writes zeros
elsewhere. PyTorch's Meta kernel mirrors its CUDA kernel (bfloat16 only, unpadded strides on a
CPU build); ember's Meta kernel shares the CPU kernel's rule, so it is compared with PyTorch's
Meta kernel on bfloat16 and with the CPU kernel otherwise."""
import numpy as np
import pytest

import ember
from ember.autograd import forward_ad as fwAD

torch = pytest.importorskip("torch")

HALF = ("float16", "bfloat16")


def _make(lib, arr, dtype, col_major=False, requires_grad=False):
    """``arr`` as a ``lib`` tensor of ``dtype``, column-major in its last two dims if asked."""
    if col_major:
        t = lib.from_numpy(np.ascontiguousarray(np.swapaxes(arr, -1, -2)))
        t = t.to(getattr(lib, dtype)).transpose(-2, -1)
    else:
        t = lib.from_numpy(np.ascontiguousarray(arr)).to(getattr(lib, dtype))
    return t.requires_grad_() if requires_grad else t


def _offs(lib, offs):
    return None if offs is None else lib.tensor(offs, dtype=lib.int32)


def _np(t):
    return t.detach().float().numpy()


def _covered(kind, offs):
    """The index of a result (or gradient) part ATen writes: (result, grad of a, grad of b)."""
    full = (Ellipsis,)
    if kind == "2d3d":
        return (slice(0, offs[-1]),), (slice(0, offs[-1]),), full
    if kind == "3d2d":
        return (Ellipsis, slice(0, offs[-1])), full, (Ellipsis, slice(0, offs[-1]))
    if kind == "2d2d":
        return full, (Ellipsis, slice(0, offs[-1])), (slice(0, offs[-1]),)
    return full, full, full


# kind, mat_a shape, mat_b shape, offs
LAYOUTS = [
    ("2d3d", (16, 8), (3, 8, 8), [2, 5, 8]),
    ("2d3d", (16, 8), (3, 8, 16), [0, 4, 16]),        # an empty first group, every row covered
    ("2d3d", (16, 8), (3, 8, 8), [3, 12, 20]),        # ends past the rows are clamped
    ("2d3d", (16, 8), (3, 8, 8), [6, 2, 9]),          # end < start: empty; later groups overlap
    ("3d2d", (3, 8, 8), (8, 24), [8, 16, 20]),
    ("3d2d", (2, 8, 16), (16, 16), [0, 16]),
    ("2d2d", (8, 24), (24, 8), [8, 16, 24]),
    ("2d2d", (8, 24), (24, 16), [0, 8, 20]),          # an empty group: its matrix is zero
    ("3d3d", (3, 8, 16), (3, 16, 8), None),
]


def _run(lib, kind, sa, sb, offs, dtype, col_a, col_b, grad_seed=None, functional=False):
    rng = np.random.default_rng(0)
    a = _make(lib, rng.standard_normal(sa).astype(np.float32), dtype, col_a, grad_seed is not None)
    b = _make(lib, rng.standard_normal(sb).astype(np.float32), dtype, col_b, grad_seed is not None)
    fn = lib.nn.functional.grouped_mm if functional else lib._grouped_mm
    out = fn(a, b, offs=_offs(lib, offs))
    if grad_seed is None:
        return out, None, None
    g = rng.standard_normal(tuple(out.shape)).astype(np.float32)
    out.backward(lib.from_numpy(g).to(out.dtype))
    return out, a.grad, b.grad


@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "float16"])
@pytest.mark.parametrize("layout", LAYOUTS, ids=lambda x: f"{x[0]}-{x[3]}")
@pytest.mark.parametrize("col_a,col_b", [(False, False), (True, True)])
def test_values_match_pytorch(layout, dtype, col_a, col_b):
    kind, sa, sb, offs = layout
    e, _, _ = _run(ember, kind, sa, sb, offs, dtype, col_a, col_b)
    t, _, _ = _run(torch, kind, sa, sb, offs, dtype, col_a, col_b)
    assert e.dtype.name == str(t.dtype).split(".")[1]
    assert tuple(e.shape) == tuple(t.shape) and e.stride() == t.stride()
    part, _, _ = _covered(kind, offs)
    tol = 2e-2 if dtype in HALF else 1e-5
    np.testing.assert_allclose(_np(e)[part], _np(t)[part], rtol=tol, atol=tol)
    rest = np.ones(tuple(e.shape), bool)
    rest[part] = False
    assert not _np(e)[rest].any(), "ember writes zeros past offs[-1]"


def test_padded_result_strides_and_functional():
    # N = 5 is padded to 8 floats (16 bytes), as ATen allocates the result
    args = ("2d3d", (10, 8), (3, 8, 5), [2, 5, 10], "float32", False, True)
    e, _, _ = _run(ember, *args, functional=True)
    t, _, _ = _run(torch, *args, functional=True)
    assert e.stride() == t.stride() == (8, 1)
    np.testing.assert_allclose(_np(e), _np(t), rtol=1e-5, atol=1e-5)
    e = ember._grouped_mm(ember.randn(3, 4, 8), ember.randn(3, 5, 8).transpose(1, 2),
                          out_dtype=ember.float32)
    t = torch._grouped_mm(torch.randn(3, 4, 8), torch.randn(3, 5, 8).transpose(1, 2),
                          out_dtype=torch.float32)
    assert e.stride() == t.stride() == (32, 8, 1)


@pytest.mark.parametrize("layout", LAYOUTS[:1] + LAYOUTS[4:5] + LAYOUTS[6:7] + LAYOUTS[8:],
                         ids=lambda x: x[0])
@pytest.mark.parametrize("col_a,col_b", [(False, False), (True, False), (False, True)])
def test_gradients_match_pytorch(layout, col_a, col_b):
    kind, sa, sb, offs = layout
    e, ea, eb = _run(ember, kind, sa, sb, offs, "float32", col_a, col_b, grad_seed=1)
    t, ta, tb = _run(torch, kind, sa, sb, offs, "float32", col_a, col_b, grad_seed=1)
    assert type(e.grad_fn).__name__ == type(t.grad_fn).__name__ == "GroupedMmBackward0"
    _, part_a, part_b = _covered(kind, offs)
    for eg, tg, part in ((ea, ta, part_a), (eb, tb, part_b)):
        assert tuple(eg.shape) == tuple(tg.shape) and eg.stride() == tg.stride()
        np.testing.assert_allclose(_np(eg)[part], _np(tg)[part], rtol=1e-4, atol=1e-4)


def test_gradient_of_expanded_grad_is_rejected_as_in_pytorch():
    # sum()'s gradient is expanded (strides 0): the backward's grouped product rejects it
    errors = []
    for lib in (ember, torch):
        a = lib.randn(10, 8, requires_grad=True)
        b = lib.randn(3, 8, 8, requires_grad=True)
        out = lib._grouped_mm(a, b, offs=lib.tensor([2, 5, 8], dtype=lib.int32))
        with pytest.raises(RuntimeError) as info:
            out.sum().backward()
        errors.append(str(info.value))
    assert errors[0] == errors[1] == ("Invalid strides/sizes, got [0, 0] for strides and "
                                      "[10, 8] for sizes")


def test_forward_ad_is_not_supported():
    a, b = ember.randn(3, 4, 8), ember.randn(3, 8, 8)
    with fwAD.dual_level():
        with pytest.raises(NotImplementedError, match="Trying to use forward AD with "
                                                      "_grouped_mm that does not support it"):
            ember._grouped_mm(fwAD.make_dual(a, ember.ones_like(a)), b)


@pytest.mark.parametrize("layout", LAYOUTS, ids=lambda x: f"{x[0]}-{x[3]}")
def test_meta_matches_the_cpu_result_and_pytorchs_meta(layout):
    kind, sa, sb, offs = layout
    cpu, _, _ = _run(ember, kind, sa, sb, offs, "float32", False, False)
    a = ember.empty(sa, device="meta")
    b = ember.empty(sb, device="meta")
    m = ember._grouped_mm(a, b, offs=None if offs is None else
                          ember.tensor(offs, dtype=ember.int32, device="meta"))
    assert m.device.type == "meta"
    assert (tuple(m.shape), m.stride(), m.dtype) == (tuple(cpu.shape), cpu.stride(), cpu.dtype)
    # PyTorch's Meta kernel takes bfloat16 only
    tm = torch._grouped_mm(torch.empty(sa, device="meta", dtype=torch.bfloat16),
                           torch.empty(sb, device="meta", dtype=torch.bfloat16),
                           offs=None if offs is None else
                           torch.tensor(offs, dtype=torch.int32, device="meta"))
    em = ember._grouped_mm(a.to(ember.bfloat16), b.to(ember.bfloat16), offs=None if offs is None
                           else ember.tensor(offs, dtype=ember.int32, device="meta"))
    assert tuple(em.shape) == tuple(tm.shape) and em.dtype is ember.bfloat16


def _error_cases(lib):
    """name -> a call that PyTorch's CPU kernel rejects."""
    f32, i32 = lib.float32, lib.int32

    def offs(*v, dtype=i32):
        return lib.tensor(v, dtype=dtype)
    a2, b3, o3 = lib.randn(10, 8), lib.randn(3, 8, 8), offs(2, 5, 8)
    gm = lib._grouped_mm
    return {
        "float64": lambda: gm(a2.double(), b3, offs=o3),
        "int32 b": lambda: gm(a2, b3.int(), offs=o3),
        "1d a": lambda: gm(lib.randn(8), b3, offs=o3),
        "4d b": lambda: gm(a2, lib.randn(1, 3, 8, 8), offs=o3),
        "contraction": lambda: gm(a2, lib.randn(3, 4, 8), offs=o3),
        "contraction 3d3d": lambda: gm(lib.randn(3, 4, 8), lib.randn(3, 4, 8)),
        "unaligned stride": lambda: gm(lib.randn(3, 4, 5), lib.randn(3, 5, 4)),
        "unaligned bfloat16": lambda: gm(lib.randn(10, 4).bfloat16(),
                                         lib.randn(3, 4, 8).bfloat16(), offs=o3),
        "not row or column major": lambda: gm(lib.randn(10, 16)[:, ::2], b3, offs=o3),
        "no offs": lambda: gm(a2, b3),
        "offs with 3d3d": lambda: gm(lib.randn(3, 4, 8), b3, offs=o3),
        "2d offs": lambda: gm(a2, b3, offs=o3.view(1, 3)),
        "int64 offs": lambda: gm(a2, b3, offs=offs(2, 5, 8, dtype=lib.int64)),
        "bias": lambda: gm(a2, b3, offs=o3, bias=lib.randn(8)),
        "out_dtype": lambda: gm(a2, b3, offs=o3, out_dtype=lib.float16),
        "out_dtype before batch": lambda: gm(a2, lib.randn(2, 8, 8), offs=o3,
                                             out_dtype=lib.bfloat16),
        "batch 2d3d": lambda: gm(a2, b3, offs=offs(2, 5)),
        "batch 3d2d": lambda: gm(lib.randn(3, 4, 8), lib.randn(8, 12), offs=offs(2, 5)),
        "batch 3d3d": lambda: gm(lib.randn(3, 4, 8), lib.randn(2, 8, 8)),
        "mixed dtypes 2d3d": lambda: gm(a2, b3.half(), offs=o3),
        "mixed dtypes, empty groups": lambda: gm(a2, b3.bfloat16(), offs=offs(0, 0, 0)),
        "mixed dtypes 3d3d": lambda: gm(lib.randn(3, 8, 8, dtype=f32), b3.bfloat16()),
        "mixed dtypes 3d3d, b first": lambda: gm(lib.randn(3, 8, 8).bfloat16(), b3),
        "2d2d inner sizes differ": lambda: gm(lib.randn(4, 12), lib.randn(8, 8),
                                              offs=offs(2, 5, 12)),
    }


def _outcome(fn):
    try:
        fn()
    except Exception as e:  # noqa: BLE001  (the oracle's exception is what is compared)
        return type(e).__name__, str(e)
    return None


@pytest.mark.parametrize("name", list(_error_cases(torch)))
def test_errors_match_pytorch(name):
    want = _outcome(_error_cases(torch)[name])
    assert want is not None, "PyTorch accepts the case"
    assert _outcome(_error_cases(ember)[name]) == want


@pytest.mark.parametrize("name", ["float64", "contraction", "unaligned stride", "no offs",
                                  "int64 offs", "bias", "out_dtype", "batch 3d2d",
                                  "mixed dtypes 2d3d", "mixed dtypes 3d3d"])
def test_meta_errors_are_the_cpu_kernels(name):
    # ember's Meta kernel shares the CPU rule (PyTorch's mirrors its CUDA kernel's)
    want = _outcome(_error_cases(torch)[name])
    ember.set_default_device("meta")
    try:
        got = _outcome(_error_cases(ember)[name])
    finally:
        ember.set_default_device(None)
    assert got == want


def test_cuda_runs_the_composite():
    """On a CUDA device (simulated here) the CompositeExplicitAutograd kernel runs the device's
    products: the CPU result and gradients, on the device."""
    from helpers import simulated_cuda
    rng = np.random.default_rng(3)
    a_np = rng.standard_normal((16, 8)).astype(np.float32)
    b_np = rng.standard_normal((3, 8, 8)).astype(np.float32)
    results = []
    with simulated_cuda():
        for device in ("cpu", "cuda"):
            a = ember.tensor(a_np, device=device, requires_grad=True)
            b = ember.tensor(b_np, device=device, requires_grad=True)
            out = ember._grouped_mm(a, b, offs=ember.tensor([2, 5, 16], dtype=ember.int32,
                                                            device=device))
            out.backward(ember.ones_like(out))
            assert out.device.type == a.grad.device.type == device
            results.append([x.detach().cpu().numpy() for x in (out, a.grad, b.grad)])
    for got, want in zip(*results):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
