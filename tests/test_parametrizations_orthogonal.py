"""``ember.nn.utils.parametrizations.orthogonal`` against PyTorch: the weight is orthogonal
(unitary), equals PyTorch's for the same stored tensors, has the same state dict, gradients and
assignment (``right_inverse``) behaviour, for every map, with and without the trivialization,
for square, tall, wide, batched and complex matrices; and the argument errors."""
import numpy as np
import pytest

import ember
from ember.nn.utils import parametrizations as P
from helpers import assert_same, from_np, to_np

RNG = np.random.default_rng(0)
MAPS = ["matrix_exp", "cayley", "householder"]
SHAPES = [(4, 4), (5, 3), (3, 5), (2, 4, 3), (2, 3, 4)]


def _array(shape, dtype=np.float64):
    a = RNG.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        a = a + 1j * RNG.standard_normal(shape)
    return a.astype(dtype)


def _holders(torch, a):
    """An ember and a torch module holding the parameter ``weight`` with the values of ``a``."""
    e, t = ember.nn.Module(), torch.nn.Module()
    e.weight = ember.nn.Parameter(from_np(a))
    t.weight = torch.nn.Parameter(torch.from_numpy(a.copy()))
    return e, t


def _assert_orthogonal(Q):
    q = to_np(Q)
    n, k = q.shape[-2:]
    g = q.conj().swapaxes(-1, -2) @ q if n >= k else q @ q.conj().swapaxes(-1, -2)
    tol = 1e-5 if q.dtype in (np.float32, np.complex64) else 1e-10
    np.testing.assert_allclose(g, np.broadcast_to(np.eye(min(n, k)), g.shape), atol=tol)


def _sync(e, t):
    """Load torch's stored tensors (original, and base) into the ember module."""
    e.load_state_dict({k: from_np(v.detach().resolve_conj().numpy().copy())
                       for k, v in t.state_dict().items()})


@pytest.mark.parametrize("triv", [True, False], ids=["triv", "notriv"])
@pytest.mark.parametrize("orth_map", MAPS)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_orthogonal_matches_torch(torch, shape, orth_map, triv):
    e, t = _holders(torch, _array(shape))
    assert P.orthogonal(e, orthogonal_map=orth_map, use_trivialization=triv) is e
    torch.nn.utils.parametrizations.orthogonal(t, orthogonal_map=orth_map,
                                               use_trivialization=triv)
    assert type(e).__name__ == type(t).__name__ == "ParametrizedModule"
    assert list(e.state_dict()) == list(t.state_dict())
    _assert_orthogonal(e.weight)
    if shape[-2] == shape[-1] or not triv:
        # deterministic initial value: the original's own (orthogonalized) value
        assert_same(e.weight, t.weight, rtol=1e-9, atol=1e-10)
    _sync(e, t)
    assert_same(e.weight, t.weight, rtol=1e-9, atol=1e-10)
    # gradients reach the unconstrained original through the map (and base)
    C = _array(shape)
    le = (e.weight * from_np(C)).sum()
    lt = (t.weight * torch.from_numpy(C)).sum()
    le.backward()
    lt.backward()
    assert_same(e.parametrizations.weight.original.grad,
                t.parametrizations.weight.original.grad, rtol=1e-7, atol=1e-9)


@pytest.mark.parametrize("orth_map", MAPS)
def test_assignment_matches_torch(torch, orth_map):
    """``module.weight = X`` runs right_inverse: with the trivialization the base becomes X's
    orthogonalization and the original -Id; householder without it stores X's reflectors."""
    for shape, triv in [((4, 4), True), ((5, 3), True), ((5, 3), False), ((3, 5), False)]:
        if orth_map != "householder" and not triv:
            continue
        e, t = _holders(torch, _array(shape))
        P.orthogonal(e, orthogonal_map=orth_map, use_trivialization=triv)
        torch.nn.utils.parametrizations.orthogonal(t, orthogonal_map=orth_map,
                                                   use_trivialization=triv)
        _sync(e, t)
        X = _array(shape)
        with ember.no_grad(), torch.no_grad():
            e.weight = from_np(X)
            t.weight = torch.from_numpy(X.copy())
        for k, v in t.state_dict().items():
            if k.endswith("base") and shape[0] != shape[1]:
                continue  # completed with random columns: only its first ones are X's
            assert_same(e.state_dict()[k], v, rtol=1e-9, atol=1e-10)
        assert_same(e.weight, t.weight, rtol=1e-9, atol=1e-10)
        _assert_orthogonal(e.weight)
    # an orthogonal value assigned is kept as it is
    e, _ = _holders(torch, _array((4, 4)))
    P.orthogonal(e, orthogonal_map=orth_map)
    Q = ember.linalg.qr(from_np(_array((4, 4))))[0]
    with ember.no_grad():
        e.weight = Q
    assert_same(e.weight, Q, rtol=1e-9, atol=1e-10)


@pytest.mark.parametrize("orth_map", ["matrix_exp", "cayley"])
@pytest.mark.parametrize("shape", [(3, 3), (4, 2), (2, 2, 3)], ids=str)
def test_complex_unitary_matches_torch(torch, shape, orth_map):
    e, t = _holders(torch, _array(shape, np.complex128))
    P.orthogonal(e, orthogonal_map=orth_map)
    torch.nn.utils.parametrizations.orthogonal(t, orthogonal_map=orth_map)
    _assert_orthogonal(e.weight)
    _sync(e, t)
    assert_same(e.weight, t.weight, rtol=1e-9, atol=1e-10)
    C = _array(shape, np.complex128)
    (e.weight * from_np(C)).real.sum().backward()
    (t.weight * torch.from_numpy(C)).real.sum().backward()
    assert_same(e.parametrizations.weight.original.grad,
                t.parametrizations.weight.original.grad, rtol=1e-7, atol=1e-9)


def test_default_map_and_float32(torch):
    for shape, expected in [((3, 3), "matrix_exp"), ((4, 2), "householder")]:
        e, _ = _holders(torch, _array(shape, np.float32))
        P.orthogonal(e)
        assert e.parametrizations.weight[0].orthogonal_map.name == expected
        assert e.weight.dtype == ember.float32
        _assert_orthogonal(e.weight)
    e, _ = _holders(torch, _array((4, 2), np.complex64))
    P.orthogonal(e)
    assert e.parametrizations.weight[0].orthogonal_map.name == "matrix_exp"
    _assert_orthogonal(e.weight)


def test_linear_training_stays_orthogonal_and_matches_torch(torch):
    e, t = ember.nn.Linear(3, 5, dtype=ember.float64), torch.nn.Linear(3, 5, dtype=torch.float64)
    with ember.no_grad(), torch.no_grad():
        for pe, pt in zip(e.parameters(), t.parameters()):
            a = _array(tuple(pe.shape))
            pe.copy_(from_np(a))
            pt.copy_(torch.from_numpy(a))
    P.orthogonal(e)
    torch.nn.utils.parametrizations.orthogonal(t)
    assert type(e).__name__ == "ParametrizedLinear"
    _sync(e, t)
    oe = ember.optim.SGD(e.parameters(), lr=0.1)
    ot = torch.optim.SGD(t.parameters(), lr=0.1)
    x = _array((4, 3))
    for _ in range(3):
        oe.zero_grad(), ot.zero_grad()
        (e(from_np(x)) ** 2).sum().backward()
        (t(torch.from_numpy(x)) ** 2).sum().backward()
        oe.step(), ot.step()
    _assert_orthogonal(e.weight)
    assert_same(e.weight, t.weight, rtol=1e-8, atol=1e-10)


def test_errors_match_torch(torch):
    def both(exc, call):
        with pytest.raises(exc) as te:
            call(torch, torch.nn.utils.parametrizations)
        with pytest.raises(exc) as ee:
            call(ember, P)
        assert str(ee.value) == str(te.value).replace("torch", "ember")

    both(ValueError, lambda lib, M: M.orthogonal(lib.nn.Linear(2, 2), "nothing"))
    both(ValueError, lambda lib, M: M.orthogonal(lib.nn.Linear(2, 2), "bias"))
    both(ValueError, lambda lib, M: M.orthogonal(lib.nn.Linear(2, 2), orthogonal_map="qr"))

    def complex_householder(lib, M):
        m = lib.nn.Module()
        m.weight = lib.nn.Parameter(lib.ones(2, 2, dtype=lib.complex64))
        M.orthogonal(m, orthogonal_map="householder")
    both(ValueError, complex_householder)

    def assign(shape, **kw):
        def call(lib, M):
            m = M.orthogonal(lib.nn.Linear(3, 3), **kw)
            m.weight = lib.zeros(shape)
        return call
    both(ValueError, assign((2, 3)))
    both(NotImplementedError, assign((3, 3), orthogonal_map="cayley", use_trivialization=False))
    both(NotImplementedError, assign((3, 3), orthogonal_map="matrix_exp",
                                     use_trivialization=False))
