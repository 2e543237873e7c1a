"""``ember._prims_common`` (and its wrappers) and ``ember.utils._foreach_utils`` against
PyTorch's modules: each function on a grid of dtypes, numbers, shapes, strides and dims, with
results normalized to plain values (dtypes and memory formats by name, Size as a tuple) and
errors compared by type and message."""
import itertools
import random
import warnings

import pytest
import torch
import torch._prims_common as tp
import torch._prims_common.wrappers as tw
import torch.utils._foreach_utils as tf

import ember
import ember._prims_common as ep
import ember._prims_common.wrappers as ew
import ember.utils._foreach_utils as ef

LIBS = ((ember, ep), (torch, tp))
DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64", "uint16", "uint32", "uint64",
          "float16", "bfloat16", "float32", "float64", "complex32", "complex64", "complex128",
          "float8_e4m3fn", "float8_e5m2"]
MAIN_DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16",
               "float32", "float64", "complex32", "complex64", "complex128"]


class T:
    """A tensor spec made in both libraries: shape, strides (None: contiguous), dtype,
    storage offset, device."""

    def __init__(self, shape, stride=None, dtype="float32", offset=0, device="cpu"):
        self.shape, self.stride, self.dtype = tuple(shape), stride, dtype
        self.offset, self.device = offset, device

    def make(self, lib):
        dt = getattr(lib, self.dtype)
        if self.stride is None:
            return lib.zeros(self.shape, dtype=dt, device=self.device)
        need = 1 + self.offset + sum((s - 1) * st for s, st in zip(self.shape, self.stride))
        base = lib.arange(max(need, 1) if 0 not in self.shape else self.offset + 1,
                          device=self.device).to(dt)
        return base.as_strided(self.shape, self.stride, self.offset)

    def __repr__(self):
        return f"T{self.shape}@{self.stride}:{self.dtype}"


class DT:
    def __init__(self, name):
        self.name = name

    def make(self, lib):
        return getattr(lib, self.name)

    def __repr__(self):
        return self.name


class MF:
    def __init__(self, name):
        self.name = name

    def make(self, lib):
        return getattr(lib, self.name)


def build(spec, lib):
    if isinstance(spec, (T, DT, MF)):
        return spec.make(lib)
    if isinstance(spec, list):
        return [build(s, lib) for s in spec]
    if isinstance(spec, tuple):
        return tuple(build(s, lib) for s in spec)
    return spec


def norm(x):
    """A value of either library as plain data."""
    if isinstance(x, (ember.dtype, torch.dtype)):
        return "dtype." + str(x).split(".")[-1]
    if isinstance(x, (ember.memory_format, torch.memory_format, ember.layout, torch.layout)):
        return "fmt." + str(x).split(".")[-1]
    if isinstance(x, (ember.device, torch.device)):
        return "device." + str(x)
    if isinstance(x, (ember.Tensor, torch.Tensor)):
        return ("tensor", tuple(x.shape), x.stride(), norm(x.dtype), x.tolist())
    if isinstance(x, tuple) and hasattr(x, "_fields"):
        return "namedtuple", x._fields, tuple(norm(v) for v in x)
    if isinstance(x, (list, tuple)):  # (Size as a tuple)
        return type(x).__name__ if type(x) is list else "tuple", tuple(norm(v) for v in x)
    if hasattr(x, "name") and type(x).__module__.endswith("_prims_common"):  # the enums
        return "enum." + x.name
    return x


def norm_error(e):
    msg = str(e).replace("ember.", "torch.").replace("<class 'torch._tensor.Tensor'>",
                                                      "<class 'torch.Tensor'>")
    return type(e).__name__, msg


def outcome(lib, mod, fn_name, args, kwargs):
    fn = getattr(mod, fn_name) if isinstance(fn_name, str) else fn_name(lib, mod)
    try:
        return "ok", norm(fn(*build(args, lib), **build(kwargs, lib)))
    except Exception as e:  # noqa: BLE001 - compared with PyTorch's
        return "error", norm_error(e)


def same(fn_name, *args, **kwargs):
    got = outcome(ember, ep, fn_name, args, kwargs)
    want = outcome(torch, tp, fn_name, args, kwargs)
    assert got == want, (fn_name, args, kwargs, got, want)
    return got


# ---------------------------------------------------------------------------------------------
# dtypes

@pytest.mark.parametrize("fn", ["is_boolean_dtype", "is_integer_dtype", "is_low_precision_dtype",
                                "is_float_dtype", "is_complex_dtype", "is_grad_dtype",
                                "corresponding_real_dtype", "corresponding_complex_dtype",
                                "dtype_to_type", "get_computation_dtype", "dtype_or_default",
                                "check_fp_or_complex"])
def test_dtype_predicates_and_maps(fn):
    extra = ("f",) if fn == "check_fp_or_complex" else ()
    for name in DTYPES:
        same(fn, DT(name), *extra)
    if fn.startswith("is_") and fn != "is_grad_dtype" or fn == "dtype_to_type":
        same(fn, 3)  # not a dtype: AssertionError
    if fn == "check_fp_or_complex":
        for name in ("float16", "bfloat16", "complex32", "float32"):
            same(fn, DT(name), "f", allow_low_precision_dtypes=False)


def test_dtype_ctors_acc_types_and_python_types():
    for name in MAIN_DTYPES:
        for v in (True, 3, 2.5):
            if "complex" not in name and isinstance(v, float) and name == "bool":
                continue
            same(lambda lib, mod: lambda d, v: mod.dtype_to_type_ctor(d)(v), DT(name), v)
        for dev in ("cpu", "cuda", "meta"):
            same(lambda lib, mod: lambda d, dev: mod.get_acc_type(d, lib.device(dev)), DT(name),
                 dev)
    for typ in (bool, int, float, complex, str):
        same("type_to_dtype", typ)
    same("type_to_dtype", 3)
    for v in (True, 1, 1.5, 2j):
        same("get_dtype", v)
    same("get_dtype", T((2,), dtype="int16"))
    for a, b in itertools.product((bool, int, float, complex, str), repeat=2):
        same("get_higher_type", a, b)
        same("is_weakly_lesser_type", a, b)
    for a, b in itertools.product(DTYPES[:16], repeat=2):
        same("get_higher_dtype", DT(a), DT(b))
        same(lambda lib, mod: lambda a, b: mod.can_safe_cast_to(cast_to=a, cast_from=b),
             DT(a), DT(b))
    for a, b in [(None, DT("int8")), (DT("int8"), None), (None, None), (1, 2.0), (True, 1j),
                 (T((2,), dtype="uint8"), 3), (2.5, T((), dtype="float16")), ("x", 1)]:
        same("get_higher_dtype", a, b)


def test_dtype_or_default_follows_the_default_dtype():
    try:
        for lib in (ember, torch):
            lib.set_default_dtype(lib.float64)
        same("dtype_or_default", None)
        same("type_to_dtype", float)
        same("type_to_dtype", complex)
    finally:
        for lib in (ember, torch):
            lib.set_default_dtype(lib.float32)
    same("dtype_or_default", None)
    same("device_or_default", None)
    same("device_or_default", "meta")
    same("layout_or_default", None)


# ---------------------------------------------------------------------------------------------
# type promotion

KINDS = ["DEFAULT", "NO_OPMATH", "INT_TO_FLOAT", "ALWAYS_BOOL", "COMPLEX_TO_FLOAT",
         "BOOL_TO_LONG"]


def _kind(name):
    return lambda lib, mod: lambda *a: mod.elementwise_dtypes(
        *a, type_promotion_kind=getattr(mod.ELEMENTWISE_TYPE_PROMOTION_KIND, name))


def test_enums_match():
    for enum in ("ELEMENTWISE_TYPE_PROMOTION_KIND", "REDUCTION_OUTPUT_TYPE_KIND", "RETURN_TYPE"):
        assert [(m.name, m.value) for m in getattr(ep, enum)] == \
            [(m.name, m.value) for m in getattr(tp, enum)]


def test_elementwise_dtypes_grid():
    rng = random.Random(0)
    pool = ([T((2,), dtype=d) for d in MAIN_DTYPES] + [T((), dtype=d) for d in MAIN_DTYPES]
            + [True, 3, 2.5, 1j, None])
    combos = [(x,) for x in pool] + [tuple(rng.sample(pool, k)) for k in (2, 2, 3) for _ in
                                     range(60)]
    for kind in KINDS:
        same(_kind(kind))
        for args in combos:
            same(_kind(kind), *args)
    same(_kind("DEFAULT"), T((2,)), "a string")  # ValueError
    try:
        for lib in (ember, torch):
            lib.set_default_dtype(lib.float64)
        for args in [(T((2,), dtype="int32"), 1.5), (T((2,), dtype="int8"), 1j), (True,)]:
            for kind in KINDS:
                same(_kind(kind), *args)
    finally:
        for lib in (ember, torch):
            lib.set_default_dtype(lib.float32)


def test_reduction_dtypes():
    for name, kind in itertools.product(MAIN_DTYPES, ["SAME", "COMPLEX_TO_FLOAT",
                                                      "KEEP_PROMOTED_TYPE", "ALWAYS_BOOL"]):
        for dtype in (None, DT("float64"), DT("complex64")):
            same(lambda lib, mod: lambda t, d: mod.reduction_dtypes(
                t, getattr(mod.REDUCTION_OUTPUT_TYPE_KIND, kind), d), T((2,), dtype=name), dtype)


# ---------------------------------------------------------------------------------------------
# strides, contiguity and memory formats

LAYOUTS = [
    T(()), T((5,)), T((5,), (2,)), T((2, 3)), T((2, 3), (1, 2)), T((2, 3), (0, 1)),
    T((3, 1), (1, 7)), T((0, 3)), T((2, 0, 4)), T((2, 3), (6, 2)), T((1, 1)), T((3, 4), (4, 1), offset=2),
    T((2, 3, 4, 5)), T((2, 3, 4, 5), (60, 1, 15, 3)), T((2, 3, 4, 5), (60, 1, 30, 3)),
    T((2, 1, 4, 5), (20, 1, 5, 1)), T((2, 1, 4, 5), (60, 1, 15, 3)), T((2, 3, 1, 1), (3, 1, 3, 3)),
    T((4, 1, 1, 1), (1, 1, 1, 1)), T((4, 1, 1, 1), (5, 5, 5, 5)), T((2, 0, 3, 3), (0, 1, 0, 0)),
    T((2, 0, 3, 3)), T((2, 3, 0, 3)), T((1, 3, 4, 4), (48, 1, 12, 3)),
    T((2, 3, 4, 5), (0, 1, 15, 3)), T((2, 3, 4, 5), (60, 0, 15, 3)),
    T((2, 3, 4, 5, 6)), T((2, 3, 4, 5, 6), (360, 1, 90, 18, 3)),
    T((2, 3, 4, 5, 6), (360, 1, 180, 36, 6)), T((1, 2, 1, 3), (6, 3, 6, 1)),
    T((3, 2, 4), (1, 12, 3)), T((2, 3, 4), (12, 1, 3)), T((2, 2, 2), (4, 1, 2)),
]

PER_TENSOR = ["is_contiguous", "is_contiguous_or_false", "is_channels_last_contiguous_2d",
              "is_channels_last_contiguous_3d", "is_channels_last_contiguous",
              "is_channels_last_contiguous_or_false", "is_channels_last_contiguous_or_false_2d",
              "is_channels_last_contiguous_or_false_3d", "is_non_overlapping_and_dense_or_false",
              "suggest_memory_format", "compute_elementwise_output_strides",
              "is_cpu_scalar_tensor"]


@pytest.mark.parametrize("fn", PER_TENSOR)
def test_layout_predicates(fn):
    for t in LAYOUTS:
        same(fn, t)


def test_memory_format_contiguity_and_tensor_methods():
    for t in LAYOUTS:
        for fmt in ("contiguous_format", "channels_last", "channels_last_3d", "preserve_format"):
            for fn in ("is_contiguous_for_memory_format",
                       "is_contiguous_for_memory_format_or_false"):
                same(lambda lib, mod: lambda x, m: getattr(mod, fn)(x, memory_format=m), t,
                     MF(fmt))
            if fmt != "preserve_format":  # the Tensor method uses the same rule
                same(lambda lib, mod: lambda x, m: x.is_contiguous(memory_format=m), t, MF(fmt))
        same(lambda lib, mod: lambda x: mod.are_strides_like_channels_last_or_false(
            x.shape, x.stride()), t)
        same(lambda lib, mod: lambda x: mod.compute_required_storage_length(
            x.shape, x.stride(), x.storage_offset()), t)
        same(lambda lib, mod: lambda x: lib.empty_like(x).stride(), t)  # preserve_format
        same(lambda lib, mod: lambda x: mod.compute_elementwise_output_logical_to_physical_perm(
            x, x.contiguous(), ambiguity_check=True), t)
    same("validate_memory_format", "channels_last")  # not a memory format


def test_elementwise_output_strides_of_several_operands():
    shapes = {}
    for t in LAYOUTS:
        shapes.setdefault(t.shape, []).append(t)
    for group in shapes.values():
        for a, b in itertools.product(group, repeat=2):
            same("compute_elementwise_output_strides", a, b)
            same("compute_elementwise_output_logical_to_physical_perm", a, b)
            same(lambda lib, mod: lambda x, y: mod.compute_elementwise_output_logical_to_physical_perm(
                x, y, ambiguity_check=True), a, b)
            same("compute_elementwise_output_strides", a, 2.5, T((), dtype="int64"), b)
    same("compute_elementwise_output_strides")  # ValueError
    same("compute_elementwise_output_strides", T((2, 3)), T((3, 2)))
    same("compute_elementwise_output_strides", T((2, 3)), "x")
    same("compute_elementwise_output_strides", 1.5)


def test_contiguous_and_channels_last_strides():
    for shape in [(), (3,), (2, 3), (2, 0, 3), (1, 4, 0), (2, 3, 4), (2, 3, 4, 5), (2, 1, 1, 3),
                  (2, 3, 4, 5, 6), (2, 3, 4, 5, 6, 7), (2, 0, 3, 3)]:
        for row_major in (True, False):
            same("make_contiguous_strides_for", shape, row_major)
        for fn in ("make_channels_last_strides_for", "make_channels_last_1d_strides_for",
                   "make_channels_last_2d_strides_for", "make_channels_last_3d_strides_for"):
            same(fn, shape)
    same("make_contiguous_strides_for", (2, -1))
    same("make_contiguous_strides_for", 3)


def test_clone_preserve_strides():
    for t in [T((3, 4), (4, 1), offset=2), T((2, 3), (1, 2)), T((2, 2), (0, 1)), T((0, 3)),
              T((2, 3, 4, 5), (60, 1, 15, 3), dtype="float64")]:
        got = outcome(ember, ep, "clone_preserve_strides", (t,), {})
        assert got == outcome(torch, tp, "clone_preserve_strides", (t,), {})
        x = t.make(ember)
        y = ep.clone_preserve_strides(x)
        assert y.storage_offset() == x.storage_offset()
        assert x.numel() == 0 or y.data_ptr() != x.data_ptr()


# ---------------------------------------------------------------------------------------------
# dims and shapes

def test_canonicalize_dims():
    for rank, idx, wrap in itertools.product((-1, 0, 1, 3), range(-5, 5), (True, False)):
        same("canonicalize_dim", rank, idx, wrap)
    for rank, dims in [(3, (0, -1)), (3, [-3, 2]), (2, (5,)), (0, (0, -1)), (0, ()), (2, -2)]:
        same("canonicalize_dims", rank, dims)
        same("canonicalize_dims", rank, dims, False)
        same("reduction_dims", (2, 3, 4)[:max(rank, 0)], dims if not isinstance(dims, int)
             else (dims,))
    same("reduction_dims", (2, 3), None)
    same("reduction_dims", (2, 3), (0, -2))  # duplicate
    for rank, idx in [(3, 0), (3, 2), (3, 3), (3, -1), (0, 0), (2, 1.0)]:
        same("validate_idx", rank, idx)
        same("validate_exclusive_idx", rank, idx)
        same("validate_dimension_indices", rank, [idx])
    for rank, perm in [(3, (2, 0, 1)), (3, (0, 0, 1)), (2, [1, 0]), (2, 5)]:
        same("is_valid_permutation", rank, perm)
    for shape, dims in [((2, 3, 4), (0, 2)), ((2, 3, 4), ()), ((2, 3), (2,)), ((2, 3), (-1,))]:
        same("compute_reduction_output_shape", shape, dims)


def test_infer_size_and_shape_helpers():
    for shape, numel in [((2, 3), 6), ((-1, 3), 6), ((-1,), 0), ((-1, 0), 0), ((-1, 0), 6),
                         ((-1, 4), 6), ((2, -2), 4), ((-1, -1), 4), ((2, 3), 5), ((0, -1), 0),
                         ((), 1), ((), 2), ((-1, 2, 0), 0)]:
        same("infer_size", shape, numel)
        # view uses the same rule with ATen's wording
        same(lambda lib, mod: lambda s, n: lib.empty(n).view(s).shape, shape, numel)
    for a, b in [((2, 3), (3,)), ((2, 1), (1, 4)), ((), (2,)), ((2, 3), (4, 3)),
                 ((5, 1, 3), (2, 1)), ((0,), (1,)), ((2, 3), (2, 3, 1))]:
        same("infer_size_shapes", a, b)
        same("is_expandable_to", a, b)
        same("is_same_shape", a, b)
        same("same_shape", a, b)
    for args in [((2, 3),), (2, 3), ([2, 3],), (), ((2, -1),), (2, -1)]:
        same("extract_shape_from_varargs", args)
        same("extract_dims_from_varargs", args)
    same("extract_shape_from_varargs", ((2, -1),), False)
    same("extract_dims_from_varargs", ((1,), (2,)))
    same("validate_shape", 3)
    same("validate_strides", (1, -1))
    same("validate_strides", (2, 1))
    same("validate_dim_length", -1)
    for xs in [(), (2, 3), (2.5, 2)]:
        same("prod", xs)


def test_argument_checks():
    a, s, b = T((2, 3)), T((), dtype="int64"), T((3, 2))
    m = T((2, 3), device="meta")
    for args in [(a, a), (a, s, 2.0), (a, b), (a, m), (s, m), ("x", a), (a,), (), (m, s, a)]:
        for allow in (True, False):
            same(lambda lib, mod: lambda *x: mod.check_same_device(
                *x, allow_cpu_scalar_tensors=allow), *args)
            same(lambda lib, mod: lambda *x: mod.check_same_shape(
                *x, allow_cpu_scalar_tensors=allow), *args)
            same(lambda lib, mod: lambda *x: mod.extract_shape(
                *x, allow_cpu_scalar_tensors=allow), *args)
        same("check_same_dtype", *args)
    same("check_same_dtype", a, T((2,), dtype="float64"))
    same("check_same_dtype", T((2,), dtype="int32"), 3.5, T((2,), dtype="int32"))
    same("check_is_matrix", T((3,)), "f")
    same("check_is_matrix", T((3, 2)), "f", "B")
    same("check_pin_memory", True)
    same("check_pin_memory", False)
    for layout in ("strided", "sparse_coo"):
        same(lambda lib, mod: lambda: mod.check_layout(getattr(lib, layout)))
    for unbiased, correction in itertools.product((None, True, False), (None, 0, 2.5, "x")):
        same("set_correction", unbiased, correction)
    same("canonicalize_device", "meta")
    same("canonicalize_device", 0)
    for other, kw in [(T((3, 2)), {}), (T((2, 3), dtype="float64"), {}),
                      (T((2, 3), device="meta"), {}), (T((2, 3), (1, 2)), {"check_strides": True}),
                      (T((2, 3), (3, 1), offset=1), {"check_strides": True}), (T((2, 3)), {})]:
        same("compare_tensor_meta", a, other, **kw)
    with pytest.warns(FutureWarning, match="deprecated"):
        same("check", True, lambda: "never")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        same("check", False, lambda: "a message")
        same("check", False, lambda: "an index", IndexError)


def test_mask_tensor_and_alert_not_deterministic():
    for dt in ("bool", "float32", "int64"):
        same(lambda lib, mod: lambda: mod.mask_tensor(
            lib.tensor([True, False, True]), lib.tensor([1, 0, 3]).to(getattr(lib, dt))))
    for mode in ((False, False), (True, True), (True, False)):
        try:
            for lib in (ember, torch):
                lib.use_deterministic_algorithms(mode[0], warn_only=mode[1])
            with warnings.catch_warnings(record=True) as w:
                warnings.simplefilter("always")
                same("alert_not_deterministic", "my_op")
            assert len(w) == (2 if mode == (True, True) else 0)
            assert len({str(x.message) for x in w}) <= 1
        finally:
            for lib in (ember, torch):
                lib.use_deterministic_algorithms(False)


def test_perm_helpers():
    for inp, perm in [((5, 6, 7), (2, 0, 1)), ([1, 2], [1, 0]), ((), ())]:
        same("apply_perm", inp, perm)
        same("invert_perm", perm)


def test_symbolic_sizes_decided_without_guards():
    from ember._dynamo.source import LocalSource
    from ember._subclasses.fake_tensor import FakeTensorMode
    from ember.fx.experimental.symbolic_shapes import ShapeEnv, SymInt
    env = ShapeEnv()
    mode = FakeTensorMode(shape_env=env)
    x = mode.from_tensor(ember.randn(4, 6), source=LocalSource("x"))
    assert isinstance(x.shape[0], SymInt)
    assert ep.is_contiguous_or_false(x) and not ep.is_channels_last_contiguous_or_false(x)
    assert ep.is_non_overlapping_and_dense_or_false(x)
    assert [str(s) for s in ep.make_contiguous_strides_for(x.shape)] == ["s1", "1"]
    assert ep.canonicalize_dim(x.ndim, -1) == 1
    assert ep.elementwise_dtypes(x, x.shape[0], type_promotion_kind=(
        ep.ELEMENTWISE_TYPE_PROMOTION_KIND.INT_TO_FLOAT)) == (ember.float32, ember.float32)
    assert ep.elementwise_dtypes(x.shape[0], type_promotion_kind=(
        ep.ELEMENTWISE_TYPE_PROMOTION_KIND.DEFAULT)) == (ember.int64, ember.int64)
    assert ep.is_same_shape(x.shape, x.shape)
    assert env.guards == []


def test_module_attribute_and_aliases():
    assert ember._prims_common is ep
    assert ep.TensorLikeType is ember.Tensor and ep.TensorLike is ember.Tensor
    assert ep.IntLike == (int, ember.SymInt) and ep.Dim is int
    assert ep.Number == (bool, int, float, complex, ember.SymInt, ember.SymFloat, ember.SymBool)
    assert ember.Tensor.is_contiguous in ep.torch_function_passthrough
    for name in dir(tp):
        if not name.startswith("__") and name not in {
                # typing and import names of PyTorch's module, and its CUDA RNG helper
                "Any", "Callable", "NamedTuple", "Optional", "Sequence", "TYPE_CHECKING",
                "TypeAlias", "TypeGuard", "TypeVar", "Union", "cast", "overload", "deprecated",
                "Enum", "operator", "reduce", "typing", "warnings", "nullcontext",
                "AbstractContextManager", "sym_float", "sym_int", "sym_max", "sym_min", "torch",
                "annotations", "CUDARngStateHelper", "K", "wrappers", "prims"}:
            assert hasattr(ep, name), name


# ---------------------------------------------------------------------------------------------
# wrappers

def _wrapped(lib, mod, **out_kw):
    w = ew if mod is ep else tw

    @w.out_wrapper(**out_kw)
    def double(a, b=1):
        return a * 2 + b

    return double


def _outcome_with_warnings(fn):
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        got = fn()
    return got, [str(x.message).replace("ember.", "torch.") for x in w]


@pytest.mark.parametrize("exact", [False, True])
def test_out_wrapper(exact):
    cases = [(T((2, 3)), T((2, 3))), (T((2, 3)), T((0,))), (T((2, 3)), T((4,))),
             (T((2, 3)), T((2, 3), dtype="float64")), (T((2, 3)), T((2, 3), dtype="int64")),
             (T((2, 3), dtype="int32"), T((2, 3), dtype="float32")),
             (T((2, 3)), T((2, 3), device="meta")), (T((2, 3)), None)]
    for a, out in cases:
        def run(lib, mod, a=a, out=out):
            fn = _wrapped(lib, mod, exact_dtype=exact)
            kw = {} if out is None else {"out": build(out, lib)}
            r = fn(build(a, lib), **kw)
            return (norm(r), r is kw.get("out", r))
        results = []
        for lib, mod in LIBS:
            results.append(_outcome_with_warnings(
                lambda: outcome(lib, mod, lambda *_: lambda: run(lib, mod), (), {})))
        assert results[0] == results[1], (a, out, results)
    for lib, mod in LIBS:
        fn = _wrapped(lib, mod)
        assert list(fn.__annotations__) == ["out", "return"]
        assert str(fn.__signature__).startswith("(a, b=1, *, out:")
        assert fn.__wrapped__.__name__ == "double"


def test_out_wrapper_several_outputs():
    def make(lib, mod):
        w = ew if mod is ep else tw

        @w.out_wrapper("values", "indices")
        def vi(a):
            return a + 1, (a * 3).to(lib.int64)

        return vi

    for out in [None, (T((2,)), T((2,), dtype="int64")), (T((0,)), T((5,), dtype="int64")),
                (T((2,)),), [T((2,)), T((2,), dtype="int64")],
                (T((2,)), T((2,), dtype="int32"))]:
        results = []
        for lib, mod in LIBS:
            def run(lib=lib, mod=mod):
                kw = {} if out is None else {"out": build(out, lib)}
                r = make(lib, mod)(lib.tensor([1.0, 2.0]), **kw)
                return type(r).__name__, r._fields, norm(tuple(r))
            results.append(_outcome_with_warnings(
                lambda: outcome(lib, mod, lambda *_: run, (), {})))
        assert results[0] == results[1], (out, results)


def test_elementwise_type_promotion_wrapper():
    def make(lib, mod, kind, names=("a", "b")):
        w = ew if mod is ep else tw

        @w.elementwise_type_promotion_wrapper(
            type_promoting_args=names,
            type_promotion_kind=getattr(mod.ELEMENTWISE_TYPE_PROMOTION_KIND, kind))
        def f(a, b, *, dtype=None):
            return (a, b, a * b if not isinstance(b, (list, tuple)) else a)

        return f

    for kind in KINDS:
        for a, b in [(T((2,), dtype="int32"), 2.5), (T((2,), dtype="float16"), T((), dtype="float64")),
                     (T((2,), dtype="bool"), True), (T((2,), dtype="int64"), 1j),
                     (T((2,), dtype="int8"), [T((2,), dtype="int16"), 2])]:
            same(lambda lib, mod, kind=kind: make(lib, mod, kind), a, b)
            same(lambda lib, mod, kind=kind: lambda x, y: make(lib, mod, kind)(
                x, y, dtype=lib.float64), a, b)
        same(lambda lib, mod, kind=kind: make(lib, mod, kind, ("a",)), T((2,), dtype="int8"), 3)
    for lib, mod in LIBS:
        f = make(lib, mod, "DEFAULT")
        assert str(f.__signature__) == "(a, b, *, dtype=None)" and f.__name__ == "f"


def test_unary_scalar_wrapper_and_backwards_not_supported():
    for v in (2, 2.5, True, T((2,))):
        same(lambda lib, mod: (ew if mod is ep else tw).elementwise_unary_scalar_wrapper(
            lambda x: x * 2), v)
    for lib, mod in LIBS:
        w = ew if mod is ep else tw
        prim = w.backwards_not_supported(lambda x, *, k: x * k)
        x = lib.ones(2, requires_grad=True)
        y = prim(x, k=3.0)
        assert y.tolist() == [3.0, 3.0] and y.requires_grad
        with pytest.raises(RuntimeError, match="backwards not supported on prim"):
            y.sum().backward()
        with lib.no_grad():
            assert not prim(x, k=2.0).requires_grad
        assert w._maybe_remove_out_wrapper(_wrapped(lib, mod)).__name__ == "double"
        assert w._maybe_convert_to_type(2, float) == 2.0
        with pytest.raises(ValueError, match="cannot be safely cast"):
            w._maybe_convert_to_type(2.5, int)


# ---------------------------------------------------------------------------------------------
# _foreach_utils

def _grouping(lib, mod, lists, with_indices):
    made = build(lists, lib)
    f = (ef if mod is ep else tf)._group_tensors_by_device_and_dtype
    out = f(made, with_indices)
    ids = {id(t): (i, j) for i, lst in enumerate(made) for j, t in enumerate(lst)
           if t is not None}
    # the groups as plain data; each entry named by its position in the input (identity)
    return sorted((norm(k[0]), norm(k[1]),
                   tuple(tuple(None if t is None else ids[id(t)] for t in lst) for lst in v[0]),
                   tuple(v[1])) for k, v in out.items())


def test_group_tensors_by_device_and_dtype():
    f32, f64, i64 = T((2,)), T((3,), dtype="float64"), T((), dtype="int64")
    meta = T((2,), device="meta")
    cases = [
        [[f32, f64, f32, i64, meta, f64]],
        [[f32, f64, f32], [f32, f64, f32], [None, f64, None]],
        [[f32, f64, meta], [], [f64, None, meta]],
        # beside the first list: float32/64 step counts (also on the CPU), bfloat16 states
        [[f32, T((2,), dtype="float16"), meta, i64],
         [f64, T((2,), dtype="bfloat16"), T((), dtype="float64"), T((), dtype="float32")]],
    ]
    for lists, with_indices in itertools.product(cases, (False, True)):
        got = _grouping(ember, ep, lists, with_indices)
        assert got == _grouping(torch, tp, lists, with_indices), lists
    for bad in ([], [[]], [[None]], [[f32, f64], [f32]], [[f32], [1]], [[f32], "ab"],
                [[f32], [i64]], [[meta], [T((2,), dtype="bfloat16")]], [[f32], [meta]],
                [[f32, None], [f32, f32]]):
        e = outcome(ember, ep, lambda lib, mod: lambda x: ef._group_tensors_by_device_and_dtype(
            x, False), (bad,), {})
        t = outcome(torch, tp, lambda lib, mod: lambda x: tf._group_tensors_by_device_and_dtype(
            x, False), (bad,), {})
        assert e[0] == t[0] == "error" and e[1][0] == t[1][0], (bad, e, t)
        if e[1][0] == "RuntimeError":
            assert e[1] == t[1]
        else:  # the binding's TypeError: its text up to the arguments' reprs
            assert e[1][1].split("Invoked with")[0] == t[1][1].split("Invoked with")[0]


def test_foreach_support_queries():
    assert ef._get_foreach_kernels_supported_devices() == tf._get_foreach_kernels_supported_devices()
    assert ef._get_fused_kernels_supported_devices() == tf._get_fused_kernels_supported_devices()
    for dev in ("cpu", "cuda", "meta", "mps"):
        assert ef._device_has_foreach_support(ember.device(dev)) == \
            tf._device_has_foreach_support(torch.device(dev))
        for lib, mod in LIBS:
            m = ef if mod is ep else tf
            ts = [lib.ones(2), None, lib.nn.Parameter(lib.ones(2))]
            assert not m._has_foreach_support(ts, lib.device(dev))
            assert m._has_foreach_support(ts[:2], lib.device(dev)) == (dev in ("cpu", "cuda"))
    assert ef.Indices == list[int]


def test_optimizer_grouping_is_foreach_utils():
    import ember.optim.optimizer as eo
    assert eo._group_tensors_by_device_and_dtype is ef._group_tensors_by_device_and_dtype
    x, y = ember.ones(2), ember.ones(2, dtype=ember.float64)
    got = ember.optim.Optimizer._group_tensors_by_device_and_dtype([[x, y, x]], True)
    want = torch.optim.Optimizer._group_tensors_by_device_and_dtype(
        [[torch.ones(2), torch.ones(2, dtype=torch.float64), torch.ones(2)]], True)
    assert sorted((norm(k[1]), v[1]) for k, v in got.items()) == \
        sorted((norm(k[1]), v[1]) for k, v in want.items())
