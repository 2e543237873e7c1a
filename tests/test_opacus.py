"""Opacus on ember through ``ember.as_torch``: DP-SGD (per-sample gradients from module hooks,
from torch.func and from ExpandedWeights — opacus's "ew" mode, ``torch.nn.utils._per_sample_grad``
—, per-sample clipping, seeded Gaussian noise, Poisson-sampled batches) and the RDP accountant's
epsilon, computing PyTorch's numbers. Each case of tests/_opacus_ops.py runs in PyTorch here and
in ember in one ``python -m ember.as_torch`` subprocess."""
import numpy as np
import pytest

from helpers import results_beside_pytorch

NAMES = ["hooks", "functorch", "ew"]


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    """Every case of tests/_opacus_ops.py: name -> (PyTorch's result, ember's)."""
    torch = pytest.importorskip("torch")
    pytest.importorskip("opacus")
    import _opacus_ops
    directory = tmp_path_factory.mktemp("opacus")
    theirs = {name: _opacus_ops.run(torch, name) for name in NAMES}
    return results_beside_pytorch("_opacus_ops.py", directory, theirs)


@pytest.mark.parametrize("name", NAMES)
def test_opacus_matches_pytorch(results, name):
    """Losses, the trained parameters and epsilon equal PyTorch's to float32 rounding."""
    theirs, mine = results[name]
    assert sorted(mine) == sorted(theirs)
    for key, ref in theirs.items():
        assert mine[key].shape == ref.shape, key
        np.testing.assert_allclose(mine[key], ref, rtol=1e-4, atol=1e-5, err_msg=key)
