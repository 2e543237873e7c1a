"""sbi, performer-pytorch, linear-attention-transformer, rtdl_revisiting_models and torchmetrics'
less-used domains on ember through ``ember.as_torch``: neural posterior estimation (a
conditional MAF and a mixture density network) trained and sampled, Performer language models
with FAVOR+ and generalized attention trained and generating, linear-attention language models
(reversible, local heads, product-key memory, Linformer) trained, the FT-Transformer, ResNet and
MLP of tabular deep learning trained, and torchmetrics' retrieval, audio, pairwise and
rank-correlation metrics, each computing PyTorch's numbers. Each case of
tests/_more_libs3_programs.py runs in PyTorch and in ember, in two subprocesses side by side,
from the same seeds. Also the ember gap these libraries met, checked directly: a ``range`` as a
tensor index."""

import pytest

from _more_libs3_programs import CASES
from helpers import (assert_saved_arrays_match, installed_cases_beside_ember,
                     libraries_installed)

# the libraries each case needs (import names)
LIBRARIES = {"sbi": ["sbi", "nflows", "zuko"], "performer": ["performer_pytorch"],
             "rtdl": ["rtdl_revisiting_models"], "torchmetrics": ["torchmetrics", "torchvision"],
             "linear_attention": ["linear_attention_transformer"]}
NAMES = list(CASES)


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    """Every case of tests/_more_libs3_programs.py whose libraries are installed:
    name -> (PyTorch's result, ember's)."""
    directory = tmp_path_factory.mktemp("more_libs3")
    return installed_cases_beside_ember("_more_libs3_programs.py", directory, LIBRARIES)


@pytest.mark.parametrize("name", NAMES)
def test_library_program_matches_pytorch(results, name):
    """Losses, metrics, predictions, samples, log-probabilities, generated tokens, gradients and
    the parameters after the optimizer steps equal PyTorch's."""
    if not libraries_installed(LIBRARIES[name]):
        pytest.skip(f"{', '.join(LIBRARIES[name])} not installed")
    theirs, mine = results[name]
    assert_saved_arrays_match(mine, theirs, rtol=1e-4, atol=5e-5)


def test_range_index():
    """A ``range`` is an index sequence, as ``torch.tensor(range(...))`` (sbi's mixture density
    network writes a matrix diagonal with ``[..., range(d), range(d)] = ...``): reads, writes
    and gradients are PyTorch's."""
    torch = pytest.importorskip("torch")
    import ember
    got = []
    for lib in (torch, ember):
        t = lib.arange(24.0).reshape(2, 3, 4).requires_grad_()
        u = t * 1
        u[..., range(3), range(3)] = lib.tensor([-1.0, -2.0, -3.0])
        picked = [t[range(1)], t[:, range(0, 3, 2)], t[range(2), 1, range(1, 3)], u]
        sum(p.sum() * (i + 1) for i, p in enumerate(picked)).backward()
        got.append([(tuple(p.shape), p.tolist()) for p in picked] + [t.grad.tolist()])
    assert got[1] == got[0]
