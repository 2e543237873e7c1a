"""MONAI and Captum on ember through ``ember.as_torch``: a UNet trained three steps with
DiceCELoss, DiceMetric, FocalLoss and BasicUNet; Captum's IntegratedGradients, Saliency, DeepLift,
LayerGradCam and NoiseTunnel attributions, all computing PyTorch's numbers. Each case of
tests/_monai_captum_ops.py runs in PyTorch here and in ember in one ``python -m ember.as_torch``
subprocess."""
import numpy as np
import pytest

from helpers import results_beside_pytorch

NAMES = ["monai", "captum"]


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    """Every case of tests/_monai_captum_ops.py: name -> (PyTorch's result, ember's)."""
    torch = pytest.importorskip("torch")
    pytest.importorskip("monai")
    pytest.importorskip("captum")
    import _monai_captum_ops
    directory = tmp_path_factory.mktemp("monai_captum")
    theirs = {name: _monai_captum_ops.run(torch, name) for name in NAMES}
    return results_beside_pytorch("_monai_captum_ops.py", directory, theirs)


@pytest.mark.parametrize("name", NAMES)
def test_matches_pytorch(results, name):
    """Losses, logits, metrics and attributions equal PyTorch's to float32 rounding."""
    theirs, mine = results[name]
    assert sorted(mine) == sorted(theirs)
    for key, ref in theirs.items():
        assert mine[key].shape == ref.shape, key
        scale = float(np.abs(ref).max(initial=0.0))
        np.testing.assert_allclose(mine[key], ref, rtol=1e-4, atol=1e-5 * max(scale, 1.0),
                                   err_msg=key)
