"""ember._decomp: every decomposition equals the op it replaces (values, dtypes and gradients)
on the OpInfo samples (tests/opinfo*.py) or, for ops the table does not cover (backward ops,
views, factories), on samples here; the tables are shaped as PyTorch's."""
import math

import pytest

import ember
from ember import _decomp
from ember._decomp import (core_aten_decompositions, decomposition_table, get_decompositions,
                           is_core, register_decomposition)
from opinfo import OPS
from test_ops import ember_args

aten = ember.ops.aten
_BY_NAME = {o.name: o for o in OPS}


def _qual(op):
    return f"{op._opname}.{op._overloadname}"


# Eager kernels that round a half or bfloat16 intermediate to the dtype, as ATen's do
# (log_softmax over the last dim: each row's sum of exponentials), where the decomposition
# computes in float (as PyTorch's): the two differ by the dtype's resolution
_ROUNDS_INTERMEDIATES = {"_log_softmax.default"}


def _close(a, b, op, rtol=1e-5, atol=1e-6):
    if isinstance(a, (tuple, list)):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            _close(x, y, op, rtol, atol)
        return
    if not isinstance(a, ember.Tensor):
        assert a == b
        return
    assert a.dtype == b.dtype, (op, a.dtype, b.dtype)
    assert tuple(a.shape) == tuple(b.shape), (op, a.shape, b.shape)
    if a.is_complex():  # a decomposition may round otherwise; the parts, NaN for NaN
        a, b = ember.view_as_real(a.resolve_conj()), ember.view_as_real(b.resolve_conj())
    if a.is_floating_point():
        if op in _ROUNDS_INTERMEDIATES and a.dtype in (ember.float16, ember.bfloat16):
            rtol = atol = ember.finfo(a.dtype).eps
        assert ember.allclose(a, b, rtol=rtol, atol=atol, equal_nan=True), (op, a, b)
    else:
        assert ember.equal(a, b), (op, a, b)


def _tensors(x):
    if isinstance(x, ember.Tensor):
        return [x]
    if isinstance(x, (tuple, list)):
        return [t for y in x for t in _tensors(y)]
    return []


def _check_grads(op, decomp, args, kwargs, only_first=False):
    """Gradients of decomposition and op agree (float64 inputs, a fixed cotangent); where the
    decomposition's output does not require grad, the op's gradient must be zero."""
    leaves = [t for t in _tensors(args) if t.dtype == ember.float64]
    if only_first:
        leaves = leaves[:1]
    if not leaves:
        return
    for t in leaves:
        t.requires_grad_(True)
    ref = _tensors(op(*args, **kwargs))
    got = _tensors(decomp(*args, **kwargs))
    for r, g in zip(ref, got):
        if not (r.is_floating_point() and r.requires_grad):
            continue
        cot = ember.linspace(-1, 1, max(r.numel(), 1), dtype=r.dtype).reshape(r.shape) \
            if r.numel() else ember.zeros_like(r)
        try:
            gr = ember.autograd.grad([r], leaves, [cot], allow_unused=True, retain_graph=True)
        except RuntimeError as e:  # the op is not differentiable (floor_divide, heaviside)
            assert "derivative for" in str(e) and "is not implemented" in str(e)
            return
        if not g.requires_grad:
            assert all(a is None or not a.abs().sum() for a in gr), op
            continue
        gg = ember.autograd.grad([g], leaves, [cot], allow_unused=True, retain_graph=True)
        for a, b in zip(gr, gg):
            if a is None:  # the op says "not differentiable" here; the decomposition may be
                continue
            if str(op).split("aten.")[-1] in _SINGULAR and not all(
                    bool(ember.isfinite(x).all()) for x in (a, b) if x is not None):
                continue  # one of the two gradients is undefined here (see _SINGULAR)
            if b is None:
                assert (a is None or not a.abs().sum()) and (b is None or not b.abs().sum())
                continue
            assert ember.allclose(a, b, rtol=1e-6, atol=1e-8, equal_nan=True), (op, a, b)


# At a zero norm / zero deviation / no degrees of freedom / zero distance the kernels' backward
# formulas pick a subgradient (0) where the composition of sqrt and sum (or clamp_min, or pow
# with an exponent below 1 at a zero element) gives nan or another value: PyTorch's own
# decompositions differ there in the same way, so those samples compare values only.
_SINGULAR = {"std.correction", "var_mean.correction", "linalg_vector_norm.default",
             "std_mean.correction", "_euclidean_dist.default"}


def _singular(out):
    # (1e-15: where _euclidean_dist's clamp puts a zero distance, sqrt(1e-30))
    return any(not bool(ember.isfinite(t).all()) or bool((t.abs() <= 1e-15).any())
               for t in _tensors(out) if t.is_floating_point())


TABLE_OPS = sorted((_qual(op) for op in decomposition_table if _qual(op) in _BY_NAME))


@pytest.mark.parametrize("name", TABLE_OPS)
def test_decomposition_on_opinfo_samples(name):
    info = _BY_NAME[name]
    packet, ov = name.rsplit(".", 1)
    op = getattr(getattr(aten, packet), ov)
    decomp = decomposition_table[op]
    checked = 0
    for sample in info.samples(info):
        args, kwargs = ember_args(sample)
        try:
            want = op(*args, **kwargs)
        except Exception:  # noqa: BLE001  (error samples test the op's checks, not this)
            continue
        got = decomp(*args, **kwargs)
        _close(want, got, name, max(info.rtol, 1e-5), max(info.atol, 1e-6))
        if not (name in _SINGULAR and _singular(want)):
            _check_grads(op, decomp, *ember_args(sample))
        checked += 1
    assert checked, f"no sample of {name} ran"


def _r(*shape, dtype=ember.float64, seed=[0]):
    seed[0] += 1
    g = ember.Generator().manual_seed(seed[0])
    return ember.randn(*shape, generator=g, dtype=dtype)


def _manual():
    x = _r(3, 4)
    sm = ember.softmax(x, 1)
    lsm = ember.log_softmax(x, 1)
    mask = ember.tensor([[True, False, True, True]] * 3)
    tgt = ember.tensor([0, 3, 1])
    return {
        aten.t.default: [(x,), (_r(5),)],
        aten.transpose.int: [(x, 0, 1), (_r(2, 3, 4), -1, 0), (_r(2, 3, 4), 1, 1)],
        aten.detach.default: [(x,)],
        aten._unsafe_view.default: [(x, [2, 6])],
        aten.squeeze.default: [(_r(1, 3, 1, 2),)],
        aten.split.Tensor: [(_r(7, 2), 3), (_r(2, 6), 2, 1)],
        aten.unbind.int: [(x, 1)],
        aten.zeros.default: [([2, 3],), ([2], ), ([0, 1],)],
        aten.ones.default: [([2, 3],)],
        aten.zeros_like.default: [(x,), (tgt,)],
        aten.ones_like.default: [(x,)],
        aten.new_zeros.default: [(tgt, [2, 2])],
        aten.new_ones.default: [(x, [3])],
        aten.new_full.default: [(x, [2], 1.5)],
        aten.arange.default: [(5,)],
        aten.arange.start: [(2, 7)],
        aten.native_dropout_backward.default: [(x, mask, 1.25)],
        aten.threshold_backward.default: [(x, _r(3, 4), 0.0)],
        aten.gelu_backward.default: [(x, _r(3, 4)), ((x, _r(3, 4)), {"approximate": "tanh"})],
        aten.silu_backward.default: [(x, _r(3, 4))],
        aten.elu_backward.default: [(x, 1.0, 1.0, 1.0, False, _r(3, 4)),
                                    (x, 0.5, 1.5, 2.0, False, _r(3, 4)),
                                    (x, 0.5, 1.5, 2.0, True, ember.nn.functional.elu(
                                        _r(3, 4), 0.5) * 1.5)],
        aten.leaky_relu_backward.default: [(x, _r(3, 4), 0.01, False)],
        aten.hardtanh_backward.default: [(x, _r(3, 4) * 2, -1.0, 1.0)],
        aten._softmax_backward_data.default: [(x, sm, 1, ember.float64)],
        aten._log_softmax_backward_data.default: [(x, lsm, 1, ember.float64)],
        aten.nll_loss_backward.default: [
            (ember.tensor(1.5, dtype=ember.float64), lsm, tgt, None, 1, -100,
             ember.tensor(3.0, dtype=ember.float64)),
            (ember.tensor(1.0, dtype=ember.float64), lsm, ember.tensor([0, -100, 2]),
             _r(4).abs(), 2, -100, ember.tensor(1.0, dtype=ember.float64)),
            (_r(3), lsm, tgt, None, 0, -100, ember.tensor(0.0, dtype=ember.float64))],
        aten.clamp_min.Tensor: [(x, _r(3, 4))],
        aten.clamp_max.Tensor: [(x, _r(4))],
    }


MANUAL_OPS = sorted(_manual(), key=str)


@pytest.mark.parametrize("op", MANUAL_OPS, ids=str)
def test_decomposition_on_samples(op):
    for sample in _manual()[op]:
        args, kwargs = (sample if len(sample) == 2 and isinstance(sample[1], dict)
                        else (sample, {}))
        want = op(*args, **kwargs)
        got = decomposition_table[op](*args, **kwargs)
        _close(want, got, str(op))
        # backward ops: the gradient that matters is the one of grad_output (double backward)
        _check_grads(op, decomposition_table[op],
                     [a.detach().clone() if isinstance(a, ember.Tensor) else a for a in args],
                     kwargs, only_first="backward" in str(op))


def test_uninitialized_factories():
    x = _r(2, 3)
    for op, args in ((aten.empty_like.default, (x,)), (aten.new_empty.default, (x, [4]))):
        want, got = op(*args), decomposition_table[op](*args)
        assert (want.shape, want.dtype, want.device) == (got.shape, got.dtype, got.device)
    got = decomposition_table[aten.empty_like.default](x, dtype=ember.int32)
    assert got.dtype == ember.int32


def test_every_decomposition_is_tested():
    tested = set(TABLE_OPS) | {_qual(op) for op in MANUAL_OPS} | {
        "empty_like.default", "new_empty.default", "native_batch_norm.default",
        "native_batch_norm_backward.default"}
    # the core ops Inductor decomposes are tested in tests/test_inductor_decomposition.py
    # (which checks that it covers every one)
    untested = {_qual(op) for op in decomposition_table if not is_core(op)} - tested
    assert not untested, untested


def test_decompositions_lower_to_core():
    """A decomposition emits core ops only (traced once on its samples)."""
    from ember.fx.experimental.proxy_tensor import make_fx
    table = core_aten_decompositions()
    for op, samples in _manual().items():
        for sample in samples:
            args, kwargs = (sample if len(sample) == 2 and isinstance(sample[1], dict)
                            else (sample, {}))
            gm = make_fx(lambda *a: op(*a, **kwargs), decomposition_table=table)(*args)
            for n in gm.graph.nodes:
                if n.op == "call_function" and hasattr(n.target, "_schema"):
                    assert is_core(n.target), (op, n.target)


def test_core_set_is_pytorch_213():
    from ember._decomp._core_ops import CORE_ATEN_OPS
    assert len(CORE_ATEN_OPS) == 193
    assert is_core(aten.add.Tensor) and is_core(aten.convolution.default)
    assert not is_core(aten.t.default) and not is_core(aten.add_.Tensor)
    torch = pytest.importorskip("torch")
    for name in ("addmm.default", "native_layer_norm.default", "_softmax.default",
                 "slice_scatter.default", "var.correction", "sum.dim_IntList"):
        p, o = name.rsplit(".", 1)
        assert torch.Tag.core in getattr(getattr(torch.ops.aten, p), o).tags
        assert name in CORE_ATEN_OPS
    # the table also holds decompositions of core ops (for Inductor, as PyTorch's does);
    # core_aten_decompositions leaves those out
    assert any(is_core(op) for op in decomposition_table)
    for op in core_aten_decompositions():
        assert not is_core(op)


def test_get_and_register():
    d = get_decompositions([aten.split, aten.t.default])
    assert set(d) == {aten.split.Tensor, aten.t.default}
    assert aten.mul.Tensor not in core_aten_decompositions()
    table = {}

    @register_decomposition(aten.mul.Tensor, registry=table)
    def mul(a, b):
        return aten.add.Tensor(a, b)
    assert table == {aten.mul.Tensor: mul}
    with pytest.raises(RuntimeError, match="duplicate"):
        register_decomposition(aten.t.default)(lambda x: x)
    assert set(_decomp.global_decomposition_table) == {"post_autograd", "pre_autograd", "meta"}
    assert math.isfinite(1.0)


@pytest.mark.parametrize("training", [True, False])
def test_batch_norm_forward_backward(training):
    op, bwd = aten.native_batch_norm.default, aten.native_batch_norm_backward.default
    x, w, b = _r(4, 3, 5), _r(3), _r(3)
    rm, rv = _r(3), _r(3).abs() + 0.5
    rm2, rv2 = rm.clone(), rv.clone()
    want = op(x, w, b, rm, rv, training, 0.1, 1e-5)
    got = decomposition_table[op](x, w, b, rm2, rv2, training, 0.1, 1e-5)
    _close(want, got, "native_batch_norm")
    _close((rm, rv), (rm2, rv2), "running stats")
    g = _r(4, 3, 5)
    args = (g, x, w, rm, rv, want[1], want[2], training, 1e-5, [True, True, True])
    _close(bwd(*args), decomposition_table[bwd](*args), "native_batch_norm_backward")
