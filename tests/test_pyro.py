"""pyro-ppl on ember through ``ember.as_torch``: SVI with AutoNormal, AutoDiagonalNormal and
AutoMultivariateNormal guides under Trace_ELBO, TraceMeanField_ELBO's closed-form KL terms, a
Gaussian mixture with its assignments enumerated by TraceEnum_ELBO, NUTS, a PyroModule Bayesian
regression with Predictive, and PyTorch's private distribution helpers pyro imports, computing
PyTorch's numbers. Each case of tests/_pyro_programs.py runs in PyTorch and in ember, in two
subprocesses side by side, from the same seeds."""
import importlib.util

import numpy as np
import pytest

from _pyro_programs import CASES
from helpers import pytorch_beside_ember

NAMES = list(CASES)

# pyro's own deprecation notices and PyTorch's warnings about it, seen in the subprocesses only
pytestmark = [pytest.mark.filterwarnings("ignore::UserWarning")]


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    """Every case of tests/_pyro_programs.py: name -> (PyTorch's result, ember's)."""
    pytest.importorskip("torch")
    if importlib.util.find_spec("pyro") is None:  # (not imported here: pyro patches the
        pytest.skip("pyro is not installed")      # torch.distributions of this process)
    return pytorch_beside_ember("_pyro_programs.py", tmp_path_factory.mktemp("pyro"), NAMES)


@pytest.mark.parametrize("name", NAMES)
def test_pyro_matches_pytorch(results, name):
    """Every loss of the optimisation, the ELBO's gradients at the trained guide, medians,
    quantiles, parameters, Predictive's means and spreads, NUTS's samples, and the helpers'
    values equal PyTorch's; the transforms the constraint registry picks exactly."""
    theirs, mine = results[name]
    assert sorted(mine) == sorted(theirs)
    for key, ref in theirs.items():
        assert mine[key].dtype == ref.dtype and mine[key].shape == ref.shape, key
        if ref.dtype.kind in "biuUS":
            np.testing.assert_array_equal(mine[key], ref, err_msg=key)
        else:
            # float32 programs: the same draws and steps, rounding apart; float64 (the
            # helpers, NUTS): to double rounding
            rtol = 1e-4 if ref.dtype == np.float32 or key.endswith("losses") else 1e-9
            scale = float(np.abs(ref).max(initial=0.0))
            np.testing.assert_allclose(mine[key], ref, rtol=rtol, atol=rtol * max(scale, 1.0),
                                       err_msg=key)
