"""gpytorch (and linear_operator) on ember through ``ember.as_torch``: exact GP regression
with Cholesky and, above ``max_cholesky_size``, with CG and Lanczos; a multitask GP; a batch of
GPs; a variational GP with ``VariationalStrategy``; BoTorch fitting a SingleTaskGP and
maximising an acquisition function, computing PyTorch's numbers. Each case of
tests/_gpytorch_programs.py runs in PyTorch and in ember, in two subprocesses side by side,
from the same seeds."""
import importlib.util

import numpy as np
import pytest

from _gpytorch_programs import CASES
from helpers import pytorch_beside_ember

NAMES = list(CASES)


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    """Every case of tests/_gpytorch_programs.py: name -> (PyTorch's result, ember's)."""
    pytest.importorskip("torch")
    if importlib.util.find_spec("gpytorch") is None:  # (not imported here: pyro patches the
        pytest.skip("gpytorch is not installed")      # torch.distributions of this process)
    return pytorch_beside_ember("_gpytorch_programs.py", tmp_path_factory.mktemp("gpytorch"),
                                NAMES)


@pytest.mark.parametrize("name", NAMES)
def test_gpytorch_matches_pytorch(results, name):
    """Every training loss (negative marginal log likelihood or ELBO), every parameter's
    gradient at the last step, the learned hyperparameters and inducing points, the
    predictive means, variances and confidence bounds, and BoTorch's fitted hyperparameters,
    candidate and acquisition values equal PyTorch's."""
    theirs, mine = results[name]
    assert sorted(mine) == sorted(theirs)
    for key, ref in theirs.items():
        assert mine[key].dtype == ref.dtype and mine[key].shape == ref.shape, key
        # float32 models: rounding apart (losses are float32 values read out as floats); the
        # float64 variational model: its nearly singular inducing-point kernel matrix turns
        # double rounding into about 1e-11
        rtol = 1e-4 if ref.dtype == np.float32 or key == "losses" and name != "variational" \
            else 1e-8
        scale = float(np.abs(ref).max(initial=0.0))
        np.testing.assert_allclose(mine[key], ref, rtol=rtol, atol=rtol * max(scale, 1.0),
                                   err_msg=key)
