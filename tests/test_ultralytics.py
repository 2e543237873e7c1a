"""Ultralytics YOLOv8 on ember through ``ember.as_torch``: the eval forward and ultralytics' own
NMS (torch ops; its argsort of tied scores), and the detection training loss with its
gradients, computing PyTorch's numbers. The cases of tests/_ultralytics_ops.py run in PyTorch
and in ember in two subprocesses side by side."""
import importlib.util
import os

import numpy as np
import pytest

from helpers import pytorch_beside_ember

NAMES = ["predict", "loss"]


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    """Every case of tests/_ultralytics_ops.py: name -> (PyTorch's result, ember's)."""
    pytest.importorskip("torch")
    if importlib.util.find_spec("ultralytics") is None:  # (not imported here: it replaces
        pytest.skip("ultralytics is not installed")       # torch.save)
    # the subprocesses' ultralytics writes its settings file into YOLO_CONFIG_DIR on import
    os.environ.setdefault("YOLO_CONFIG_DIR", str(tmp_path_factory.mktemp("yolo_config")))
    os.environ.setdefault("YOLO_OFFLINE", "1")
    return pytorch_beside_ember("_ultralytics_ops.py", tmp_path_factory.mktemp("ultralytics"),
                                NAMES)


def test_predict_matches_pytorch(results):
    """The decoded predictions to float32 rounding; the boxes NMS keeps exactly."""
    theirs, mine = results["predict"]
    np.testing.assert_allclose(mine["predictions"], theirs["predictions"], rtol=1e-4,
                               atol=1e-4)
    for key in ("nms", "fast_nms"):
        np.testing.assert_array_equal(mine[key], theirs[key], err_msg=key)


def test_loss_matches_pytorch(results):
    """The three loss terms to float32 rounding; every gradient to 3e-4 of the gradients'
    scale: batch statistics of a batch of 2 over the last stages' 2x2 maps carry rounding
    several-fold back to the first convolution (as in tests/test_vision.py)."""
    theirs, mine = results["loss"]
    assert sorted(mine) == sorted(theirs)
    scale = max(float(np.abs(v).max()) for k, v in theirs.items() if k.startswith("grad."))
    for key, ref in theirs.items():
        atol = 3e-4 * scale if key.startswith("grad.") else 1e-6
        np.testing.assert_allclose(mine[key], ref, rtol=1e-4, atol=atol, err_msg=key)
