"""segmentation_models_pytorch, pytorch-metric-learning, torchsde, torch-ema and normflows on
ember through ``ember.as_torch``: a few training steps of each library's own models and losses
computing PyTorch's numbers. Each case of tests/_vision_metric_sde_programs.py runs in PyTorch
here and in ember in one ``python -m ember.as_torch`` subprocess with PyTorch's weights."""
import importlib.util

import numpy as np
import pytest

from helpers import results_beside_pytorch

# the library each case needs (its import name)
LIBRARIES = {"smp_unet_resnet": "segmentation_models_pytorch",
             "smp_fpn_efficientnet": "segmentation_models_pytorch",
             "pml_triplet": "pytorch_metric_learning", "pml_arcface": "pytorch_metric_learning",
             "torchsde": "torchsde", "torch_ema": "torch_ema", "normflows": "normflows"}
NAMES = list(LIBRARIES)
# absolute tolerance, relative to an array's largest value (or 1): float32 rounding of the
# first step, carried through three training steps of the EfficientNet FPN (16 blocks whose
# batch norms see 32 values per channel in the last stage), moves its outputs and parameters
# by up to 5e-4: PyTorch's own move by 1e-4 when its weights are perturbed by 1e-7
ATOL = {"smp_fpn_efficientnet": 1e-3}


def _installed(name):
    return importlib.util.find_spec(LIBRARIES[name]) is not None


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    """Every case of tests/_vision_metric_sde_programs.py whose library is installed:
    name -> (PyTorch's result, ember's)."""
    torch = pytest.importorskip("torch")
    import _vision_metric_sde_programs as programs
    directory = tmp_path_factory.mktemp("vision_metric_sde")
    theirs = {}
    for name in filter(_installed, NAMES):
        state, theirs[name] = programs.run(torch, name)
        np.savez(directory / f"{name}_weights.npz", **state)
    if not theirs:
        pytest.skip("none of the libraries is installed")
    return results_beside_pytorch("_vision_metric_sde_programs.py", directory, theirs)


@pytest.mark.parametrize("name", NAMES)
def test_library_program_matches_pytorch(results, name):
    """Outputs, losses, mined index tuples, Brownian increments and samples, the gradients of
    every parameter (and input), and parameters and buffers after the optimizer steps equal
    PyTorch's."""
    pytest.importorskip(LIBRARIES[name])
    theirs, mine = results[name]
    assert sorted(mine) == sorted(theirs)
    for key, ref in theirs.items():
        assert mine[key].dtype == ref.dtype and mine[key].shape == ref.shape, key
        if ref.dtype.kind in "biu":
            np.testing.assert_array_equal(mine[key], ref, err_msg=key)
        else:
            scale = float(np.abs(ref).max(initial=0.0))
            np.testing.assert_allclose(mine[key], ref, rtol=2e-4,
                                       atol=ATOL.get(name, 1e-5) * max(scale, 1.0), err_msg=key)
