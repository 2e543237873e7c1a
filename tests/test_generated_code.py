"""Generated code reads like code: every generated function (bindings, operator methods,
normalizers, dispatcher call paths, autograd kernels and recorders, derivative formulas) has its source
registered, so tracebacks show a line for every frame and ``inspect.getsource`` works."""
import inspect
import traceback

import pytest

import ember
from ember._ops import bindings


def _frames(exc):
    return traceback.extract_tb(exc.__traceback__)


def _assert_every_frame_has_source(exc):
    frames = _frames(exc)
    missing = [f"{f.filename}:{f.lineno}" for f in frames if not f.line]
    assert not missing, f"frames without source: {missing}"
    return [f.filename for f in frames]


def test_error_in_a_binding_and_the_dispatch_path():
    with pytest.raises(RuntimeError) as info:
        ember.add(ember.ones(2), ember.ones(3))
    files = _assert_every_frame_has_source(info.value)
    assert "<ember binding ember.add>" in files
    assert any(f.startswith("<ember dispatch call factory") for f in files)
    assert "<ember autograd kernel aten::add.Tensor>" in files


def test_error_through_an_operator_method_and_autograd_kernel():
    x = ember.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError) as info:
        x * ember.ones(3)
    files = _assert_every_frame_has_source(info.value)
    assert "<ember operator Tensor.__mul__>" in files
    assert "<ember autograd kernel aten::mul.Tensor>" in files
    # x requires grad: it records, in C where ember/autograd/recorder.c is built (no frame)
    from ember.autograd import derivatives
    recorder_frame = "<ember autograd recorder aten::mul.Tensor>" in files
    assert recorder_frame == (derivatives._recorder_c is None)


def test_error_inside_a_derivative_formula_shows_the_formula():
    x = ember.ones(2, 2, requires_grad=True)
    y = x.mm(ember.ones(2, 2))
    with pytest.raises(RuntimeError) as info:  # an int64 gradient reaches mm's formula
        ember.autograd.grad(y, x, ember.ones(2, 2, dtype=ember.int64))
    _assert_every_frame_has_source(info.value)
    formula = [f for f in _frames(info.value) if f.filename.startswith("<ember derivative of")]
    assert formula and "mm_mat1_backward(grad, mat2" in formula[0].line


def test_getsource_of_generated_functions():
    src = inspect.getsource(ember.add)
    assert src.startswith("def ") and src in bindings.source("add")
    assert "def " in inspect.getsource(ember.Tensor.__mul__)
    assert inspect.getsource(ember.Tensor.view) in bindings.source("view", method=True)
