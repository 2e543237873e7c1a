"""histogram / histogramdd against PyTorch: binning, range, weights, density and errors."""
import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")

_X = np.random.default_rng(0).standard_normal((20, 2))


def _both(fn):
    """fn(module, x) for torch and ember; results (hist, edges) compared, or errors by type."""
    try:
        t = fn(torch, torch.tensor(_X))
    except Exception as e:  # noqa: BLE001
        with pytest.raises(type(e)):
            fn(ember, ember.tensor(_X))
        return
    e = fn(ember, ember.tensor(_X))
    np.testing.assert_allclose(e[0].numpy(), t[0].numpy(), rtol=1e-12)
    t_edges = t[1] if isinstance(t[1], (list, tuple)) else [t[1]]
    e_edges = e[1] if isinstance(e[1], (list, tuple)) else [e[1]]
    assert len(e_edges) == len(t_edges)
    for a, b in zip(e_edges, t_edges):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-12)


@pytest.mark.parametrize("case", [
    lambda m, x: m.histogram(x, 5),
    lambda m, x: m.histogram(x, 3, range=(-1.0, 1.0), weight=x, density=True),
    lambda m, x: m.histogram(x, m.tensor([-1.0, 0.0, 0.5, 2.0], dtype=x.dtype)),
    lambda m, x: m.histogram(x[:0], 3),
    lambda m, x: m.histogram(x * 0 + 1, 2),                      # empty range widened by 0.5
    lambda m, x: m.histogramdd(x, [3, 2]),
    lambda m, x: m.histogramdd(x, 2, weight=x[:, 0], density=True),
    lambda m, x: m.histogramdd(x, [m.tensor([-1.0, 0.0, 1.0], dtype=x.dtype)] * 2),
    lambda m, x: m.histogramdd(x, [3, 2, 1]),                    # wrong number of bin counts
    lambda m, x: m.histogramdd(x, 2, range=[1.0, 0.0, 0.0, 1.0]),  # min > max
    lambda m, x: m.histogramdd(x, 2, range=[0.0, 1.0]),          # range of the wrong length
    lambda m, x: m.histogram(x, 2, range=(0.0, float("inf"))),   # not finite
    lambda m, x: m.histogramdd(x[:, 0], 2),                      # 1-D input
    lambda m, x: m.histogram(x.long(), 2),                       # not floating point
])
def test_histogram_like_pytorch(case):
    _both(case)
