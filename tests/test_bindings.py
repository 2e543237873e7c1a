"""Generated Python bindings: argument binding, varargs sizes, out= routing and PyTorch's resize
rules, argument errors quoting the schemas, and the untouched-on-failure guarantee."""
import re
import warnings

import numpy as np
import pytest

import ember
from ember._ops import bindings
from helpers import from_np, to_np


def test_function_and_method_forms():
    a = from_np(np.arange(3, dtype=np.float32))
    assert to_np(ember.add(a, a)).tolist() == [0, 2, 4]
    assert to_np(ember.add(input=a, other=a, alpha=2)).tolist() == [0, 3, 6]
    assert to_np(a.add(a, alpha=3)).tolist() == [0, 4, 8]
    assert to_np(a.add(2)).tolist() == [2, 3, 4]  # a number in a Tensor position: wrapped number
    assert "def add(" in bindings.source("add") or "add = _b0" in bindings.source("add")


def test_varargs_and_sequence_sizes():
    for t in [ember.empty(2, 3), ember.empty((2, 3)), ember.empty([2, 3]), ember.empty(size=(2, 3)),
              ember.empty(ember.Size([2, 3]))]:
        assert t.shape == (2, 3)
    x = ember.empty(6)
    assert x.view(2, 3).shape == x.view((2, 3)).shape == x.view([2, 3]).shape == (2, 3)


def test_dtype_and_device_arguments():
    assert ember.empty(2, dtype=ember.float64).dtype is ember.float64
    assert ember.empty(2, dtype=float).dtype is ember.float64  # Python types, as PyTorch accepts
    assert ember.empty(2, device="meta").device == ember.device("meta")
    assert ember.empty(2, device=ember.device("cpu")).device.type == "cpu"
    with pytest.raises(TypeError, match="dtype"):
        ember.empty(2, dtype="float32")
    with pytest.raises(RuntimeError):
        ember.empty(2, device="nope")


def test_argument_type_errors_name_the_op(torch):
    a = from_np(np.zeros(2, np.float32))
    with pytest.raises(TypeError) as e:
        ember.add(a, "x")
    with pytest.raises(TypeError):
        torch.add(torch.zeros(2), "x")
    assert "add()" in str(e.value) and "'other'" in str(e.value)
    with pytest.raises(TypeError, match="add"):
        ember.add("x", a)
    with pytest.raises(TypeError):
        ember.add(a, a, bogus=1)


def test_out_writes_in_place_and_returns_out():
    a = from_np(np.arange(4, dtype=np.float32))
    out = ember.empty(4)
    r = ember.add(a, a, out=out)
    assert r is out and to_np(out).tolist() == [0, 2, 4, 6]
    assert out._version == 1


def test_out_resize_rules_match_pytorch(torch):
    a = from_np(np.arange(4, dtype=np.float32))
    empty_out = ember.empty(0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # resizing an empty out is silent
        ember.add(a, a, out=empty_out)
    assert empty_out.shape == (4,)
    wrong = ember.empty(2, 2)
    with pytest.warns(UserWarning, match="An output with one or more elements was resized"):
        ember.add(a, a, out=wrong)
    with pytest.warns(UserWarning, match="An output with one or more elements was resized"):
        torch.add(torch.ones(4), torch.ones(4), out=torch.empty(2, 2))
    assert wrong.shape == (4,) and to_np(wrong).tolist() == [0, 2, 4, 6]


def test_failed_out_leaves_out_untouched(torch):
    a = from_np(np.arange(4, dtype=np.float32))
    out = from_np(np.full(4, 7, dtype=np.int64))
    with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired output type Long"):
        ember.add(a, a, out=out)
    with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired output type Long"):
        torch.add(torch.ones(4), torch.ones(4), out=torch.zeros(4, dtype=torch.long))
    assert to_np(out).tolist() == [7, 7, 7, 7] and out._version == 0


def test_failed_inplace_leaves_self_untouched(torch):
    small = from_np(np.ones(3, np.float32))
    big = from_np(np.ones((2, 3), np.float32))
    with pytest.raises(RuntimeError, match=r"output with shape \[3\] doesn't match the broadcast shape \[2, 3\]"):
        small.add_(big)
    with pytest.raises(RuntimeError, match=r"output with shape \[3\] doesn't match the broadcast shape \[2, 3\]"):
        torch.ones(3).add_(torch.ones(2, 3))
    assert to_np(small).tolist() == [1, 1, 1] and small._version == 0
    ints = from_np(np.ones(3, np.int64))
    with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired output type Long"):
        ints.add_(small)
    assert to_np(ints).tolist() == [1, 1, 1]


def test_broadcast_error_is_pytorchs(torch):
    a, b = from_np(np.ones(3, np.float32)), from_np(np.ones(4, np.float32))
    with pytest.raises(RuntimeError) as e:
        a + b
    with pytest.raises(RuntimeError) as t:
        torch.ones(3) + torch.ones(4)
    assert str(e.value) == str(t.value)


def test_operator_with_unsupported_operand_returns_notimplemented():
    a = from_np(np.ones(2, np.float32))
    with pytest.raises(TypeError):
        a + "x"
    with pytest.raises(TypeError):
        a + [1, 2]


def _traced_ops(fn):
    import io
    buf = io.StringIO()
    ember._C._set_dispatch_trace(True, buf)
    try:
        fn()
    finally:
        ember._C._set_dispatch_trace(False)
    return [l.split("op=[")[1].split("]")[0] for l in buf.getvalue().splitlines()
            if l.startswith("[call]")]


def test_numbers_pick_scalar_overloads_as_pytorch_does(torch):
    x = from_np(np.arange(3, dtype=np.float32))
    assert _traced_ops(lambda: x.pow(2))[0] == "aten::pow.Tensor_Scalar"
    assert _traced_ops(lambda: x.eq(1))[0] == "aten::eq.Scalar"
    assert _traced_ops(lambda: x.pow(x))[0] == "aten::pow.Tensor_Tensor"
    # add/sub/mul/div hide their Scalar overloads: numbers become wrapped numbers
    assert _traced_ops(lambda: x.add(1))[0] == "aten::add.Tensor"
    assert _traced_ops(lambda: ember.mul(x, 2))[0] == "aten::mul.Tensor"
    # ops outside PyTorch's numbers-as-tensors list reject a number for a Tensor parameter
    with pytest.raises(TypeError):
        torch.maximum(torch.ones(2), 2)
    with pytest.raises(TypeError, match="maximum"):
        ember.maximum(x, 2)


def test_numpy_names_for_dim_and_keepdim_as_pytorch(torch):
    """PyTorch's argument parser takes NumPy's ``axis``/``keepdims`` for ``dim``/``keepdim``
    (HuggingFace's beam search calls ``torch.all(x, axis=1, keepdims=True)``)."""
    a = np.arange(12.0).reshape(3, 4) - 5
    calls = [
        lambda m, t: m.sum(t, axis=0),
        lambda m, t: t.sum(axis=1, keepdims=True),
        lambda m, t: m.max(t, axis=1).values,
        lambda m, t: m.all(t > 0, axis=1, keepdims=True),
        lambda m, t: t.mean(axis=0),
        lambda m, t: m.cat([t, t], axis=1),
        lambda m, t: m.select(t, axis=1, index=2),
        lambda m, t: m.argmax(t, axis=1),
        lambda m, t: m.cumsum(t, axis=1),
        lambda m, t: t.softmax(axis=1),
    ]
    for f in calls:
        np.testing.assert_allclose(to_np(f(ember, ember.tensor(a))),
                                   f(torch, torch.tensor(a)).numpy())
    for m in (ember, torch):  # the parameter is still required
        with pytest.raises(TypeError):
            m.cumsum(m.tensor(a))


def test_unexpected_keyword_names_the_function(torch):
    """PyTorch's parser names the function in front of Python's own message."""
    calls = [lambda lib: lib.zeros(2, foo=1), lambda lib: lib.ones(2, 3, bar=1),
             lambda lib: lib.empty((2,), foo=1), lambda lib: lib.ones(2).permute(0, foo=3),
             lambda lib: lib.ones(2).repeat(2, foo=1), lambda lib: lib.add(lib.ones(1), 1, foo=2)]
    for call in calls:
        with pytest.raises(TypeError) as expected:
            call(torch)
        with pytest.raises(TypeError, match=re.escape(str(expected.value))):
            call(ember)


_INT_LIST_CASES = [
    lambda m: m.zeros("a"), lambda m: m.zeros(2, "a"), lambda m: m.zeros((2, "a")),
    lambda m: m.zeros(2.0), lambda m: m.zeros([2.0]), lambda m: m.zeros(2.0, 3),
    lambda m: m.zeros(size=(2, "a")), lambda m: m.zeros(size="a"), lambda m: m.zeros(2, None),
    lambda m: m.zeros([2, m.tensor(1.5)]), lambda m: m.zeros([np.int64(2), np.float32(2)]),
    lambda m: m.ones(2, 2).permute(0, "a"), lambda m: m.ones(2, 2).permute("a"),
    lambda m: m.ones(2, 2).permute(0.0, 1), lambda m: m.ones(3).sum(dim=(0, "a")),
    lambda m: m.ones(3).sum(("a",)), lambda m: m.ones(3).amax(["a"]),
    lambda m: m.ones(3).roll((1, "a"), (0, 0)), lambda m: m.ones(3).roll(1.5),
    lambda m: m.ones(3).view(3, 1.0), lambda m: m.ones(3).unflatten(0, (3, 1.0)),
    lambda m: m.ones(3).unflatten(0, "a"), lambda m: m.ones(3).split_with_sizes("a"),
    lambda m: m.split_with_sizes(m.ones(3), 2.0), lambda m: m.ones(3).as_strided("a", (1,)),
    lambda m: m.ones(3).as_strided((3,), (1, "a")), lambda m: m.empty_strided("a", (1,)),
    lambda m: m.ones(3).new_empty_strided((3,), "a"), lambda m: m.ones(2, 2).mean(dim=(0, "a")),
    lambda m: m.randint(5, (2, "a")), lambda m: m.full((2, "a"), 1.0),
    lambda m: m.ones(2).max([1]), lambda m: m.ones(2).sum(foo=1),
    lambda m: m.randn(2, aa=1, cc=2, bb=3), lambda m: m.where(m.ones(2) > 0, [1], "a"),
]


@pytest.mark.parametrize("case", range(len(_INT_LIST_CASES)))
def test_int_list_argument_errors(torch, case):
    """int[] arguments as PyTorch's parser takes them: only the first element decides whether
    a signature matches; a later element that is no int fails to unpack; a keyword-free
    'got (...)' lists type names as CPython spells them."""
    def outcome(m):
        with pytest.raises(TypeError) as info:
            _INT_LIST_CASES[case](m)
        return str(info.value).split("\n")[0].replace(m.__name__, "torch")
    assert outcome(ember) == outcome(torch)
