"""The generated bindings against PyTorch's argument parser: which calls take out= (a sweep over
every bound function), and the TypeErrors of arguments of the wrong type, given by position or
by keyword.

The out= sweep calls each bound overload of ember and of PyTorch with the same arguments (of the
overload's types, every optional one given), once without out= and once with it, inside a mode
that stops the call as soon as the parser has let it through: nothing is computed."""
import warnings

import numpy as np

import pytest

import ember
from ember._ops import bindings
from ember.utils._python_dispatch import TorchDispatchMode

torch = pytest.importorskip("torch")


class _Parsed(Exception):
    pass


class _StopTorch(torch.overrides.TorchFunctionMode):
    # PyTorch's parser hands the call to the mode only once the arguments fit a signature
    def __torch_function__(self, func, types, args=(), kwargs=None):
        raise _Parsed


class _StopEmber(TorchDispatchMode):
    # (ember's bindings call __torch_function__ before parsing: the dispatcher is the first
    # place a parsed call reaches)
    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        raise _Parsed


def _value(lib, a):
    """An argument of ``a``'s type (optional ones too, so that the call picks ``a``'s
    overload), or None for a type the sweep cannot make."""
    b = a.base
    if b == "Tensor":
        return [lib.ones(1)] if a.is_list else lib.ones(1)
    if a.is_list:
        return {"int": [0] * (a.list_size or 1), "SymInt": [0] * (a.list_size or 1),
                "float": [0.0], "Scalar": [0], "bool": [False] * (a.list_size or 1)}.get(b)
    return {"int": 0, "SymInt": 0, "float": 0.0, "Scalar": 0, "bool": False, "str": "mean",
            "ScalarType": lib.float32, "Layout": lib.strided, "Device": lib.device("cpu"),
            "MemoryFormat": lib.contiguous_format, "Generator": lib.Generator()}.get(b)


def _parses(lib, fn, args, kwargs):
    """True when ``fn`` takes the call, else the TypeError's message."""
    try:
        with (_StopTorch() if lib is torch else _StopEmber()):
            fn(*args, **kwargs)
    except _Parsed:
        return True
    except TypeError as e:
        return str(e)
    except Exception:  # noqa: BLE001 (a kernel refused the values: the parser took them)
        return True
    return True


def _call(lib, schema, n_out):
    args, kwargs = [], {}
    for a in schema.arguments:
        if a.is_write and a.kwarg_only:
            continue
        v = _value(lib, a)
        if v is None:
            return None
        (kwargs.__setitem__(a.name, v) if a.kwarg_only else args.append(v))
    out = lib.ones(1) if n_out == 1 else tuple(lib.ones(1) for _ in range(n_out))
    return args, kwargs, out


def _bound_functions():
    """(torch's namespace, name, ember's function) of every bound function."""
    fns = [(torch._C._VariableFunctions, n, f) for n, f in ember._variable_functions.items()]
    for module, names in bindings.python_modules.items():
        fns += [(getattr(torch._C, f"_{module}"), n, f) for n, f in names.items()]
    return fns


def _out_sweep():
    """{"name overload": (ember takes out=, PyTorch does)} where they differ, and the
    overloads the sweep could not compare (no PyTorch function, or arguments PyTorch's
    signature does not take), with why."""
    differ, uncompared = {}, {}
    for namespace, name, fn in _bound_functions():
        tfn = getattr(namespace, name, None)
        for ov, out_ov in bindings.bound_overloads(name):
            key = f"{name} {ov._schema.overload_name}"
            n_out = len(ov._schema.returns)
            e_call, t_call = _call(ember, ov._schema, n_out), _call(torch, ov._schema, n_out)
            if tfn is None or e_call is None:
                uncompared[key] = "no torch function" if tfn is None else "argument types"
                continue
            (e_args, e_kw, e_out), (t_args, t_kw, t_out) = e_call, t_call
            assert _parses(ember, fn, e_args, e_kw) is True, key  # (its own signature)
            if _parses(torch, tfn, t_args, t_kw) is not True:
                uncompared[key] = "PyTorch's signature differs"
                continue
            # (PyTorch names a single output's keyword after it: grad_input=)
            kw = bindings.out_name(out_ov._schema) if out_ov is not None else "out"
            ours = _parses(ember, fn, e_args, {**e_kw, kw: e_out}) is True
            theirs = _parses(torch, tfn, t_args, {**t_kw, kw: t_out}) is True
            if ours != theirs:
                differ[key] = (ours, theirs)
    return differ, uncompared


# ember's out= overloads missing from its op table (native_functions.yaml), which PyTorch's
# Python signatures pair with these: "name overload" of the functional one
_NO_OUT_OVERLOAD = {
    "__lshift__ Scalar", "__lshift__ Tensor", "__rshift__ Scalar", "__rshift__ Tensor",
    "_chunk_cat ", "adaptive_avg_pool2d ", "adaptive_avg_pool3d ", "adaptive_max_pool2d ",
    "adaptive_max_pool3d ", "batch_norm_elemt ", "ccol_indices_copy ", "col_indices_copy ",
    "crow_indices_copy ", "empty memory_format", "histogram bin_ct", "histogram bins_tensor",
    "hspmm ", "index_reduce ", "indices_copy ", "max_pool2d_with_indices ",
    "max_pool3d_with_indices ", "native_batch_norm ", "normal Tensor_Tensor",
    "normal Tensor_float", "normal float_Tensor", "normal float_float", "row_indices_copy ",
    "sspaddmm ", "values_copy "}


def test_out_is_taken_where_pytorch_takes_it():
    """Every bound overload PyTorch has: out= taken by both or by neither (autogen'd out=
    overloads have no Python binding, an out= overload serves only the overload whose
    signature it repeats, a single output's keyword is its name)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (the deprecated ops' warnings)
        differ, uncompared = _out_sweep()
    assert differ == {k: (False, True) for k in _NO_OUT_OVERLOAD}
    # (the others are functions PyTorch binds none of: its SKIP_PYTHON_BINDINGS, .*_backward)
    assert set(uncompared.values()) == {"no torch function"}, uncompared


def test_out_overloads_are_tagged_generated_as_in_pytorch():
    """The out= overloads PyTorch's codegen autogenerates (``generated:`` in the yaml) carry
    the tag, which is what keeps them off the Python bindings."""
    differ = []
    for name in dir(ember.ops.aten):
        packet, t_packet = getattr(ember.ops.aten, name), getattr(torch.ops.aten, name, None)
        if not hasattr(packet, "overloads") or t_packet is None:
            continue
        for ov in packet.overloads():
            op = getattr(packet, ov)
            if not bindings._is_out(op._schema) or not hasattr(t_packet, ov):
                continue
            if (ember.Tag.generated in op.tags) != \
                    (torch.Tag.generated in getattr(t_packet, ov).tags):
                differ.append(f"{name}.{ov}")
    assert differ == []


def _t(m):
    return m.ones(2, 3)


# Wrong or missing arguments of single-signature bindings: PythonArgParser's TypeError, which
# names an argument's position only when it came positionally, checks every type before the
# call, and words missing and extra arguments its own way.
CASES = {
    "tensor_pos": lambda m: m.mm(_t(m), "a"),
    "tensor_kw": lambda m: m.mm(_t(m), mat2="a"),
    "tensor_none": lambda m: m.mm(_t(m), None),
    "input_kw": lambda m: m.relu(input="a"),
    "method_tensor_kw": lambda m: _t(m).mm(mat2="a"),
    "int_pos_str": lambda m: m.cumsum(_t(m), "a"),
    "int_kw_str": lambda m: m.cumsum(_t(m), dim="a"),
    "int_float": lambda m: m.tril(_t(m), 1.5),
    "int_kw_float": lambda m: m.tril(_t(m), diagonal=1.5),
    "int_none": lambda m: m.cumsum(_t(m), None),
    "int_bool": lambda m: m.cumsum(_t(m), True),
    "int_bool_tensor": lambda m: m.cumsum(_t(m), m.tensor(True)),
    "int_one_element_tensor": lambda m: m.cumsum(_t(m), m.tensor([1])),
    "int_numpy_bool": lambda m: m.cumsum(_t(m), np.bool_(True)),
    "method_int_kw": lambda m: _t(m).transpose(0, dim1="a"),
    "method_int_pos": lambda m: _t(m).transpose("a", 1),
    "int_list_kw": lambda m: m.flip(_t(m), dims="a"),
    "int_list_kw_element": lambda m: m.flip(_t(m), dims=["a"]),
    "int_list_pos_element": lambda m: m.flip(_t(m), ["a"]),
    "int_list_kw_none": lambda m: m.flip(_t(m), dims=None),
    "float_complex": lambda m: m.dropout(_t(m), 1j, False),
    "float_grad_tensor": lambda m: m.dropout(_t(m), m.tensor(0.5, requires_grad=True), False),
    "float_kw_str": lambda m: m.isclose(_t(m), _t(m), rtol="a"),
    "bool_int": lambda m: m.dropout(_t(m), 0.5, 1),
    "bool_kw_str": lambda m: m.dropout(_t(m), 0.5, train="a"),
    "bool_none": lambda m: m.dropout(_t(m), 0.5, None),
    "bool_numpy": lambda m: m.dropout(_t(m), 0.5, np.bool_(True)),
    "method_bool_kw": lambda m: _t(m).topk(1, largest="a"),
    "scalar_none": lambda m: m.celu(_t(m), None),
    "scalar_kw_str": lambda m: m.celu(_t(m), alpha="a"),
    "scalar_vector_tensor": lambda m: m.celu(_t(m), m.tensor([1.0])),
    "str_none": lambda m: m._C._linalg.linalg_qr(_t(m), None),
    "dtype_str": lambda m: m.cumsum(_t(m), 0, dtype="a"),
    "dtype_numpy": lambda m: m.cumsum(_t(m), 0, dtype=np.int64(1)),
    "dtype_list": lambda m: m.cumsum(_t(m), 0, dtype=[1]),
    "device_list": lambda m: m.zeros(2, device=[1]),
    "out_str": lambda m: m.cumsum(_t(m), 0, out="a"),
    "out_tuple": lambda m: m.cumsum(_t(m), 0, out=(_t(m),)),
    "outs_tensor": lambda m: m.kthvalue(_t(m), 1, out=_t(m)),
    "outs_element": lambda m: m.kthvalue(_t(m), 1, out=(_t(m), "a")),
    "outs_length": lambda m: m.cummax(_t(m), 0, out=(_t(m),)),
    "missing_one": lambda m: m.flip(_t(m)),
    "missing_two": lambda m: m.flip(),
    "missing_given_by_keyword": lambda m: m.flip(dims=[0]),
    "missing_method": lambda m: _t(m).cumsum(),
    "too_many": lambda m: m.flip(_t(m), [0], 1),
    "too_many_with_defaults": lambda m: m.tril(_t(m), 0, 1),
    "too_many_method": lambda m: _t(m).transpose(0, 1, 2),
    "too_many_method_one": lambda m: _t(m).cumsum(0, 1),
    "multiple_values": lambda m: m.flip(_t(m), [0], dims=[1]),
    "unexpected_keyword": lambda m: m.flip(_t(m), [0], foo=1),
    "unexpected_before_missing": lambda m: m.dropout(_t(m), p=0.5, foo=1),
    "numpy_alias_kw": lambda m: m.cumsum(_t(m), axis="a"),
    # several signatures, the number of arguments fitting one: that one's message
    "plausible_one": lambda m: m.arange("a"),
    "plausible_one_int": lambda m: m.eye("a"),
    "sort_out_str": lambda m: m.sort(_t(m), out="a"),
    "sum_method_dtype_str": lambda m: _t(m).sum(dtype="a"),
}


def _message(m, call):
    try:
        call(m)
    except Exception as e:  # noqa: BLE001
        return type(e), str(e).split("\n")[0].replace("ember", "torch")
    return None


@pytest.mark.parametrize("name", CASES)
def test_type_error_matches_pytorch(name):
    expected = _message(torch, CASES[name])
    assert expected is not None and expected[0] is TypeError  # (the case's premise)
    assert _message(ember, CASES[name]) == expected


def test_keywords_reach_their_parameters():
    x = ember.arange(6.0).view(2, 3)
    tx = torch.arange(6.0).view(2, 3)
    for call in (lambda m, x: m.cumsum(x, dim=1), lambda m, x: m.cumsum(input=x, dim=0),
                 lambda m, x: m.cumsum(x, axis=1), lambda m, x: x.transpose(dim1=0, dim0=1),
                 lambda m, x: m.tril(x, diagonal=-1), lambda m, x: m.add(x, other=x, alpha=2),
                 lambda m, x: m.flip(dims=[0], input=x)):
        assert call(ember, x).tolist() == call(torch, tx).tolist()


def test_arguments_are_checked_before_anything_runs():
    """A wrong type is refused before the kernel: an out= tensor or a tensor updated in place
    stays as it was."""
    x, out = ember.ones(2, 3), ember.full((1,), 7.0)
    for call in (lambda: ember.tril(x, 1.5, out=out), lambda: ember.cumsum(x, 0, dtype="a", out=out),
                 lambda: ember.dropout(x, 0.5, "a")):
        with pytest.raises(TypeError):
            call()
        assert out.shape == (1,) and out.tolist() == [7.0]
    y = ember.ones(3)
    with pytest.raises(TypeError, match="argument 'alpha' must be Number, not str"):
        y.add_(ember.ones(3), alpha="a")
    assert y.tolist() == [1.0, 1.0, 1.0] and y._version == 0


def test_values_of_other_kinds_reach_the_kernel_converted():
    """What PyTorch's parser takes besides the usual class, as the kernel would get it."""
    x = ember.arange(6.0).view(2, 3)
    assert ember.cumsum(x, ember.tensor(1)).tolist() == ember.cumsum(x, 1).tolist()
    assert ember.cumsum(x, np.int64(1)).tolist() == ember.cumsum(x, 1).tolist()
    assert ember.celu(x, ember.tensor(2.0)).tolist() == ember.celu(x, 2.0).tolist()
    assert ember.isclose(x, x + 0.5, ember.tensor(0.5)).tolist() == \
        ember.isclose(x, x + 0.5, 0.5).tolist()
    assert ember.cumsum(x, 0, dtype=int).dtype is ember.int64


def test_grad_input_is_the_keyword_of_its_out():
    # (PythonOutArgument: a single output's keyword is its name)
    g, t_g = ember.ones(2, 3), torch.ones(2, 3)
    out, t_out = ember.empty(2, 3), torch.empty(2, 3)
    assert ember._softmax_backward_data(g, g, 1, ember.float32, grad_input=out) is out
    torch._softmax_backward_data(t_g, t_g, 1, torch.float32, grad_input=t_out)
    assert out.tolist() == t_out.tolist()


class _Odd:
    """A value of no type any parameter takes."""


# ops PyTorch has more overloads of (addmm.dtype, _fused_adam_.tensor_lr ...): a wrong type is
# its "invalid combination" message there
_MORE_TORCH_OVERLOADS = {"addmm", "baddbmm", "_fused_adam_", "_fused_adamw_",
                         "_scaled_dot_product_flash_attention"}


def test_every_single_signature_refuses_a_wrong_type_as_pytorch():
    """Each positional argument of each single-signature binding replaced by a value of no
    fitting type (and the last one given by keyword): PyTorch's message, checked before the
    call (the calls run under the stopping modes)."""
    differ, compared = set(), 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for namespace, name, fn in _bound_functions():
            tfn = getattr(namespace, name, None)
            overloads = bindings.bound_overloads(name)
            if tfn is None or len(overloads) != 1:
                continue
            schema = overloads[0][0]._schema
            e_call, t_call = _call(ember, schema, 1), _call(torch, schema, 1)
            if e_call is None or _parses(torch, tfn, *t_call[:2]) is not True:
                continue
            names = [bindings._py_arg_name(a) for a in schema.arguments if not a.kwarg_only]
            for i in range(len(e_call[0])):
                for by_keyword in (False, True)[:1 + (i == len(e_call[0]) - 1)]:
                    got = []
                    for lib, (args, kwargs, _) in ((ember, e_call), (torch, t_call)):
                        args, kwargs = list(args), dict(kwargs)
                        if by_keyword:
                            args, kwargs[names[i]] = args[:i], _Odd()
                        else:
                            args[i] = _Odd()
                        got.append(_parses(lib, fn if lib is ember else tfn, args, kwargs))
                    compared += 1
                    if got[0] != got[1]:
                        differ.add(name)
    assert compared > 2000
    assert differ == _MORE_TORCH_OVERLOADS
