"""OpInfo entries of PyTorch's private Tensor ops user code meets: ``_conj``, ``_neg_view``,
``_is_all_true``/``_is_any_true`` and ``_addmm_activation`` (values, meta, gradients against
PyTorch); ``_lazy_clone`` and ``lift_fresh`` are tested in tests/test_surface_gaps.py."""
from opinfo import NOT_IN_TABLE, OPS, OpInfo, Sample, tensor

_FLOATS = ("float32", "float64")


def _unary_samples(op):
    for dt in op.dtypes:
        for shape, layout in [((3, 4), "contiguous"), ((3, 4), "transposed"), ((), "contiguous"),
                              ((0, 2), "contiguous")]:
            yield Sample((tensor(shape, dt, layout),), desc=f"{dt} {shape} {layout}")


def _bool_samples(op):
    for shape in [(3, 4), (), (0,), (5,)]:
        yield Sample((tensor(shape, "bool"),), desc=f"bool {shape}")
    yield Sample((tensor((3,), "float32"),), desc="float error")


def _addmm_activation_samples(op):
    for dt in op.dtypes:
        for use_gelu in (False, True):
            yield Sample((tensor((3, 5), dt), tensor((3, 4), dt), tensor((4, 5), dt, "transposed")),
                         {"use_gelu": use_gelu}, desc=f"{dt} gelu={use_gelu}")
            yield Sample((tensor((5,), dt), tensor((3, 4), dt), tensor((4, 5), dt)),
                         {"beta": 0.5, "alpha": 2.0, "use_gelu": use_gelu},
                         desc=f"{dt} broadcast gelu={use_gelu}")
    yield Sample((tensor((3, 5), "float32"), tensor((3, 4), "float32"), tensor((3, 5), "float32")),
                 desc="shape error")


OPS.extend([
    OpInfo("_conj.default", _unary_samples, ("complex64", "complex128")),
    OpInfo("_neg_view.default", _unary_samples, _FLOATS + ("int64",)),
    OpInfo("_is_all_true.default", _bool_samples, ("bool",)),
    OpInfo("_is_any_true.default", _bool_samples, ("bool",)),
    OpInfo("_addmm_activation.default", _addmm_activation_samples, _FLOATS,
           out="_addmm_activation.out", rtol=1e-4, atol=1e-5),
])

NOT_IN_TABLE["_lazy_clone.default"] = (
    "PyTorch's copy-on-write clone refuses the table's NumPy-backed inputs: values and "
    "gradients in tests/test_surface_gaps.py")
NOT_IN_TABLE["lift_fresh.default"] = (
    "torch.tensor's hand-off to the modes: traced and lifted by FakeTensorMode in "
    "tests/test_surface_gaps.py")
