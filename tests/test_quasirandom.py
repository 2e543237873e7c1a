"""ember.quasirandom.SobolEngine against PyTorch: unscrambled points bit for bit (draw,
fast_forward, draw_base2, dtypes, reset, the direction numbers of all 21201 dimensions), the
core functions on PyTorch's own scrambled states, the properties of ember's scrambled points
(its random stream differs from PyTorch's), and the errors."""
import numpy as np
import pytest

import ember
from ember import quasirandom as qr


def same(e, t):
    a, b = e.numpy(), t.numpy()
    assert a.dtype == b.dtype and a.shape == b.shape
    np.testing.assert_array_equal(a, b)


def test_module_after_import():
    assert ember.quasirandom.SobolEngine is qr.SobolEngine
    assert (qr.SobolEngine.MAXBIT, qr.SobolEngine.MAXDIM) == (30, 21201)


def test_direction_numbers_all_dimensions(torch):
    e = qr.SobolEngine(21201)
    t = torch.quasirandom.SobolEngine(21201)
    same(e.sobolstate, t.sobolstate)
    same(e.draw(4), t.draw(4))
    e.fast_forward(1000)
    t.fast_forward(1000)
    same(e.draw(3, dtype=ember.float64), t.draw(3, dtype=torch.float64))


@pytest.mark.parametrize("d", [1, 2, 5, 40])
def test_unscrambled_sequence(torch, d):
    e, t = qr.SobolEngine(d), torch.quasirandom.SobolEngine(d)
    assert (repr(e), e.dimension, e.scramble, e.seed) == (repr(t), t.dimension, t.scramble, t.seed)
    same(e.draw(), t.draw())
    same(e.draw(6), t.draw(6))
    for n in (0, 1, 9):
        same(e.draw(n, dtype=ember.float64), t.draw(n, dtype=torch.float64))
    e.fast_forward(77)
    t.fast_forward(77)
    same(e.draw(130), t.draw(130))
    same(e.quasi, t.quasi)
    assert e.num_generated == t.num_generated
    e.reset()
    t.reset()
    assert e.num_generated == 0
    same(e.draw_base2(8), t.draw_base2(8))
    same(e.draw_base2(8), t.draw_base2(8))


def test_fast_forward_first_and_far(torch):
    for n in (0, 1, 2, 1000, 54321):
        e, t = qr.SobolEngine(3), torch.quasirandom.SobolEngine(3)
        assert e.fast_forward(n) is e
        t.fast_forward(n)
        same(e.quasi, t.quasi)
        same(e.draw(5), t.draw(5))
    # the last points before the table runs out (PyTorch reads past it after 2**30)
    e, t = qr.SobolEngine(3).fast_forward(2**30 - 5), torch.quasirandom.SobolEngine(3)
    t.fast_forward(2**30 - 5)
    same(e.draw(5, dtype=ember.float64), t.draw(5, dtype=torch.float64))
    with pytest.raises(ValueError, match=r"at most 2\*\*30 points"):
        e.draw(1)
    with pytest.raises(ValueError, match=r"at most 2\*\*30 points"):
        qr.SobolEngine(2).fast_forward(2**30 + 1)


def test_draw_out_and_dtypes(torch):
    e, t = qr.SobolEngine(2), torch.quasirandom.SobolEngine(2)
    eo, to = ember.empty(0), torch.empty(0)
    assert e.draw(3, out=eo) is eo
    t.draw(3, out=to)
    same(eo, to)
    # the first point alone is a cast, any dtype; a draw computes in float or double only
    same(qr.SobolEngine(2).draw(1, dtype=ember.float16),
         torch.quasirandom.SobolEngine(2).draw(1, dtype=torch.float16))
    for ed, name in ((ember.int64, "Long"), (ember.float16, "Half")):
        with pytest.raises(NotImplementedError,
                           match=f"\"_sobol_engine_draw\" not implemented for '{name}'"):
            qr.SobolEngine(2).draw(3, dtype=ed)
    ember.set_default_dtype(ember.float64)
    try:
        assert qr.SobolEngine(2).draw(3).dtype == ember.float64
    finally:
        ember.set_default_dtype(ember.float32)


def test_core_functions_on_pytorch_scrambled_state(torch):
    """The scramble, draw and fast-forward functions give PyTorch's results for PyTorch's random
    matrices and shift."""
    d = 6
    g = torch.Generator().manual_seed(11)
    shift = torch.mv(torch.randint(2, (d, 30), generator=g), torch.pow(2, torch.arange(30)))
    ltm = torch.randint(2, (d, 30, 30), generator=g).tril()
    tstate = torch.zeros(d, 30, dtype=torch.long)
    torch._sobol_engine_initialize_state_(tstate, d)
    estate = qr._sobol_engine_initialize_state_(ember.zeros(d, 30, dtype=ember.long), d)
    same(estate, tstate)
    assert qr._sobol_engine_scramble_(estate, ember.tensor(ltm.numpy()), d) is estate
    torch._sobol_engine_scramble_(tstate, ltm, d)
    same(estate, tstate)

    equasi, tquasi = ember.tensor(shift.numpy()), shift.clone()
    assert qr._sobol_engine_ff_(equasi, 37, estate, d, 5) is equasi
    torch._sobol_engine_ff_(tquasi, 37, tstate, d, 5)
    same(equasi, tquasi)
    for dtype in ("float32", "float64"):
        er, eq = qr._sobol_engine_draw(equasi, 70, estate, d, 42, getattr(ember, dtype))
        tr, tq = torch._sobol_engine_draw(tquasi, 70, tstate, d, 42, getattr(torch, dtype))
        same(er, tr)
        same(eq, tq)


def test_scrambled_properties(torch):
    m, d = 7, 8
    e = qr.SobolEngine(d, scramble=True, seed=123)
    assert repr(e) == repr(torch.quasirandom.SobolEngine(d, scramble=True, seed=123))
    x = e.draw_base2(m, dtype=ember.float64)
    assert x.shape == (2**m, d) and x.dtype == ember.float64
    assert bool((x >= 0).all()) and bool((x < 1).all())
    # each of the 2**m equal intervals holds one point in every dimension
    cells = (x * 2**m).floor().long().sort(0).values
    same(cells, torch.arange(2**m).unsqueeze(1).expand(2**m, d).contiguous())
    # the same seed gives the same points, another seed or no scrambling others
    same(qr.SobolEngine(d, scramble=True, seed=123).draw_base2(m, dtype=ember.float64), x)
    assert not bool(qr.SobolEngine(d, scramble=True, seed=124).draw_base2(m).eq(
        x.float()).all())
    assert not bool(qr.SobolEngine(d).draw_base2(m, dtype=ember.float64).eq(x).all())
    # the structure of PyTorch's scramble: the starting state is the digital shift (the first
    # point), and the unit lower-triangular matrices keep each direction number's leading bit
    same(e.reset().quasi, e.shift)
    assert bool(e.shift.lt(2**30).all()) and bool(e.shift.ge(0).all())
    same(e.draw(1, dtype=ember.float64), (e.shift / 2**30).reshape(1, -1).to(ember.float64))
    plain = qr.SobolEngine(d).sobolstate
    assert not bool(e.sobolstate.eq(plain).all())
    lead = ember.tensor(1 << np.arange(30)).reshape(1, 1, 30)
    same((e.sobolstate.unsqueeze(-1) >= lead).sum(-1), (plain.unsqueeze(-1) >= lead).sum(-1))
    assert qr.SobolEngine(3, scramble=True).draw(4).shape == (4, 3)


def test_errors(torch):
    for d in (0, -1, 21202):
        with pytest.raises(ValueError, match=r"Supported range of dimensionality for "
                                             r"SobolEngine is \[1, 21201\]"):
            qr.SobolEngine(d)
    with pytest.raises(RuntimeError) as te:
        torch.quasirandom.SobolEngine(2).draw(0)
    with pytest.raises(RuntimeError) as ee:
        qr.SobolEngine(2).draw(0)
    assert str(ee.value) == str(te.value)
    msgs = []
    for eng in (qr.SobolEngine(2), torch.quasirandom.SobolEngine(2)):
        eng.draw(3)
        with pytest.raises(ValueError) as err:
            eng.draw_base2(1)
        msgs.append(str(err.value))
    assert msgs[0] == msgs[1] and "n=3+2**1=5" in msgs[0]
    e = qr.SobolEngine(2)
    e.draw(2)
    assert e.draw_base2(1).shape == (2, 2) and e.num_generated == 4
