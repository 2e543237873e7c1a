"""tensordict on ember through ``ember.as_torch``: TensorDicts and their modules, a module's
parameters as a TensorDict vmapped over as an ensemble and differentiated with
``torch.func.grad``, tensorclasses, vmap over TensorDicts and DataLoader batches of them, all
computing PyTorch's numbers. The cases of tests/_tensordict_ops.py run in PyTorch and in ember
in two subprocesses side by side."""
import importlib.util

import numpy as np
import pytest

from helpers import pytorch_beside_ember

NAMES = ["basics", "ensemble", "tensorclass"]


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    """Every case of tests/_tensordict_ops.py: name -> (PyTorch's result, ember's)."""
    pytest.importorskip("torch")
    if importlib.util.find_spec("tensordict") is None:  # (not imported here: it patches
        pytest.skip("tensordict is not installed")       # torch._functorch.vmap)
    return pytorch_beside_ember("_tensordict_ops.py", tmp_path_factory.mktemp("tensordict"),
                                NAMES)


@pytest.mark.parametrize("name", NAMES)
def test_tensordict_matches_pytorch(results, name):
    """Every value equals PyTorch's (float32 to rounding), keys and batch sizes exactly."""
    theirs, mine = results[name]
    assert sorted(mine) == sorted(theirs)
    for key, ref in theirs.items():
        assert mine[key].dtype == ref.dtype and mine[key].shape == ref.shape, key
        if ref.dtype.kind in "biuUS":
            np.testing.assert_array_equal(mine[key], ref, err_msg=key)
        else:
            np.testing.assert_allclose(mine[key], ref, rtol=1e-5, atol=1e-6, err_msg=key)
