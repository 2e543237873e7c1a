"""timm and torchvision on ember through ``ember.as_torch``: image classifiers of both libraries
(convolutions, batch norm, attention, squeeze-excitation, channel shuffle) computing PyTorch's
outputs and gradients, torchvision.transforms.v2 computing PyTorch's images, timm's
optimizers computing PyTorch's updates, and torchvision's fx feature extractor. Each case of
tests/_vision_models.py runs in PyTorch here and in ember in one ``python -m ember.as_torch``
subprocess with PyTorch's weights."""
import numpy as np
import pytest

from helpers import results_beside_pytorch


@pytest.fixture(scope="module")
def results(torch, tmp_path_factory):
    """Every case of tests/_vision_models.py: name -> (PyTorch's result, ember's)."""
    pytest.importorskip("timm")
    pytest.importorskip("torchvision")
    import _vision_models
    directory = tmp_path_factory.mktemp("vision")
    theirs = {}
    for name in list(_vision_models.MODELS) + list(_vision_models.OTHER):
        state, theirs[name] = _vision_models.run(torch, name)
        if state:
            np.savez(directory / f"{name}_weights.npz", **state)
    return results_beside_pytorch("_vision_models.py", directory, theirs)


@pytest.mark.parametrize("name", ["timm_resnet18", "timm_vit_tiny", "timm_convnext_atto",
                                  "timm_efficientnet_b0", "timm_mobilevit_xxs",
                                  "tv_mobilenet_v3_small", "tv_shufflenet_v2"])
def test_image_models_match_pytorch(results, name):
    """Eval outputs, training outputs, every parameter's gradient and the updated running
    statistics equal PyTorch's in float32. Gradients share one scale: a bias followed by batch
    norm gets a gradient that is zero in exact arithmetic (rounding noise of the others' size);
    a running mean of such a layer is likewise noise around zero. Batch statistics of batch 2
    over the last stages' 2x2 maps carry float32 rounding several-fold into the outputs, which
    are compared to 2e-5 of their own scale (PyTorch's oneDNN convolutions round differently by
    CPU model: shufflenet's training output was 1.1e-5 of its scale apart on an AMD EPYC), and
    the first layers' gradients, reached through a dozen such normalisations, to 3e-4 of the
    gradients' scale. (In float64 the two libraries agree to 1e-13 on all of these.)"""
    theirs, mine = results[name]
    assert sorted(mine) == sorted(theirs)
    grad_scale = max(float(np.abs(v).max()) for k, v in theirs.items() if k.startswith("grad."))
    for key, ref in theirs.items():
        if key.startswith("grad."):
            atol = 3e-4 * grad_scale
        else:
            atol = 1e-6 if key.startswith("buffer.") else 2e-5 * float(np.abs(ref).max())
        np.testing.assert_allclose(mine[key], ref, rtol=2e-4, atol=atol, err_msg=key)


def test_transforms_match_pytorch(results):
    theirs, mine = results["tv_transforms"]
    assert sorted(mine) == sorted(theirs)
    for key, ref in theirs.items():
        assert mine[key].dtype == ref.dtype, key
        if ref.dtype.kind in "iu":
            np.testing.assert_array_equal(mine[key], ref, err_msg=key)
        else:
            np.testing.assert_allclose(mine[key], ref, rtol=1e-5, atol=1e-5, err_msg=key)


def test_timm_optimizers_match_pytorch(results):
    """Seventeen of timm's optimizers: three steps each give PyTorch's parameters to float32
    rounding (1e-6 apart on parameters of order 1)."""
    theirs, mine = results["timm_optimizers"]
    assert sorted(mine) == sorted(theirs)
    for key, ref in theirs.items():
        np.testing.assert_allclose(mine[key], ref, rtol=1e-5, atol=2e-6, err_msg=key)


def test_feature_extractor_matches_pytorch(results):
    """The traced node names exactly; the features of a deep copy of the extractor to float32
    rounding."""
    theirs, mine = results["tv_features"]
    assert sorted(mine) == sorted(theirs)
    np.testing.assert_array_equal(mine["nodes"], theirs["nodes"])
    for key in ("l1", "l4", "pool"):
        np.testing.assert_allclose(mine[key], theirs[key], rtol=1e-4, atol=1e-4, err_msg=key)
