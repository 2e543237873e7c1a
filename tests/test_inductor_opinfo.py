"""Every op Inductor lowers, on the OpInfo table's samples: compiled against eager (values
within the entry's tolerances, NaN/inf in the same places, dtypes and shapes equal).

All samples of one op go into one compiled function (one C module per op), so the table costs
a build per op, not per sample."""
import shutil
import warnings

import pytest

import ember
from ember._inductor.lowering import lowerings
from opinfo import OPS
from test_ops import ember_args

pytestmark = pytest.mark.skipif(shutil.which("cc") is None and shutil.which("gcc") is None,
                                reason="Inductor needs a C compiler")


def _overload(name):
    packet, _, ov = name.partition(".")
    return getattr(getattr(ember.ops.aten, packet, None), ov or "default", None)


LOWERED = [op for op in OPS if _overload(op.name) in lowerings]


@pytest.fixture(autouse=True)
def _cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "ind"))
    ember._dynamo.reset()


def _eager_cases(op):
    fn = _overload(op.name)
    cases = []
    for sample in op.samples(op):
        args, kwargs = ember_args(sample)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                ref = fn(*args, **kwargs)
        except Exception:  # noqa: BLE001  (error samples: the eager path's business)
            continue
        cases.append((args, kwargs, ref, sample.desc))
    return fn, cases


@pytest.mark.parametrize("op", LOWERED, ids=lambda op: op.name)
def test_lowered_op_matches_eager(op, caplog):
    fn, cases = _eager_cases(op)
    if not cases:
        pytest.skip("no sample runs eagerly")
    tensors = [[a for a in args if isinstance(a, ember.Tensor)] for args, _, _, _ in cases]

    def run_all(*flat):
        it = iter(flat)
        outs = []
        for args, kwargs, _, _ in cases:
            call = [next(it) if isinstance(a, ember.Tensor) else a for a in args]
            outs.append(fn(*call, **kwargs))
        return outs
    flat = [t for ts in tensors for t in ts]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = ember.compile(run_all, backend="inductor")(*flat)
    # a lowering whose result disagrees with the traced metadata falls back with a warning
    assert not [r for r in caplog.records if "running it eagerly" in r.getMessage()]
    for (args, kwargs, ref, desc), out in zip(cases, got):
        refs = ref if isinstance(ref, (tuple, list)) else (ref,)
        outs = out if isinstance(out, (tuple, list)) else (out,)
        for r, o in zip(refs, outs):
            if not isinstance(r, ember.Tensor):
                assert o == r, (op.name, desc)
                continue
            assert (o.dtype, o.shape) == (r.dtype, r.shape), (op.name, desc)
            if r.dtype.is_complex:  # (runs as a fallback) compared as (re, im) pairs
                o, r = ember.view_as_real(o.resolve_conj()), ember.view_as_real(r.resolve_conj())
            half = r.dtype in (ember.float16, ember.bfloat16)
            # compiled math differs from NumPy's by a few ulp (vector libm, fused order)
            ember.testing.assert_close(o, r, rtol=max(op.rtol, 2e-2 if half else 2e-6),
                                       atol=max(op.atol, 2e-2 if half else 1e-6),
                                       equal_nan=True, msg=f"{op.name} {desc}")


# ops whose lowering is a timed choice (max-autotune): their samples again, on the C template
AUTOTUNED = [op for op in LOWERED
             if lowerings[_overload(op.name)].__module__ == "ember._inductor.kernel.mm"]


@pytest.mark.parametrize("op", AUTOTUNED, ids=lambda op: op.name)
def test_autotuned_op_matches_eager(op, caplog):
    from ember._inductor import config
    with config.patch(max_autotune=True, max_autotune_gemm_backends="CPP"):
        test_lowered_op_matches_eager(op, caplog)
