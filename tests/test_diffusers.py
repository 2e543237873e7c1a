"""HuggingFace diffusers on ember through ``ember.as_torch``: UNets, a VAE, a DiT, noise
schedulers, a training step, a pipeline and save_pretrained/from_pretrained computing PyTorch's
numbers. Each case of tests/_diffusers_models.py runs in PyTorch here and in ember in one
``python -m ember.as_torch`` subprocess with PyTorch's weights."""
import numpy as np
import pytest

from helpers import results_beside_pytorch

# PyTorch's own Tensor.__array__ (the oracle's, in diffusers' schedulers) predates NumPy 2's copy=
pytestmark = pytest.mark.filterwarnings("ignore:__array__ implementation:DeprecationWarning")


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    """Every case of tests/_diffusers_models.py: name -> (PyTorch's result, ember's)."""
    torch = pytest.importorskip("torch")
    diffusers = pytest.importorskip("diffusers")
    import _diffusers_models
    directory = tmp_path_factory.mktemp("diffusers")
    names = list(_diffusers_models.MODELS)
    theirs = {}
    for name in names:
        state, theirs[name] = _diffusers_models.run(torch, diffusers, name,
                                                    directory=str(directory))
        np.savez(directory / f"{name}_weights.npz", **state)
    out = results_beside_pytorch("_diffusers_models.py", directory, theirs)
    # PyTorch reads the checkpoint ember's save_pretrained wrote, and the file holds the bytes
    # PyTorch's save_pretrained wrote for the same weights
    model = diffusers.UNet2DModel.from_pretrained(str(directory / "ember"))
    out["pretrained:read_by_pytorch"] = (
        {k: v for k, v in theirs["pretrained"].items() if k.startswith("state.")},
        {"state." + k: v.numpy() for k, v in model.state_dict().items()})
    checkpoint = "diffusion_pytorch_model.safetensors"
    out["pretrained:safetensors_bytes"] = (
        {"bytes": np.fromfile(directory / "torch" / checkpoint, np.uint8)},
        {"bytes": np.fromfile(directory / "ember" / checkpoint, np.uint8)})
    return out


def _atol(name, key, theirs):
    """The absolute floor under rtol for ``theirs[key]``: the rounding of the largest terms of
    what it is computed from. Gradients share one scale (a key projection's bias gets a gradient
    that is zero in exact arithmetic under softmax: rounding noise of the others' size). The
    first denoising step divides the predicted noise by sqrt(alpha_bar(999)) ~ 0.006, so
    sampling carries one UNet's rounding 150-fold. An AdamW step turns such noise into up to
    +-lr, so parameters after three steps (lr 1e-3) are compared to a tenth of a step."""
    if name == "ddpm_training" and key.startswith("param."):
        return 1e-4
    group = [v for k, v in theirs.items() if k.startswith("grad.")] \
        if key.startswith("grad.") else [theirs[key]]
    scale = max(float(np.abs(v).max(initial=0.0)) for v in group)
    return (1e-4 if name == "sampling" else 1e-5) * scale


@pytest.mark.parametrize("name", ["unet2d", "unet2d_condition", "autoencoder_kl", "dit",
                                  "ddpm_training", "sampling", "pipeline", "pretrained",
                                  "pretrained:read_by_pytorch",
                                  "pretrained:safetensors_bytes"])
def test_diffusers_matches_pytorch(results, name):
    """Outputs, losses and every parameter's gradient (or, for training, every parameter after
    three AdamW steps) equal PyTorch's in float32; checkpoints hold the same tensors."""
    theirs, mine = results[name]
    assert sorted(mine) == sorted(theirs)  # the same parameters got gradients
    for key, ref in theirs.items():
        if ref.dtype.kind in "iu":
            np.testing.assert_array_equal(mine[key], ref, err_msg=key)
        elif name == "ddpm_training" and key.startswith("param."):
            _assert_adamw_close(mine[key], ref, key)
        else:
            np.testing.assert_allclose(mine[key], ref, rtol=2e-4,
                                       atol=_atol(name, key, theirs), err_msg=key)


def _assert_adamw_close(got, want, key, lr=1e-3, steps=3):
    """Parameters after AdamW steps: within a tenth of a step (see :func:`_atol`), except where
    a gradient element is at the size of float32 rounding: AdamW divides it by its own running
    magnitude, so a rounding difference can change that element's step by up to lr. Such
    elements are rare (at most 1 in 10,000 of a parameter) and stay within the steps' total; an
    attention key's bias, whose gradient is zero in exact arithmetic (softmax does not see a
    shift of all its keys), is all such elements."""
    np.testing.assert_allclose(got, want, rtol=0, atol=steps * lr, err_msg=key)
    if not key.endswith("to_k.bias"):
        off = np.abs(got - want) > 1e-4 + 2e-4 * np.abs(want)
        assert np.count_nonzero(off) <= max(1, want.size // 10000), (key, np.argwhere(off)[:5])
