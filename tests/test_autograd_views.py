"""Views + in-place under autograd, compared with PyTorch: CopySlices, regenerated grad_fn of
other views after an in-place write to their base, the errors for in-place writes to views made
in no_grad mode and to outputs of multi-output view ops, and as_strided backward with
overlapping geometries."""
import pytest

import ember


def _outcome(fn):
    """(result, None) or (None, (exception type name, message))."""
    try:
        return fn(), None
    except Exception as e:  # noqa: BLE001  (compared with PyTorch's)
        return None, (type(e).__name__, str(e))


def _same(torch, case):
    assert _outcome(lambda: case(ember)) == _outcome(lambda: case(torch))


def _w(lib):
    return lib.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)


def _replay_base_write(lib):
    w = _w(lib)
    x = w.clone()
    v = x[:2]
    x.mul_(2)
    name = type(v.grad_fn).__name__
    v.sum().backward()
    return name, w.grad.tolist()


def _replay_view_of_view(lib):
    w = _w(lib)
    x = w.clone()
    v = x[1:]
    vv = v[:2]
    x.add_(1)
    names = type(vv.grad_fn).__name__, type(v.grad_fn).__name__
    (vv * vv).sum().backward()
    return names, w.grad.tolist()


def _replay_sibling_view(lib):
    w = _w(lib)
    x = w.clone()
    v = x[:2]
    v2 = x[1:3]
    v.mul_(3)
    names = [type(t.grad_fn).__name__ for t in (v, v2, x)]
    (v2.sum() + x.sum()).backward()
    return names, w.grad.tolist()


def _replay_diagonal(lib):
    w = _w(lib)
    x = w.clone()
    d = x.view(2, 2).diagonal()
    x.mul_(3)
    (d * 2).sum().backward()
    return w.grad.tolist()


def _replay_transposed(lib):
    w = lib.arange(6.0).reshape(2, 3).requires_grad_()
    x = w.clone()
    t = x.t()
    x[0].mul_(2)  # CopySlices on x; t must read its slices out of the new history
    (t * lib.arange(6.0).reshape(3, 2)).sum().backward()
    return w.grad.tolist()


@pytest.mark.parametrize("case", [_replay_base_write, _replay_view_of_view, _replay_sibling_view,
                                  _replay_diagonal, _replay_transposed])
def test_view_replay(torch, case):
    _same(torch, case)


def _no_grad_view_state(lib):
    x = _w(lib).clone()
    with lib.no_grad():
        v = x[:2]
    return v.requires_grad, v.grad_fn is None, v.is_leaf


def _no_grad_view_inplace(lib):
    x = _w(lib).clone()
    with lib.no_grad():
        v = x[:2]
    v.mul_(2)


def _no_grad_view_of_leaf_inplace(lib):
    w = _w(lib)
    with lib.no_grad():
        v = w[:2]
    v.mul_(2)


def _no_grad_view_without_grad_base(lib):
    y = lib.ones(4)
    with lib.no_grad():
        v = y[:2]
    v.mul_(2)
    return y.tolist()


def _no_grad_view_inplace_in_no_grad(lib):
    x = _w(lib).clone()
    with lib.no_grad():
        v = x[:2]
        v.mul_(2)
    return x.tolist()


@pytest.mark.parametrize("case", [_no_grad_view_state, _no_grad_view_inplace,
                                  _no_grad_view_of_leaf_inplace, _no_grad_view_without_grad_base,
                                  _no_grad_view_inplace_in_no_grad])
def test_no_grad_views(torch, case):
    _same(torch, case)


_MULTI = {
    "unbind": lambda x: x[:2].unbind()[0].mul_(2),
    "split": lambda x: x.split(2)[1].mul_(2),
    "chunk": lambda x: x.chunk(2)[1].mul_(2),
    "split_with_sizes": lambda x: x.split_with_sizes([1, 3])[1].mul_(2),
    "copy_": lambda x: x.split(2)[1].copy_(x.detach()[:2]),
}


@pytest.mark.parametrize("name", list(_MULTI))
def test_multi_output_view_inplace(torch, name):
    _same(torch, lambda lib: _MULTI[name](_w(lib).clone()))


def test_multi_output_views_allowed_cases(torch):
    def detached(lib):
        a, _ = _w(lib).detach().split(2)
        return a.mul_(2).tolist()

    def in_no_grad(lib):
        x = _w(lib).clone()
        with lib.no_grad():
            a, _ = x.split(2)
            a.mul_(2)
        return x.tolist()

    def out_of_place(lib):
        w = _w(lib)
        a, b = w.clone().split(2)
        (a * 2 + b).sum().backward()
        return w.grad.tolist()
    for case in (detached, in_no_grad, out_of_place):
        _same(torch, case)


@pytest.mark.parametrize("geometry", [
    ((2, 2), (1, 1), 0),  # overlapping output
    ((3, 2), (1, 0), 1),  # stride 0
    ((2,), (2,), 0),  # gaps
])
def test_as_strided_backward_overlap(torch, geometry):
    size, stride, off = geometry

    def case(lib):
        w = lib.tensor([1.0, 2.0, 3.0, 4.0], dtype=lib.float64, requires_grad=True)
        y = w.as_strided(size, stride, off)
        (y * lib.arange(1.0, 1.0 + y.numel(), dtype=lib.float64).reshape(size)).sum().backward()
        return w.grad.tolist()
    _same(torch, case)


def test_as_strided_of_expanded_input(torch):
    """Overlapping input geometry: each memory location's gradient is shared."""
    def case(lib):
        w = lib.tensor([1.0, 2.0, 3.0], dtype=lib.float64, requires_grad=True)
        y = w.expand(2, 3).as_strided((2, 2), (1, 1))
        (y * y).sum().backward()
        return w.grad.tolist()
    _same(torch, case)


def test_as_strided_gradcheck():
    x = ember.randn(6, dtype=ember.float64, requires_grad=True)
    assert ember.autograd.gradcheck(lambda t: t.as_strided((3, 3), (1, 1), 1) ** 2, (x,))
    assert ember.autograd.gradgradcheck(lambda t: t.as_strided((2, 2), (1, 1)) ** 2, (x,))


def _views_of_a_base_that_starts_requiring_grad(lib):
    """Views made while their base required no grad, then the base starts requiring it: by an
    in-place write through another view, through a view of a view, on the base itself, by
    ``requires_grad_()``. As PyTorch's (``DifferentiableViewMeta::requires_grad``), they then
    require grad, and their gradients reach the written values."""
    x = lib.tensor([1.0, 2.0], requires_grad=True)
    out = []
    base = lib.zeros(2, 4)
    a, b = base[:, :2], base[:, 1:]
    b[:, 0].add_(x * 3)  # writes base[:, 1], which a sees too
    out.append((a.requires_grad, type(a.grad_fn).__name__, b.requires_grad))
    (a.sum() * 2).backward()
    out.append(x.grad.tolist())
    base = lib.zeros(2, 4)
    nested = base[:, :3][:, 1:]
    base[:, 0].copy_(x)
    out.append((nested.requires_grad, type(nested.grad_fn).__name__))
    base = lib.zeros(3)
    v = base[:2]
    base.add_(lib.ones(3, requires_grad=True))
    out.append((v.requires_grad, type(v.grad_fn).__name__))
    base = lib.zeros(3)
    v = base[:2]
    base.requires_grad_()
    out.append((v.requires_grad, v.grad_fn is None, v.is_leaf))
    base = lib.zeros(3)
    v = base.detach()[:2]
    base[1:].add_(x)
    out.append(v.requires_grad)
    return out


def test_views_follow_a_base_that_starts_requiring_grad(torch):
    _same(torch, _views_of_a_base_that_starts_requiring_grad)
    assert _views_of_a_base_that_starts_requiring_grad(ember)[1] == [6.0, 6.0]
