"""The dtype gates of rules/float8.py and rules/unsigned.py beside PyTorch, where the sweeps do
not reach them.

* The hot ops of ``float8.IN_KERNEL`` test for the refused dtypes in their own kernels instead of
  behind the gate's wrapper: each is registered unwrapped, is a row of a table, and is called on
  every barebones unsigned and float8 dtype (in place too), refusing or computing as PyTorch does
  and refusing at least one of them (so the check in the kernel is what runs).
* The out= forms of every op family either table lists, on uint16 and float8 inputs (the first
  out= sample of tests/opinfo*.py that PyTorch accepts, its float32 tensors converted), raise what
  PyTorch raises: they reach the functional kernel and its gate, and PyTorch's C++ type name of
  the dtype in out= dtype messages.
"""
import pytest

import ember
from ember._dispatch.dispatcher import get_entry
from ember._dispatch.keys import K
from ember._kernels.rules import float8, unsigned
from helpers import assert_same
from test_ops import _out_names, _same_type, ember_args, overload, torch_args
from test_out_sweep import _BY_OUT, _call, _torch_call, _valid_samples

_REFUSED = ["uint16", "uint32", "uint64", "float8_e4m3fn", "float8_e5m2", "float8_e8m0fnu"]

# IN_KERNEL op -> calls of it (``A``: the ops.aten namespace, ``m``/``b``/``v``: a 3x3 matrix, a
# 1x3x3 batch and a 3-vector of the dtype tried, ``f``: a float32 matrix, ``D``: the dtype)
_CALLS = {
    "add.Tensor": ["A.add.Tensor(m, m)"], "add_.Tensor": ["A.add_.Tensor(m, m)"],
    "sub.Tensor": ["A.sub.Tensor(m, m)"], "sub_.Tensor": ["A.sub_.Tensor(m, m)"],
    "mm": ["A.mm.default(m, m)"], "addmm": ["A.addmm.default(m, m, m)"],
    "bmm": ["A.bmm.default(b, b)"], "baddbmm": ["A.baddbmm.default(b, b, b)"],
    "mv": ["A.mv.default(m, v)"], "dot": ["A.dot.default(v, v)"],
    "relu": ["A.relu.default(m)"], "relu_": ["A.relu_.default(m)"],
    "_softmax": ["A._softmax.default(m, 1, False)", "A._softmax.default(m, 0, False)"],
    "_log_softmax": ["A._log_softmax.default(m, 1, False)"],
    "native_layer_norm": ["A.native_layer_norm.default(m, [3], None, None, 1e-5)"],
    "native_batch_norm": ["A.native_batch_norm.default(m, None, None, None, None, True, 0.1, "
                          "1e-5)"],
    "nll_loss_forward": ["A.nll_loss_forward.default(m, T.tensor([0, 1, 2]), None, 1, -100)"],
    "sum": ["A.sum.default(m)", "A.sum.default(f, dtype=D)"],
    "sum.dim_IntList": ["A.sum.dim_IntList(m, [0])", "A.sum.dim_IntList(f, [0], dtype=D)"],
    "max.dim": ["A.max.dim(m, 1)"], "argmax": ["A.argmax.default(m, 1)"],
    "index_select": ["A.index_select.default(v, 0, T.tensor([0, 2]))",
                     "A.index_select.default(m, 0, T.tensor([0, 2]))"],
    "threshold": ["A.threshold.default(m, 0.5, 2.0)"],
    "threshold_": ["A.threshold_.default(m, 0.5, 2.0)"],
    **{op: [f"A.{op}.default(m)"] for op in (
        "gelu", "gelu_", "silu", "silu_", "mish", "mish_", "elu", "elu_", "celu", "celu_",
        "leaky_relu", "leaky_relu_", "hardtanh", "hardtanh_", "hardsigmoid", "hardsigmoid_",
        "hardswish", "hardswish_", "softplus", "softshrink", "hardshrink")},
}


def _outcome(lib, expr, dtype):
    """(exception type name, message) of the call, or ("ok", dtype, shape) of its result."""
    D = getattr(lib, dtype)
    f = lib.tensor([[0.5, 1.0, 2.0], [1.5, 0.25, 3.0], [2.0, 1.0, 0.5]])
    env = dict(A=lib.ops.aten, T=lib, D=D, f=f, m=f.to(D), b=f[None].to(D), v=f[0].to(D))
    try:
        r = eval(expr, env)  # noqa: S307  (the expressions above)
    except Exception as e:  # noqa: BLE001  (compared with PyTorch's)
        return type(e).__name__, str(e)
    first = r[0] if isinstance(r, tuple) else r
    return "ok", str(first.dtype).split(".")[1], tuple(first.shape)


def test_in_kernel_ops_are_called_unwrapped_and_listed():
    assert set(_CALLS) == float8.IN_KERNEL, sorted(set(_CALLS) ^ float8.IN_KERNEL)
    for op in float8.IN_KERNEL:
        fn = get_entry(f"aten::{op}").kernels[K.CPU][-1].fn
        assert not hasattr(fn, "__wrapped__"), f"{op}: still behind the gate's wrapper"
        twin = unsigned.twin(op)
        assert unsigned._listed(op) is not None or op in float8.NO_CPU_KERNEL or \
            twin in float8.NO_CPU_KERNEL, f"{op} is in neither table"


@pytest.mark.parametrize("op", sorted(_CALLS))
def test_in_kernel_ops_refuse_as_pytorch(torch, op):
    refused = 0
    for expr in _CALLS[op]:
        for dtype in _REFUSED:
            want = _outcome(torch, expr, dtype)
            assert _outcome(ember, expr, dtype) == want, (expr, dtype)
            refused += want[0] == "NotImplementedError"
    assert refused, f"{op}: no call is refused, so nothing tests its check"


# ---------------------------------------------------------------------------------------------
# out= forms of the listed ops

_LISTED = {r.partition(".")[0] for r in [*unsigned.NO_CPU_KERNEL, *float8.NO_CPU_KERNEL]}
_OUTS = sorted(o for o in _BY_OUT if o.partition(".")[0] in _LISTED)

_XFAIL = {
    "isin.Scalar_Tensor_out": "ATen's isin takes its sorting path for these many test elements "
                              "(numpy's heuristic): unique and cat, which promote the scalar "
                              "with the tensor; ember's kernel is the default one's",
}


def _converted(lib, x, dtype):
    if isinstance(x, lib.Tensor) and x.dtype == lib.float32:
        return x.abs().to(getattr(lib, dtype))  # (magnitudes: unsigned targets)
    if isinstance(x, (list, tuple)):
        return type(x)(_converted(lib, v, dtype) for v in x)
    return x


@pytest.mark.parametrize("dtype", ["uint16", "float8_e4m3fn"])
@pytest.mark.parametrize("out", [
    pytest.param(o, marks=pytest.mark.xfail(strict=True, reason=_XFAIL[o])) if o in _XFAIL
    else o for o in _OUTS])
def test_out_forms_of_listed_ops(torch, out, dtype):
    if dtype.startswith("float8") and out in _XFAIL:
        pytest.skip("the float8 form differs alike (unique refuses float8): one xfail per op")
    samples = _valid_samples(torch, out)
    assert samples, f"{out}: no sample that PyTorch's out= accepts"
    op, s, results = samples[0]
    names = _out_names(out)
    ea, ek = ember_args(s)
    ta, tk = torch_args(torch, s)
    ea, ta = _converted(ember, ea, dtype), _converted(torch, ta, dtype)
    ek = {k: _converted(ember, v, dtype) for k, v in ek.items()}
    tk = {k: _converted(torch, v, dtype) for k, v in tk.items()}
    dtypes = [dtype if dt == "float32" else dt for dt, _ in results]
    e_outs = [ember.empty(shape, dtype=getattr(ember, d)) for d, (_, shape) in zip(dtypes, results)]
    t_outs = [torch.empty(shape, dtype=getattr(torch, d)) for d, (_, shape) in zip(dtypes, results)]
    _, t_exc, _ = _torch_call(overload(torch.ops, out), ta, {**tk, **dict(zip(names, t_outs))})
    _, e_exc, _ = _call(overload(ember.ops, out), ea, {**ek, **dict(zip(names, e_outs))})
    if t_exc is not None:
        assert e_exc is not None, f"PyTorch raised {t_exc!r}, ember did not"
        assert _same_type(e_exc, t_exc) and str(e_exc) == str(t_exc), (e_exc, t_exc)
        return
    assert e_exc is None, f"ember raised {e_exc!r}, PyTorch did not"
    for e, t in zip(e_outs, t_outs):
        if "float8" in str(t.dtype):
            e, t = e.float(), t.float()
        assert_same(e, t)
