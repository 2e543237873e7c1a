"""PyTorch's module database (``torch.testing._internal.common_modules.module_db``) as ember's
test oracle (issue 18, item 1): each ModuleInfo's constructor inputs build the module in both
libraries, ember's takes PyTorch's state dict, and the forward results and the float64
gradients of inputs and parameters are compared, in training and evaluation mode. What still
fails is in ``op_db_expected.py`` (keys ``module:<name>:<forward|gradient>``), as strict xfails.
"""
import itertools

import numpy as np
import pytest

import ember
from helpers import report_line

torch = pytest.importorskip("torch")
cm = pytest.importorskip("torch.testing._internal.common_modules")

from op_db_expected import EXPECTED  # noqa: E402
from test_op_db import (Unresolved, _as_numpy, _compare, _differentiable, _to_ember,  # noqa: E402
                        xfail_params)

INPUTS = 2  # module inputs tried per mode
MODULES = [m for m in cm.module_db if torch.float64 in m.dtypes or torch.float32 in m.dtypes]
_STATS = {"resolved": set(), "forward": set(), "gradient": set()}


def _twin_class(cls):
    import importlib
    path = "ember" + cls.__module__[len("torch"):]
    try:
        return getattr(importlib.import_module(path), cls.__name__)
    except (ImportError, AttributeError):
        raise Unresolved(f"{path}.{cls.__name__} is missing") from None


@pytest.fixture(scope="module", autouse=True)
def summary(request):
    yield
    line = (f"module_db: {len(MODULES)} modules, {len(_STATS['resolved'])} resolved, "
            f"{len(_STATS['forward'])} forward-all-pass, {len(_STATS['gradient'])} "
            f"gradient-all-pass")
    report_line(request, line)


def _params(kind):
    return xfail_params(MODULES, lambda m: m.name, lambda m: f"module:{m.name}:{kind}")


def _pairs(info, dtype, requires_grad):
    """(torch module, ember module, module input) for the first inputs in both modes."""
    e_cls = _twin_class(info.module_cls)
    _STATS["resolved"].add(info.name)
    for training in (True, False):
        torch.manual_seed(0)
        inputs = info.module_inputs_func(info, device="cpu", dtype=dtype,
                                         requires_grad=requires_grad, training=training)
        for mi in itertools.islice((i for i in inputs if i.forward_input is not None), INPUTS):
            c = mi.constructor_input
            torch.manual_seed(0)
            t_mod = info.module_cls(*c.args, **c.kwargs).to(dtype)
            cache = {}
            e_mod = e_cls(*_to_ember(c.args, cache), **_to_ember(c.kwargs, cache)).to(
                getattr(ember, str(dtype).split(".")[1]))
            if any(isinstance(p, torch.nn.parameter.UninitializedParameter)
                   for p in t_mod.parameters()):  # a lazy module sizes itself on a first call
                f = mi.forward_input
                with torch.no_grad(), ember.no_grad():
                    t_mod(*f.args, **f.kwargs)
                    e_mod(*_to_ember(f.args, {}), **_to_ember(f.kwargs, {}))
            e_mod.load_state_dict(_to_ember(dict(t_mod.state_dict()), {}))
            t_mod.train(training)
            e_mod.train(training)
            yield t_mod, e_mod, mi


def _random(info):
    return any(s in info.name for s in ("Dropout", "RReLU", "FractionalMaxPool"))


@pytest.mark.parametrize("info", _params("forward"))
def test_module_forward(info):
    dtype = torch.float64 if torch.float64 in info.dtypes else torch.float32
    for t_mod, e_mod, mi in _pairs(info, dtype, False):
        f = mi.forward_input
        torch.manual_seed(0)
        expected = t_mod(*f.args, **f.kwargs)
        cache = {}
        got = e_mod(*_to_ember(f.args, cache), **_to_ember(f.kwargs, cache))
        _compare(got, expected, values=not _random(info))
    _STATS["forward"].add(info.name)


@pytest.mark.parametrize("info", _params("gradient"))
def test_module_gradient(info):
    if torch.float64 not in info.dtypes or _random(info):
        pytest.skip("no deterministic float64 forward to differentiate")
    rng = np.random.default_rng(0)
    for t_mod, e_mod, mi in _pairs(info, torch.float64, True):
        f = mi.forward_input
        t_in = _differentiable([list(f.args), list(f.kwargs.values())]) + list(t_mod.parameters())
        t_out = _differentiable(t_mod(*f.args, **f.kwargs))
        if not t_out:
            continue
        cache = {}
        e_args, e_kwargs = _to_ember(f.args, cache), _to_ember(f.kwargs, cache)
        e_in = _differentiable([list(e_args), list(e_kwargs.values())]) + list(e_mod.parameters())
        e_out = _differentiable(e_mod(*e_args, **e_kwargs))
        assert len(e_in) == len(t_in) and len(e_out) == len(t_out)
        cot = [rng.standard_normal(tuple(o.shape)) for o in t_out]
        t_g = torch.autograd.grad(t_out, t_in, [torch.tensor(c) for c in cot], allow_unused=True)
        e_g = ember.autograd.grad(e_out, e_in, [ember.tensor(c) for c in cot], allow_unused=True)
        for a, b in zip(e_g, t_g):
            if b is None:
                assert a is None or not _as_numpy(a).any()
                continue
            assert a is not None, "no gradient where PyTorch has one"
            np.testing.assert_allclose(_as_numpy(a), _as_numpy(b), rtol=1e-6, atol=1e-6)
    _STATS["gradient"].add(info.name)
