"""torchdiffeq, torchopt, zuko and schedulefree on ember through ``ember.as_torch``: ODE solves
with every solver, the adjoint method and events, a neural ODE trained; torchopt's functional
and differentiable (meta-)optimizers, MAML and implicit differentiation; zuko's normalizing
flows (log_prob, rsample, training, a CNF); the schedule-free optimizers' train/eval modes —
computing PyTorch's numbers. Each library's cases of tests/_scientific_programs.py run in
PyTorch here and in ember in one ``python -m ember.as_torch`` subprocess, from the same seeds."""
import importlib.util

import numpy as np
import pytest

from _scientific_programs import CASES, LIBRARY
from helpers import results_beside_pytorch

NAMES = list(CASES)

# float64 programs agree to double rounding, except where the program itself computes in
# float32: torchopt's bias corrections ``1 - b ** count`` (an int64 count makes them float32)
RTOL64 = {"torchopt_functional": 1e-6}


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    """Case -> (PyTorch's result, ember's), each library's cases run on first use, ember's in
    one subprocess per library (a library that fails on ember fails its own cases only)."""
    torch = pytest.importorskip("torch")
    import _scientific_programs
    done = {}

    def get(name):
        lib = LIBRARY[name]
        if lib not in done:
            if importlib.util.find_spec(lib) is None:
                pytest.skip(f"{lib} is not installed")
            theirs = {n: _scientific_programs.run(torch, n) for n in CASES if LIBRARY[n] == lib}
            try:
                done[lib] = results_beside_pytorch("_scientific_programs.py",
                                                   tmp_path_factory.mktemp(lib), theirs)
            except AssertionError as e:
                done[lib] = e
        if isinstance(done[lib], AssertionError):
            raise done[lib]
        return done[lib][name]
    return get


@pytest.mark.parametrize("name", NAMES)
def test_scientific_library_matches_pytorch(results, name):
    """Every solution, gradient (backprop, adjoint, implicit), event time, optimizer state,
    loss, parameter, log-density and sample equals PyTorch's; names and flags exactly."""
    theirs, mine = results(name)
    assert sorted(mine) == sorted(theirs)
    for key, ref in theirs.items():
        assert mine[key].dtype == ref.dtype and mine[key].shape == ref.shape, key
        if ref.dtype.kind in "biuUS":
            np.testing.assert_array_equal(mine[key], ref, err_msg=key)
        else:
            rtol = 1e-4 if ref.dtype == np.float32 else RTOL64.get(name, 1e-9)
            scale = float(np.abs(ref).max(initial=0.0))
            np.testing.assert_allclose(mine[key], ref, rtol=rtol, atol=rtol * max(scale, 1.0),
                                       err_msg=key)
