"""The conjugate and negative bits against PyTorch: ``conj()`` of a complex tensor and
``conj().imag`` are lazy views of the input's memory (``is_conj()``/``is_neg()``), views of them
keep the bit, other ops see the values (the Conjugate/Negative keys' kernels,
``ember/_kernels/math_bits.py``), writes through them land conjugated (negated) in the base, and
autograd, printing, errors, serialization and the inverse real FFTs behave as PyTorch's."""
import copy
import io
import pickle
import warnings

import numpy as np
import pytest

import ember
from helpers import assert_identical, assert_same, to_np

torch = pytest.importorskip("torch")


def _base(L):
    return L.tensor([[1 + 2j, 3 - 4j, -0.5j], [2.5 + 0j, -1 + 1j, 4 - 2j]])


def _flags(t):
    return t.is_conj(), t.is_neg()


def _same(e, t):
    """Values (resolved), dtype, shape and both bits agree."""
    assert _flags(e) == _flags(t), (_flags(e), _flags(t))
    assert_same(e, t)


def _outcome(fn):
    try:
        return fn(), None
    except Exception as exc:  # noqa: BLE001  (compared with PyTorch's)
        return None, (type(exc).__name__, str(exc).split(" (Triggered internally")[0])


# ---------------------------------------------------------------------------------------------
# The lazy views and views of them

def test_conj_is_a_view_with_the_bit():
    for L in (ember, torch):
        x = _base(L)
        c = x.conj()
        assert c.is_conj() and not x.is_conj() and c._base is x
        assert c.data_ptr() == x.data_ptr()
        assert not c.conj().is_conj() and c.conj().data_ptr() == x.data_ptr()
        f = L.tensor([1.0, 2.0])
        assert f.conj() is f  # a real tensor's conj() is itself
    assert str(ember._C._dispatch_keys(_base(ember).conj())) == \
        str(torch._C._dispatch_keys(_base(torch).conj()))
    assert str(ember._C._dispatch_keys(ember.tensor([1.0])._neg_view())) == \
        str(torch._C._dispatch_keys(torch.tensor([1.0])._neg_view()))


VIEWS = {
    "view": lambda c: c.view(-1), "reshape": lambda c: c.reshape(3, 2), "t": lambda c: c.t(),
    "transpose": lambda c: c.transpose(0, 1), "getitem": lambda c: c[1, ::2],
    "select": lambda c: c.select(1, 2), "narrow": lambda c: c.narrow(1, 1, 2),
    "expand": lambda c: c[0].expand(4, 3), "unsqueeze": lambda c: c.unsqueeze(0),
    "squeeze": lambda c: c[:1].squeeze(), "permute": lambda c: c.permute(1, 0),
    "diagonal": lambda c: c.diagonal(), "unfold": lambda c: c.unfold(1, 2, 1),
    "split": lambda c: c.split(1)[1], "unbind": lambda c: c.unbind(1)[2],
    "chunk": lambda c: c.chunk(3, 1)[0], "movedim": lambda c: c.movedim(0, 1),
    "as_strided": lambda c: c.as_strided((2, 2), (1, 3), 1), "detach": lambda c: c.detach(),
    "contiguous": lambda c: c.contiguous(), "to_same": lambda c: c.to(c.dtype),
    "unflatten": lambda c: c.unflatten(1, (3, 1)), "alias": lambda c: c.view_as(c),
    "real": lambda c: c.real, "imag": lambda c: c.imag, "imag_of_view": lambda c: c[1].imag,
    "neg_of_imag": lambda c: c.imag._neg_view(), "neg_view": lambda c: c._neg_view(),
    "resolve_neg_keeps": lambda c: c.resolve_neg(), "conj_of_neg": lambda c: c._neg_view().conj(),
}


@pytest.mark.parametrize("name", VIEWS)
def test_views_keep_the_bits(name):
    xe, xt = _base(ember), _base(torch)
    e, t = VIEWS[name](xe.conj()), VIEWS[name](xt.conj())
    _same(e, t)
    assert e.stride() == t.stride() and e.storage_offset() == t.storage_offset()
    assert (e.untyped_storage().data_ptr() == xe.untyped_storage().data_ptr()) == \
        (t.untyped_storage().data_ptr() == xt.untyped_storage().data_ptr())



OPS = {
    "clone": lambda L, c: c.clone(), "resolve_conj": lambda L, c: c.resolve_conj(),
    "contiguous_copy": lambda L, c: c.t().contiguous(), "to": lambda L, c: c.to(L.complex128),
    "exp": lambda L, c: c.exp(), "mul": lambda L, c: c * 2, "add": lambda L, c: c + c.conj(),
    "sum": lambda L, c: c.sum(1), "flip": lambda L, c: c.flip(0), "abs": lambda L, c: c.abs(),
    "angle": lambda L, c: c.angle(), "cumsum": lambda L, c: c.cumsum(1),
    "eq": lambda L, c: c == c.conj(), "conj_physical": lambda L, c: c.conj_physical(),
    "neg": lambda L, c: c.neg(), "mm": lambda L, c: c.mm(c.mT),
    "matmul_mH": lambda L, c: c.conj() @ c.mH, "cat": lambda L, c: L.cat((c, c.conj())),
    "stack_list": lambda L, c: L.stack([c[0], c[1].conj()]),
    "where": lambda L, c: L.where(c.real > 0, c, c.conj()),
    "solve": lambda L, c: L.linalg.solve(c[:, :2].mH @ c[:, :2], c[:, :2].mH),
    "dot": lambda L, c: L.dot(c[0], c[1]), "vdot": lambda L, c: L.vdot(c[0], c[1]),
    "dot_first": lambda L, c: L.dot(c[0], c[1].conj()),
    "dot_second": lambda L, c: L.dot(c[0].conj(), c[1]),
    "vdot_first": lambda L, c: L.vdot(c[0], c[1].conj()),
    "vdot_second": lambda L, c: L.vdot(c[0].conj(), c[1]),
    "matmul_vectors": lambda L, c: c[0] @ c[1],
    "dot_out": lambda L, c: L.dot(c[0], c[1], out=L.empty((), dtype=c.dtype)),
    "imag_mul": lambda L, c: c.imag * 3, "imag_sum": lambda L, c: c.imag.sum(),
    "neg_view_exp": lambda L, c: c._neg_view().exp(),
    "zeros_like": lambda L, c: L.zeros_like(c), "full_like": lambda L, c: L.full_like(c, 2j),
    "resolve_both": lambda L, c: c._neg_view().resolve_conj(),
    "clone_both": lambda L, c: c._neg_view().clone(),
}


@pytest.mark.parametrize("name", OPS)
def test_ops_see_the_values(name):
    _same(OPS[name](ember, _base(ember).conj()), OPS[name](torch, _base(torch).conj()))


def test_python_values():
    for L in (ember, torch):
        c = _base(L).conj()
        assert c.tolist() == _base(L).conj_physical().tolist()
        assert c[0, 1].item() == 3 + 4j and c.imag[0, 0].item() == -2.0
        assert complex(c[1, 2]) == 4 + 2j
    assert_identical(_base(ember).conj().numpy(force=True), _base(torch).conj().numpy(force=True))
    assert_identical(_base(ember).conj().imag.numpy(force=True),
                     _base(torch).conj().imag.numpy(force=True))


def test_printing():
    for expr in (lambda x: x.conj(), lambda x: x.conj().imag, lambda x: x._neg_view(),
                 lambda x: x._neg_view().conj(), lambda x: x.conj()[:, 1:]):
        assert repr(expr(_base(ember))) == repr(expr(_base(torch)))


def test_inference_mode():
    results = []
    for L in (ember, torch):
        with L.inference_mode():
            c = _base(L).conj()
            results.append((_flags(c), str(L._C._dispatch_keys(c)), repr(c * 2), repr(c.imag)))
    assert results[0] == results[1]


# ---------------------------------------------------------------------------------------------
# Writes through the views

def _sum_out(L, v):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (the resize warning; both libraries give it)
        L.sum(L.ones(2, 3, dtype=v.dtype), 0, out=v)


WRITES = {
    "add_": lambda L, v: v.add_(1j), "mul_": lambda L, v: v.mul_(2 - 1j),
    "setitem": lambda L, v: v.__setitem__((0, 1), 5 + 1j), "zero_": lambda L, v: v.zero_(),
    "fill_": lambda L, v: v.fill_(1j), "copy_in": lambda L, v: v.copy_(L.ones(2, 3) * 1j),
    "copy_same_base": lambda L, v: v.copy_(v.conj()),
    "conj_physical_": lambda L, v: v.conj_physical_(),
    "out": lambda L, v: L.add(L.ones(2, 3) * 1j, 1, out=v), "out_resized": _sum_out,
    "slice_add_": lambda L, v: v[:, 1:].add_(1), "imag_add_": lambda L, v: v.imag.add_(1),
    "imag_copy_": lambda L, v: v.imag.copy_(L.ones(2, 3)), "real_mul_": lambda L, v: v.real.mul_(3),
    "neg_view_sub_": lambda L, v: v._neg_view().sub_(1 + 1j),
    "index_put_": lambda L, v: v.__setitem__((L.tensor([1, 0]), L.tensor([2, 1])), 3j),
    "masked_fill_": lambda L, v: v.masked_fill_(v.real > 1, 2 - 2j),
    "transposed_add_": lambda L, v: v.t().add_(L.arange(6.0).reshape(3, 2) * 1j),
    "from_own_base": lambda L, v: v.add_(v._base),
    "into_base_from_view": lambda L, v: v._base.mul_(v),
}


@pytest.mark.parametrize("name", WRITES)
def test_writes_land_through_the_bit(name):
    got = []
    for L in (ember, torch):
        x = _base(L)
        c = x.conj()
        v0 = x._version
        WRITES[name](L, c)
        got.append((x, c, x._version - v0))
    (xe, ce, ve), (xt, ct, vt) = got
    _same(xe, xt)
    _same(ce, ct)
    assert ve == vt


def test_copy_from_a_view_into_a_plain_tensor():
    for L in (ember, torch):
        x = _base(L)
        y = L.zeros(2, 3, dtype=L.complex64)
        y.copy_(x.conj())
        assert not y.is_conj() and y.tolist() == x.conj_physical().tolist()
        r = L.zeros(3)
        r.copy_(x.conj().imag[0])
        assert r.tolist() == [-2.0, 4.0, 0.5]


def test_neg_view_of_real_tensor():
    got = []
    for L in (ember, torch):
        x = L.tensor([1.0, -2.0, 3.0])
        n = x._neg_view()
        flags = _flags(n), _flags(n.resolve_neg()), repr(n), (n * 2).tolist()
        n.add_(1)
        got.append((flags, x.tolist(), n.tolist()))
    assert got[0] == got[1]


# ---------------------------------------------------------------------------------------------
# Errors

ERRORS = {
    "view_as_real": lambda L: L.view_as_real(_base(L).conj()),
    "numpy_conj": lambda L: _base(L).conj().numpy(),
    "numpy_neg": lambda L: _base(L).conj().imag.numpy(),
    "array": lambda L: np.asarray(_base(L).conj()),
    "view_dtype_conj": lambda L: _base(L).conj().view(L.float32),
    "view_same_dtype_conj": lambda L: _base(L).conj().view(L.complex64),
    "view_dtype_neg": lambda L: _base(L).conj().imag.view(L.int32),
    "dlpack": lambda L: _base(L).conj().__dlpack__(),
    "foreach_mutable_list": lambda L: L._foreach_add_([_base(L).conj()], [_base(L)]),
}


@pytest.mark.parametrize("name", ERRORS)
def test_errors(name):
    e, t = _outcome(lambda: ERRORS[name](ember)), _outcome(lambda: ERRORS[name](torch))
    assert t[1] is not None and e[1] == t[1]


def test_two_mutable_conjugates_refused():
    libs = []
    for L in (ember, torch):
        lib = L.library.Library("conj_bit_test", "DEF")
        lib.define("two_out(Tensor x, *, Tensor(a!) o1, Tensor(b!) o2) -> ()")

        def impl(x, o1, o2):
            o1.copy_(x)
            o2.copy_(x * 2)
        lib.impl("two_out", impl, "CompositeExplicitAutograd")
        libs.append(lib)
        x, a, b = _base(L), L.zeros(2, 3, dtype=L.complex64), L.zeros(2, 3, dtype=L.complex64)
        got = _outcome(lambda: L.ops.conj_bit_test.two_out(x, o1=a.conj(), o2=b.conj()))
        assert got[1] == ("RuntimeError", "conjugate fallback does not support operators with "
                          "more than one mutable tensors with conjugatebit set to true.")
    # one conjugate out: written through its bit (PyTorch's fallback then fails to hand back
    # the op's empty result, "Expected Tensor but got None"; ember returns it)
    x = _base(ember)
    a, b = ember.zeros(2, 3, dtype=ember.complex64), ember.zeros(2, 3, dtype=ember.complex64)
    ember.ops.conj_bit_test.two_out(x, o1=a.conj(), o2=b)
    assert a.tolist() == x.conj_physical().tolist() and b.tolist() == (x * 2).tolist()


def test_private_conj_of_real_fails():
    for L in (ember, torch):
        with pytest.raises(RuntimeError, match="INTERNAL ASSERT FAILED"):
            L.tensor([1.0])._conj()


# ---------------------------------------------------------------------------------------------
# Autograd

def _grad_case(L, body):
    x = _base(L).requires_grad_()
    out = body(L, x)
    out.backward()
    return x.grad


GRADS = {
    "conj": lambda L, x: (x.conj() * (x + 1j)).abs().sum(),
    "imag": lambda L, x: (x.conj().imag ** 2).sum(),
    "real": lambda L, x: (x.conj().real * x.conj().abs()).sum(),
    "mH": lambda L, x: (x.mH @ x).abs().sum(),
    "dot": lambda L, x: L.dot(x[0].conj(), x[1].conj()).abs(),
    "vdot": lambda L, x: L.vdot(x[0], x[1].conj()).abs(),
    "neg_view": lambda L, x: (x._neg_view() * x).abs().sum(),
    "inplace_through_conj": lambda L, x: _write(x, lambda c: c.mul_(L.tensor(2 + 1j))),
    "inplace_slice_of_conj": lambda L, x: _write(x, lambda c: c[1:, :2].mul_(1j)),
    "inplace_imag_of_conj": lambda L, x: _write(x, lambda c: c.imag.mul_(3)),
    "inplace_imag": lambda L, x: _write(x, lambda c: c.conj().imag.add_(c.real.detach())),
}


def _write(x, fn):
    y = x.clone()
    c = y.conj()
    fn(c)
    return (y.abs() ** 2 + c.imag * 2).sum()


@pytest.mark.parametrize("name", GRADS)
def test_gradients(name):
    ge, gt = _grad_case(ember, GRADS[name]), _grad_case(torch, GRADS[name])
    _same(ge, gt)


def test_grad_fns_and_conj_gradients():
    got = []
    for L in (ember, torch):
        x = _base(L).requires_grad_()
        names = [type(x.conj().grad_fn).__name__, type(x.conj().imag.grad_fn).__name__,
                 type(x._neg_view().grad_fn).__name__]
        y = x.clone()
        c, s, im = y.conj(), y.conj()[1:], y.conj().imag
        y.mul_(2)  # the views' grad_fns are regenerated from the base's new history
        names += [type(c.grad_fn).__name__, type(s.grad_fn).__name__, type(im.grad_fn).__name__]
        g = L.autograd.grad(x.conj(), x, L.ones(2, 3) * (1 + 1j))[0]
        got.append((names, _flags(g), g.tolist()))
    assert got[0] == got[1]


def test_forward_ad_tangents():
    got = []
    for L in (ember, torch):
        fwAD = L.autograd.forward_ad
        with fwAD.dual_level():
            d = fwAD.make_dual(_base(L), _base(L) * 1j)
            t1 = fwAD.unpack_dual(d.conj()).tangent
            t2 = fwAD.unpack_dual(d.conj().imag).tangent
            got.append((_flags(t1), t1.tolist(), _flags(t2), t2.tolist()))
    assert got[0] == got[1]


# ---------------------------------------------------------------------------------------------
# Serialization and the inverse real FFTs

def _roundtrip(save, load, obj):
    buf = io.BytesIO()
    save(obj, buf)
    buf.seek(0)
    return load(buf)


def test_save_and_load_keep_the_bits():
    cases = (lambda L: [_base(L), _base(L).conj()], lambda L: _base(L).conj().imag,
             lambda L: _base(L)._neg_view().conj())
    for make in cases:
        for save_lib, load_lib in ((ember, ember), (ember, torch), (torch, ember)):
            loaded = _roundtrip(save_lib.save, load_lib.load, make(save_lib))
            want = make(torch)
            for got, ref in zip(*(x if isinstance(x, list) else [x] for x in (loaded, want))):
                assert _flags(got) == _flags(ref)
                np.testing.assert_array_equal(to_np(got), to_np(ref))
    x = _base(ember)
    pair = _roundtrip(ember.save, ember.load, [x, x.conj()])
    assert pair[1].is_conj() and pair[0].data_ptr() == pair[1].data_ptr()


def test_pickle_parameter_and_subclass_keep_the_bits():
    got = []
    for L in (ember, torch):
        c = _base(L).conj()

        class Sub(L.Tensor):
            pass
        made = (pickle.loads(pickle.dumps(c)), pickle.loads(pickle.dumps(c.imag)),
                L.nn.Parameter(c), c.as_subclass(Sub), c.data, L.tensor(c))
        got.append([(_flags(t), t.tolist()) for t in made])
    assert got[0] == got[1]


def test_deepcopy():
    for L in (ember, torch):
        for t in (_base(L).conj(), _base(L).conj().imag):
            d = copy.deepcopy(t)
            assert _flags(d) == (False, False) and d.tolist() == t.tolist()


FFTS = ["fft", "ifft", "rfft", "hfft", "ihfft", "fft2", "ifft2", "fftn", "ifftn", "ihfft2",
        "ihfftn", "rfftn"]


@pytest.mark.parametrize("name", FFTS)
def test_inverse_real_transforms_are_lazy_conjugates(name):
    x = np.arange(12.0).reshape(3, 4) ** 1.5
    e = getattr(ember.fft, name)(ember.from_numpy(x))
    t = getattr(torch.fft, name)(torch.from_numpy(x))
    assert _flags(e) == _flags(t)
    assert_same(e, t, rtol=1e-9, atol=1e-9)
    e1 = ember.fft.ihfftn(ember.from_numpy(x), dim=[1])
    assert e1.is_conj() == torch.fft.ihfftn(torch.from_numpy(x), dim=[1]).is_conj()


def test_inverse_transform_out_is_resolved():
    got = []
    for L in (ember, torch):
        o = L.empty(4, dtype=L.complex64)
        L.fft.ifft(L.arange(4.0), out=o)
        got.append((_flags(o), o.tolist()))
    assert got[0] == got[1]


# ---------------------------------------------------------------------------------------------
# Tracing, functionalization and compilation

def _traced(L, x):
    c = x.conj()
    return c * 2, c.imag + 1, L.view_as_real(c.resolve_conj())


def _written(L, x):
    # (one write: after it, PyTorch's functionalization holds the base as a conjugate view, on
    # which a real view, like imag, fails there as here)
    y = x.clone()
    y.conj()[1:].mul_(2j)
    return y, x.conj(), x._neg_view().real + 1


def test_make_fx_records_the_lazy_views():
    from ember.fx.experimental.proxy_tensor import make_fx as ember_make_fx
    from torch.fx.experimental.proxy_tensor import make_fx as torch_make_fx
    graphs = []
    for L, make_fx in ((ember, ember_make_fx), (torch, torch_make_fx)):
        x = _base(L)[0]
        for fn in (lambda t: _traced(L, t), L.func.functionalize(lambda t: _traced(L, t))):
            g = make_fx(fn)(x)
            graphs.append([str(n.target).replace("ember.", "").replace("torch.", "")
                           for n in g.graph.nodes if n.op == "call_function"])
    assert graphs[:2] == graphs[2:]


@pytest.mark.parametrize("mode", ["functionalize", "inductor"])
def test_functionalized_and_compiled_writes(mode):
    x = _base(ember)[0]
    if mode == "functionalize":
        run = ember.func.functionalize(lambda t: _written(ember, t))
    else:
        run = ember.compile(lambda t: _written(ember, t), backend="inductor")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = run(x) + run(x[:2])[:1]
    # (PyTorch's functionalization, and so its compiled graphs, return y as a conjugate view of
    # the conjugated values: the same values as eager; its Inductor loses the third output's
    # negation, which ember's keeps)
    functional = torch.func.functionalize(lambda t: _written(torch, t))
    want = functional(_base(torch)[0]) + functional(_base(torch)[0][:2])[:1]
    for e, t in zip(got, want):
        _same(e, t)
    assert got[1].data_ptr() == x.data_ptr()
    compiled = ember.compile(lambda t: _traced(ember, t), backend="inductor")(x)
    for e, t in zip(compiled, _traced(torch, _base(torch)[0])):
        _same(e, t)
