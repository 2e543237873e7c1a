"""fastai, open_clip, nflows and pytorch-tabnet on ember through ``ember.as_torch``: fastai's
tabular application and a Learner with MixUp fit through its own DataLoader and callbacks,
a tiny randomly initialised CLIP and SigLIP trained a step, autoregressive and spline flows
fit by maximum likelihood and sampled, TabNet's classifier and regressor fit with sparsemax and
entmax attention, each computing PyTorch's numbers. Each case of tests/_more_libs2_programs.py
runs in PyTorch and in ember, in two subprocesses side by side, from the same seeds. Also the
two ember gaps these libraries met, checked directly: TorchScript's type objects
(``torch.TensorType`` ...) and what AccumulateGrad stores as ``.grad``."""
import subprocess
import sys

import numpy as np
import pytest

from _more_libs2_programs import CASES
from helpers import (assert_saved_arrays_match, installed_cases_beside_ember,
                     libraries_installed)

# the libraries each case needs (import names)
LIBRARIES = {"nflows": ["nflows"], "tabnet": ["pytorch_tabnet", "scipy", "sklearn"],
             "open_clip": ["open_clip", "ftfy", "torchvision"],
             "fastai": ["fastai", "fastcore", "fastprogress", "pandas", "torchvision"]}
NAMES = list(CASES)
# TabNet's attention masks (and the explanations and importances made from them) come out of
# sparsemax/entmax over the priors of every earlier step, which magnify the trained weights'
# rounding-level differences: nudging PyTorch's own trained weights by 1e-5 (relative) moves
# its explanations by 3e-4 of their scale, as far as ember's are from them
LOOSE = ("clf.mask", "clf.explain", "clf.importances")


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    """Every case of tests/_more_libs2_programs.py whose libraries are installed:
    name -> (PyTorch's result, ember's)."""
    directory = tmp_path_factory.mktemp("more_libs2")
    return installed_cases_beside_ember("_more_libs2_programs.py", directory, LIBRARIES)


@pytest.mark.parametrize("name", NAMES)
def test_library_program_matches_pytorch(results, name):
    """Losses, metrics, predictions, samples, densities, gradients and the parameters after
    the optimizer steps equal PyTorch's."""
    if not libraries_installed(LIBRARIES[name]):  # (not imported here: fastai and open_clip import torchvision)
        pytest.skip(f"{', '.join(LIBRARIES[name])} not installed")
    theirs, mine = results[name]
    assert_saved_arrays_match(mine, theirs, rtol=1e-4,
                              atol=lambda key: 1e-3 if key.startswith(LOOSE) else 5e-5)


_TYPES_PROGRAM = """
import {lib} as torch
singletons = ["AnyType", "BoolType", "ComplexType", "DeviceObjType", "FloatType", "IntType",
              "NoneType", "NumberType", "PyObjectType", "StreamObjType", "StringType",
              "SymBoolType", "SymIntType", "TensorType"]
out = []
for name in singletons:
    cls = getattr(torch, name)
    t = cls.get()
    out.append((name, str(t), repr(t), t.kind(), t.annotation_str, t is cls.get(),
                cls.__module__, cls is getattr(torch._C, name)))
i, f, s, ten = (torch.IntType.get(), torch.FloatType.get(), torch.StringType.get(),
                torch.TensorType.get())
made = [torch.ListType(i), torch.OptionalType(ten), torch.TupleType([i, f]),
        torch.DictType(s, i), torch.UnionType([i, s]), torch.FutureType(i),
        torch.ListType.ofInts(), torch.ListType.ofTensors(), torch.TensorType.getInferred()]
out += [(str(t), t.kind(), t.annotation_str, [str(c) for c in t.containedTypes()]) for t in made]
out += [made[0].getElementType(), made[2].elements(), made[3].getKeyType(),
        made[3].getValueType(), made[0] == torch.ListType(i), made[0] == made[7],
        made[8] == ten, i != f]
out += [a.isSubtypeOf(b) for a, b in [(i, torch.NumberType.get()), (s, torch.NumberType.get()),
                                      (i, torch.AnyType.get()), (torch.NoneType.get(), made[1]),
                                      (ten, made[1]), (i, made[4]), (f, made[4]),
                                      (made[0], made[7])]]
O, U, T, L, N, n = (torch.OptionalType, torch.UnionType, torch.TupleType, torch.ListType,
                    torch.NoneType.get(), torch.NumberType.get())
out += [a.isSubtypeOf(b) for a, b in [
    (O(i), O(n)), (O(i), n), (U([i, f]), n), (U([i, s]), n), (T([i, f]), T([n, n])),
    (T([i]), T([n, n])), (L(i), L(n)), (torch.FutureType(i), torch.FutureType(n)),
    (O(i), U([i, N])), (U([i, N]), O(i)), (torch.SymIntType.get(), i),
    (ten, torch.AnyType.get()), (torch.AnyType.get(), ten), (torch.DictType(s, i),
                                                             torch.DictType(s, n)),
    (O(i), torch.AnyType.get()), (i, U([n, s]))]]
for bad in [lambda: torch.TensorType(), lambda: torch.ListType(3),
            lambda: torch.TupleType([3]), lambda: torch.DictType(1, 2),
            lambda: torch.UnionType([1]), lambda: i == 3, lambda: i.isSubtypeOf(3)]:
    try:
        bad()
    except TypeError as e:
        out.append(str(e))
for o in out:
    print(repr(o))
"""


def test_torchscript_type_objects():
    """What open_clip's ``from torch import TensorType`` needs, and the rest of the family:
    names, kinds, contained types, equality, subtyping and pybind11's constructor errors are
    PyTorch's."""
    pytest.importorskip("torch")
    outs = [subprocess.run([sys.executable, "-c", _TYPES_PROGRAM.format(lib=lib)],
                           capture_output=True, text=True, check=True).stdout
            for lib in ("torch", "ember")]
    assert outs[1] == outs[0]
    assert "List[int]" in outs[0]
    import ember
    for t in (ember.IntType.get(), ember.ListType.ofInts()):  # (pybind11 types define no hash)
        with pytest.raises(TypeError, match="unhashable type"):
            hash(t)


def test_stolen_gradient_is_not_a_view():
    """AccumulateGrad stores ``new_grad.detach()`` when it steals a gradient: a linear layer's
    weight gradient (a transposed product) is no view, so ``p.grad.detach_()`` (fastai's
    zero_grad) works; its values and strides are PyTorch's."""
    torch = pytest.importorskip("torch")
    import ember
    got = []
    for lib in (torch, ember):
        lib.manual_seed(0)
        model = lib.nn.Sequential(lib.nn.Linear(3, 4), lib.nn.Tanh(), lib.nn.Linear(4, 2))
        model(lib.arange(6.0).reshape(2, 3)).square().sum().backward()
        grads = [p.grad for p in model.parameters()]
        assert not any(g._is_view() for g in grads)
        got.append([(g.stride(), g.tolist()) for g in grads])
        for g in grads:
            g.detach_()
            g.zero_()
        assert all(p.grad.abs().sum().item() == 0 for p in model.parameters())
    assert [s for s, _ in got[1]] == [s for s, _ in got[0]]
    for (_, mine), (_, theirs) in zip(got[1], got[0]):
        np.testing.assert_allclose(mine, theirs, rtol=1e-6, atol=1e-6)
