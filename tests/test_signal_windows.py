"""ember.signal.windows against torch.signal.windows: values and dtypes for every window at the
lengths that take special paths (0, 1, 2) and ordinary ones, symmetric and periodic, with each
window's parameters; PyTorch's argument errors (type and message); requires_grad."""
import numpy as np
import pytest

import ember
from helpers import to_np

torch = pytest.importorskip("torch")

_NAMES = ["bartlett", "blackman", "cosine", "exponential", "gaussian", "general_cosine",
          "general_hamming", "hamming", "hann", "kaiser", "nuttall"]
_PARAMS = {"exponential": [{"tau": 2.5}, {"tau": 0.5, "center": 1.0, "sym": False}],
           "gaussian": [{"std": 0.4}, {"std": 3.0}],
           "kaiser": [{"beta": 0.0}, {"beta": 5.5}],
           "general_cosine": [{"a": [0.46, 0.23, 0.31]}, {"a": (1.0,)}],
           "general_hamming": [{"alpha": 0.6}]}


def _call(mod, name, M, **kw):
    kw = {k: getattr(mod, v) if k == "dtype" else v for k, v in kw.items()}
    return getattr(mod.signal.windows, name)(M, **kw)


def test_public_names():
    assert sorted(ember.signal.windows.__all__) == sorted(torch.signal.windows.__all__)


@pytest.mark.parametrize("name", _NAMES)
def test_values(name):
    base = {"a": [0.5, 0.3, 0.2]} if name == "general_cosine" else {}
    for params in [base] + _PARAMS.get(name, []):
        for M in (0, 1, 2, 7, 10):
            for sym in (True, False):
                for dtype in (None, "float32", "float64"):
                    kw = {"sym": sym, **params}
                    if dtype:
                        kw["dtype"] = dtype
                    if kw.get("center") is not None:
                        kw["sym"] = False
                    t = _call(torch, name, M, **kw)
                    e = _call(ember, name, M, **kw)
                    assert str(e.dtype).split(".")[-1] == str(t.dtype).split(".")[-1]
                    assert tuple(e.shape) == tuple(t.shape)
                    np.testing.assert_allclose(to_np(e), t.numpy(), rtol=1e-6, atol=1e-7,
                                               err_msg=f"{name} M={M} {kw}")


_ERRORS = [("hann", -1, {}), ("bartlett", 3, {"dtype": "int64"}), ("kaiser", 3, {"dtype": "float16"}),
           ("exponential", 3, {"tau": 0.0}), ("exponential", 3, {"center": 1.0}),
           ("gaussian", 3, {"std": -1.0}), ("kaiser", 3, {"beta": -0.5}),
           ("general_cosine", 3, {"a": None}), ("general_cosine", 3, {"a": []}),
           ("general_cosine", 3, {"a": 0.5}), ("cosine", -2, {"dtype": "int32"}),
           ("nuttall", 4, {"layout": "sparse_coo"})]


@pytest.mark.parametrize("name,M,kw", _ERRORS)
def test_errors(name, M, kw):
    def call(mod):
        k = {key: getattr(mod, v) if key in ("dtype", "layout") else v for key, v in kw.items()}
        return getattr(mod.signal.windows, name)(M, **k)
    with pytest.raises(Exception) as te:
        call(torch)
    with pytest.raises(Exception) as ee:
        call(ember)
    assert type(ee.value) is type(te.value)
    assert str(ee.value) == str(te.value).replace("torch.", "ember.")


@pytest.mark.parametrize("name", ["hann", "kaiser", "gaussian", "bartlett"])
def test_requires_grad(name):
    for M in (0, 1, 5):
        t = getattr(torch.signal.windows, name)(M, requires_grad=True)
        e = getattr(ember.signal.windows, name)(M, requires_grad=True)
        assert e.requires_grad == t.requires_grad
        assert e.is_leaf == t.is_leaf
