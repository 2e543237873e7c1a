"""lucidrains' pure-PyTorch libraries on ember through ``ember.as_torch``: x-transformers
(decoders with rotary embeddings, ALiBi, relative position bias, SDPA, greedy and sampled
generation with a kv cache, encoder-decoder, continuous and ViT wrappers, a bfloat16 model),
vector-quantize-pytorch (VectorQuantize with EMA and learned codebooks, k-means initialisation,
ResidualVQ, FSQ, LFQ), rotary-embedding-torch and ema-pytorch (EMA, its foreach update,
PostHocEMA), each computing PyTorch's numbers. Each case of tests/_lucidrains_programs.py runs
in PyTorch here and in ember in one ``python -m ember.as_torch`` subprocess with PyTorch's
weights."""
import numpy as np
import pytest

from helpers import results_beside_pytorch

NAMES = ["xt_decoder", "xt_generate", "xt_encoder_decoder", "xt_continuous", "xt_bf16",
         "vq_ema", "vq_learned", "quantizers", "rotary", "ema"]
LIBRARIES = ["x_transformers", "vector_quantize_pytorch", "rotary_embedding_torch",
             "ema_pytorch"]


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    """Every case of tests/_lucidrains_programs.py: name -> (PyTorch's result, ember's)."""
    torch = pytest.importorskip("torch")
    for library in LIBRARIES:
        pytest.importorskip(library)
    import _lucidrains_programs
    directory = tmp_path_factory.mktemp("lucidrains")
    theirs = {}
    for name in NAMES:
        state, theirs[name] = _lucidrains_programs.run(torch, name)
        np.savez(directory / f"{name}_weights.npz", **state)
    return results_beside_pytorch("_lucidrains_programs.py", directory, theirs)


def _atol(name, key):
    """Absolute tolerance, relative to the largest value of ``key``. A gradient element within
    rounding of zero still moves its parameter by about Adam's learning rate (Adam divides by
    the gradient's size), so after Adam steps a parameter may differ by that element's rounding
    error scaled up (a few 1e-5 seen); bfloat16 results are held to one bfloat16 rounding step."""
    if name == "xt_bf16":
        return 2.0 ** -8
    if key.startswith("param.") or name == "ema":
        return 2e-4
    return 2e-5


@pytest.mark.parametrize("name", NAMES)
def test_lucidrains_matches_pytorch(results, name):
    """Outputs, indices, generated tokens, losses, every gradient and the parameters and
    buffers after the optimizer or EMA steps equal PyTorch's."""
    theirs, mine = results[name]
    assert sorted(mine) == sorted(theirs)
    for key, ref in theirs.items():
        assert mine[key].dtype == ref.dtype and mine[key].shape == ref.shape, key
        if ref.dtype.kind in "biuU":
            np.testing.assert_array_equal(mine[key], ref, err_msg=key)
            continue
        scale = max(float(np.abs(ref).max(initial=0.0)), 1.0)
        np.testing.assert_allclose(mine[key], ref, rtol=0 if name == "xt_bf16" else 2e-4,
                                   atol=_atol(name, key) * scale, err_msg=key)
