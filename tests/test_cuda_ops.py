"""The op table (tests/opinfo.py) on ``cuda``: every sample of every op runs on the CPU and on the
CUDA device — the simulated one in CI, a real GPU when one is here — with the same inputs (the
same strides and offsets: device tensors alias a copy of each CPU storage), and must give the
same values, dtypes and shapes, or the same exception type. In-place variants must write the
device tensor itself."""
import warnings

import numpy as np

import pytest

import ember
from ember._tensor import make_tensor
from helpers import assert_identical, assert_same, real_gpu
from opinfo import OPS
from test_ops import _ids, _tol, ember_args, overload

_REAL_GPU = real_gpu()
# Arguments PyTorch requires on the CPU even when the op runs on CUDA (by position).
_CPU_ARGS = {"tensor_split.tensor_indices_or_sections": (1,)}


pytestmark = pytest.mark.usefixtures("cuda_device")  # the GPU or the simulated device


def _to_cuda(x, storages):
    """``x`` with every tensor on cuda, keeping sizes, strides, offsets and shared storages."""
    if hasattr(x, "_keyset"):
        st = x._storage
        dev = storages.get(id(st))
        if dev is None:
            raw = ember.empty(st.nbytes(), dtype=ember.uint8)
            raw._storage.copy_(st)
            dev = storages[id(st)] = raw.cuda()._storage
        return make_tensor(dev, x._size, x._stride, x._offset, x._dtype, dev.device)
    if isinstance(x, (list, tuple)):
        return type(x)(_to_cuda(v, storages) for v in x)
    return x


def _run(fn, *args, **kwargs):
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = fn(*args, **kwargs)
            if _REAL_GPU:  # a failed device-side check raises at a synchronisation
                ember.cuda.synchronize()
            return out, None
    except Exception as e:  # noqa: BLE001  (compared with the CPU's exception below)
        return None, e


def _same_failure(cpu_exc, dev_exc):
    """The device failed as the CPU did: the same exception type, or — on a GPU, for an index
    out of range — PyTorch's device-side assertion, a RuntimeError at the synchronisation."""
    if type(dev_exc) is type(cpu_exc):
        return True
    return _REAL_GPU and isinstance(cpu_exc, IndexError) and isinstance(dev_exc, RuntimeError) \
        and "device-side assert triggered" in str(dev_exc)


def _compare(op, cpu, dev, desc):
    if isinstance(cpu, (tuple, list)):
        assert isinstance(dev, (tuple, list)) and len(cpu) == len(dev), desc
        for c, d in zip(cpu, dev):
            _compare(op, c, d, desc)
        return
    if not hasattr(cpu, "_keyset"):
        assert cpu == dev or (cpu != cpu and dev != dev), f"{op.name} [{desc}]: {cpu} != {dev}"
        return
    assert dev.device.type == "cuda", f"{op.name} [{desc}]: result on {dev.device}"
    rtol, atol = _tol(op, dev)
    try:
        assert_same(dev.cpu(), cpu, rtol=rtol, atol=atol)
    except AssertionError as err:
        raise AssertionError(f"{op.name} [{desc}]: {err}") from None


@pytest.mark.parametrize("op", OPS, ids=_ids(OPS))
def test_values_on_cuda(op):
    e_op = overload(ember.ops, op.name)
    tags = {str(t) for t in e_op.tags}
    for s in op.samples(op):
        ea, ek = ember_args(s)
        keep = _CPU_ARGS.get(op.name, ())
        da = [a if i in keep else _to_cuda(a, {}) for i, a in enumerate(ea)]
        dk = {k: _to_cuda(v, {}) for k, v in ek.items()}
        if "nondeterministic_seeded" in tags:
            ember.manual_seed(0)
        cpu, cpu_exc = _run(e_op, *ea, **ek)
        if "nondeterministic_seeded" in tags:
            ember.manual_seed(0)  # the device generator gets the same seed and stream
        dev, dev_exc = _run(e_op, *da, **dk)
        if cpu_exc is not None:
            assert dev_exc is not None and _same_failure(cpu_exc, dev_exc), \
                f"{op.name} [{s.desc}]: CPU raised {cpu_exc!r}, cuda {dev_exc!r}"
            continue
        assert dev_exc is None, f"{op.name} [{s.desc}]: cuda raised {dev_exc!r}"
        _compare(op, cpu, dev, s.desc)


@pytest.mark.parametrize("op", [o for o in OPS if o.inplace],
                         ids=_ids([o for o in OPS if o.inplace]))
def test_inplace_on_cuda(op):
    e_op = overload(ember.ops, op.inplace)
    for s in op.samples(op):
        ea, ek = ember_args(s)
        da = _to_cuda(ea, {})
        dk = {k: _to_cuda(v, {}) for k, v in ek.items()}
        cpu, cpu_exc = _run(e_op, *ea, **ek)
        dev, dev_exc = _run(e_op, *da, **dk)
        if cpu_exc is not None:
            assert dev_exc is not None and _same_failure(cpu_exc, dev_exc), \
                f"{op.inplace} [{s.desc}]: CPU raised {cpu_exc!r}, cuda {dev_exc!r}"
            continue
        assert dev_exc is None, f"{op.inplace} [{s.desc}]: cuda raised {dev_exc!r}"
        assert dev is da[0], f"{op.inplace} [{s.desc}]: the result is not self"
        _compare(op, cpu, dev, s.desc)


# Zeros, infinities and subnormals, where CuPy's kernels computed otherwise than PyTorch's (found
# on an H200 by benchmarks/gpu_special_values_check.py; the op table's random samples meet an
# exact zero only now and then). The device must give the CPU's values.
_INF = float("inf")
_EDGES = [0.0, -0.0, 1.0, -1.0, 2.5, -2.5, 1e30, -1e30, _INF, -_INF, float("nan")]


def _same_bits(dev, cpu):
    """The CPU's values, signs of zero and NaN positions, in the CPU's dtype."""
    d, c = dev.cpu().numpy(), cpu.numpy()
    assert d.dtype == c.dtype
    assert_identical(d, c)


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_nextafter_and_floor_divide_at_the_edges_as_on_the_cpu(dtype):
    subnormal = {"float16": 6e-8, "float32": 1e-40, "float64": 5e-324}[dtype]
    for name, values in (("nextafter", _EDGES + [subnormal, -subnormal]),
                         ("floor_divide", _EDGES)):
        v = ember.tensor(values, dtype=getattr(ember, dtype))
        x, y = v[:, None].expand(len(v), len(v)), v[None, :].expand(len(v), len(v))
        cpu = getattr(ember, name)(x, y)
        _same_bits(getattr(ember, name)(x.cuda(), y.cuda()), cpu)


def test_float32_subnormals_are_kept_as_on_the_cpu():
    """CuPy compiles its kernels flushing float32 subnormals to zero unless ember's runtime
    tells it otherwise (ember/cuda/_subnormals.py): ufuncs, a reduction and ember's raw binary
    kernel, at and around the smallest subnormal."""
    x = ember.tensor([1e-40, -1e-40, 1.4e-45, 0.0, 3.0] * 8, dtype=ember.float32)
    for fn in (ember.sqrt, ember.sign, ember.log, ember.ceil, ember.logical_not,
               lambda t: ember.atan2(t, ember.zeros_like(t)), lambda t: t * 1.0, lambda t: t + t,
               lambda t: t[:3].sum(), lambda t: t[:2].amin()):
        _same_bits(fn(x.cuda()), fn(x))


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_complex_reciprocal_rsqrt_and_logs_at_zeros_as_on_the_cpu(dtype):
    parts = [0.0, -0.0, 1.0, -2.5]
    z = ember.tensor([complex(a, b) for a in parts for b in parts], dtype=getattr(ember, dtype))
    for name in ("reciprocal", "rsqrt", "log2", "log10"):
        cpu, dev = getattr(ember, name)(z), getattr(ember, name)(z.cuda())
        assert_same(dev.cpu(), cpu, rtol=1e-6, atol=0)
    # PyTorch's values where NumPy's reciprocal differs: 1 / 0j is inf + NaNj
    r = ember.reciprocal(ember.zeros(1, dtype=getattr(ember, dtype)))
    assert np.isposinf(r.real.item()) and np.isnan(r.imag.item())
