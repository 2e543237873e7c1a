"""Python operators on Tensor (ember/_tensor_ops.py) against PyTorch: values and dtypes of every
binary/reflected/in-place/unary operator, the aten ops each one runs, NotImplemented for foreign
operands, and identity hashing despite tensor-valued ``==``."""
import operator

import numpy as np
import pytest

import ember
from ember._dispatch import dispatcher as _d
from helpers import assert_same, from_np, to_np

BINARY = {"+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv,
          "//": operator.floordiv, "%": operator.mod, "**": operator.pow, "&": operator.and_,
          "|": operator.or_, "^": operator.xor, "==": operator.eq, "!=": operator.ne,
          "<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge}
INPLACE = {"+=": operator.iadd, "-=": operator.isub, "*=": operator.imul,
           "/=": operator.itruediv, "//=": operator.ifloordiv, "%=": operator.imod,
           "**=": operator.ipow, "&=": operator.iand, "|=": operator.ior, "^=": operator.ixor}
UNARY = {"-": operator.neg, "+": operator.pos, "abs": abs, "~": operator.invert}

_VALUES = {"float32": np.array([[1.5, -2.0, 3.25], [0.5, 4.0, -1.0]]),
           "int64": np.array([[1, -2, 3], [5, 4, -7]]),
           "bool": np.array([[True, False, True], [False, True, True]])}


def pair(torch, dtype):
    a = _VALUES[dtype]
    e = from_np(a.astype(getattr(ember, dtype)._np))
    return e, torch.tensor(a, dtype=getattr(torch, dtype))


def outcome(fn, *args):
    try:
        return fn(*args), None
    except Exception as e:  # noqa: BLE001  (compared with PyTorch's exception type)
        return None, e


def check_same(e, t, ee, te, what):
    if te is not None:
        assert ee is not None, f"{what}: PyTorch raised {te!r}, ember returned {e!r}"
        assert type(ee) is type(te), f"{what}: ember raised {ee!r}, PyTorch raised {te!r}"
        return
    assert ee is None, f"{what}: ember raised {ee!r}"
    assert_same(e, t, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("sym", BINARY)
@pytest.mark.parametrize("dtypes", [("float32", "float32"), ("int64", "int64"), ("bool", "bool"),
                                    ("int64", "float32"), ("bool", "int64")])
def test_binary_tensor_tensor(torch, sym, dtypes):
    fn = BINARY[sym]
    (ea, ta), (eb, tb) = pair(torch, dtypes[0]), pair(torch, dtypes[1])
    if sym in ("//", "%") and dtypes[1] == "int64":  # no integer division by zero
        eb, tb = from_np(np.abs(to_np(eb)) + 1), tb.abs() + 1
    e, ee = outcome(fn, ea, eb)
    t, te = outcome(fn, ta, tb)
    check_same(e, t, ee, te, f"{dtypes[0]} {sym} {dtypes[1]}")


@pytest.mark.parametrize("sym", BINARY)
@pytest.mark.parametrize("dtype", ["float32", "int64", "bool"])
@pytest.mark.parametrize("number", [2, 2.5, True])
def test_binary_with_number_both_sides(torch, sym, dtype, number):
    fn = BINARY[sym]
    ea, ta = pair(torch, dtype)
    for order in ("tensor op number", "number op tensor"):
        if order[0] == "t":
            args_e, args_t = (ea, number), (ta, number)
        else:
            args_e, args_t = (number, ea), (number, ta)
        if sym in ("//", "%", "/") and order[0] == "n" and dtype != "float32":
            continue  # the tensor holds zeros: integer division by zero is covered in test_ops
        e, ee = outcome(fn, *args_e)
        t, te = outcome(fn, *args_t)
        check_same(e, t, ee, te, f"{order}: {dtype} {sym} {number!r}")


@pytest.mark.parametrize("sym", INPLACE)
@pytest.mark.parametrize("dtypes", [("float32", "float32"), ("int64", "int64"),
                                    ("float32", "int64"), ("int64", "float32"), ("bool", "bool")])
def test_inplace_operators(torch, sym, dtypes):
    fn = INPLACE[sym]
    (ea, ta), (eb, tb) = pair(torch, dtypes[0]), pair(torch, dtypes[1])
    if sym in ("//=", "%=") and dtypes[1] == "int64":  # no integer division by zero
        eb, tb = from_np(np.abs(to_np(eb)) + 1), tb.abs() + 1
    before = to_np(ea).copy()
    e, ee = outcome(fn, ea, eb)
    t, te = outcome(fn, ta, tb)
    check_same(e, t, ee, te, f"{dtypes[0]} {sym} {dtypes[1]}")
    if ee is None:
        assert e is ea, "an in-place operator returns the same tensor"
    else:
        np.testing.assert_array_equal(to_np(ea), before, err_msg="a failed in-place op wrote")


def test_inplace_shape_error_leaves_self_untouched(torch):
    ea = from_np(np.zeros(3, np.float32))
    eb = from_np(np.ones((2, 3), np.float32))
    with pytest.raises(RuntimeError, match=r"output with shape \[3\] doesn't match the broadcast "
                                           r"shape \[2, 3\]"):
        ea += eb
    with pytest.raises(RuntimeError):
        torch.zeros(3).add_(torch.ones(2, 3))
    assert (to_np(ea) == 0).all()
    ei = from_np(np.zeros(3, np.int64))
    with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired "
                                           "output type Long"):
        ei += from_np(np.full(3, 0.5, np.float32))
    assert (to_np(ei) == 0).all()


@pytest.mark.parametrize("sym", UNARY)
@pytest.mark.parametrize("dtype", ["float32", "int64", "bool"])
def test_unary_operators(torch, sym, dtype):
    ea, ta = pair(torch, dtype)
    e, ee = outcome(UNARY[sym], ea)
    t, te = outcome(UNARY[sym], ta)
    check_same(e, t, ee, te, f"{sym}{dtype}")


def test_matmul_operator(torch):
    for sa, sb in [((3,), (3,)), ((2, 3), (3,)), ((3,), (3, 4)), ((2, 3), (3, 4)),
                   ((5, 2, 3), (3, 4)), ((2, 2, 3), (2, 3, 4)), ((1, 2, 3), (4, 3, 2))]:
        a = np.arange(np.prod(sa), dtype=np.float32).reshape(sa)
        b = np.arange(np.prod(sb), dtype=np.float32).reshape(sb) - 3
        assert_same(from_np(a) @ from_np(b), torch.from_numpy(a) @ torch.from_numpy(b))
    with pytest.raises(RuntimeError, match=r"mat1 and mat2 shapes cannot be multiplied "
                                           r"\(2x3 and 4x5\)"):
        from_np(np.ones((2, 3), np.float32)) @ from_np(np.ones((4, 5), np.float32))


class _Foreign:
    """An operand ember does not know: Python must get NotImplemented and try its methods."""

    def __radd__(self, other):
        return "radd"

    def __rmatmul__(self, other):
        return "rmatmul"

    def __eq__(self, other):
        return "eq"


def test_foreign_operands_get_notimplemented():
    t = from_np(np.ones(2, np.float32))
    assert t + _Foreign() == "radd"
    assert t @ _Foreign() == "rmatmul"
    assert (t == _Foreign()) == "eq"
    assert Tensor_add(t, "x") is NotImplemented
    with pytest.raises(TypeError):
        t + "x"
    with pytest.raises(TypeError):
        t * None
    assert (t == None) is False  # noqa: E711  (PyTorch returns False too)
    with pytest.raises(TypeError):  # matmul takes no numbers
        t @ 2


def Tensor_add(t, other):
    return type(t).__add__(t, other)


def test_comparison_returns_tensor_and_hash_stays_identity():
    a = from_np(np.array([1.0, 2.0], np.float32))
    b = from_np(np.array([1.0, 2.0], np.float32))
    r = a == b
    assert isinstance(r, ember.Tensor) and r.dtype is ember.bool
    assert hash(a) == id(a) and hash(a) != hash(b)
    d = {a: "a", b: "b"}
    assert d[a] == "a" and d[b] == "b" and len({a, b, a}) == 2


# -- which aten ops each operator runs (what a dispatch logger would show) ----------------------

class _BackendLog:
    """Dispatcher observer recording the ops whose CPU kernel ran."""

    def __init__(self):
        self.ops = []

    def enter(self, entry, key, label, args):
        if key.name == "CPU":
            self.ops.append(entry.qualname.split("::")[1])

    def exit(self, token):
        pass


def _torch_ops(torch, fn, *args):
    from torch.utils._python_dispatch import TorchDispatchMode

    class Log(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            seen.append(str(func).replace("aten.", "", 1).replace(".default", ""))
            return func(*args, **(kwargs or {}))
    seen = []
    with Log():
        fn(*args)
    return seen


_TRACED = [("a+b", lambda a, b: a + b), ("a+1", lambda a, b: a + 1), ("1-a", lambda a, b: 1 - a),
           ("a*2", lambda a, b: a * 2), ("a/b", lambda a, b: a / b), ("2/a", lambda a, b: 2 / a),
           ("a//b", lambda a, b: a // b), ("a%2", lambda a, b: a % 2), ("2%a", lambda a, b: 2 % a),
           ("a**2", lambda a, b: a ** 2), ("2**a", lambda a, b: 2 ** a),
           ("a**b", lambda a, b: a ** b), ("a==1", lambda a, b: a == 1),
           ("a<b", lambda a, b: a < b), ("1<a", lambda a, b: 1 < a), ("-a", lambda a, b: -a),
           ("abs", lambda a, b: abs(a)), ("a@b.mT", lambda a, b: a @ b.mT),
           ("a[0]@b[0]", lambda a, b: a[0] @ b[0])]


@pytest.mark.parametrize("name,fn", _TRACED, ids=[n for n, _ in _TRACED])
def test_operators_run_the_same_aten_ops(torch, name, fn):
    ea = from_np(np.array([[1.0, 2.0], [3.0, 4.0]], np.float32))
    eb = from_np(np.array([[0.5, 1.5], [2.5, 3.5]], np.float32))
    log = _BackendLog()
    _d.add_observer(log)
    try:
        fn(ea, eb)
    finally:
        _d.remove_observer(log)
    ta, tb = torch.tensor([[1.0, 2.0], [3.0, 4.0]]), torch.tensor([[0.5, 1.5], [2.5, 3.5]])
    views = ("select.int", "transpose.int")  # views are tested in test_views.py
    expected = [o for o in _torch_ops(torch, fn, ta, tb) if o not in views]
    assert [o.replace(".default", "") for o in log.ops if o not in views] == expected


def test_inplace_operators_run_inplace_ops(torch):
    ea = from_np(np.ones((2, 2), np.float32))
    log = _BackendLog()
    _d.add_observer(log)
    try:
        ea += ea
        ea -= 1
        ea *= 2
        ea /= 2
        ea **= 2
    finally:
        _d.remove_observer(log)
    assert log.ops == ["add_.Tensor", "sub_.Tensor", "mul_.Tensor", "div_.Tensor", "pow_.Scalar"]
