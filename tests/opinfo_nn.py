"""OpInfo entries of the nn.functional native ops (ember/_kernels/{cpu,meta}/nn.py and their
composites): activations, softmax, norms, nll_loss, embedding, losses. Backward ops and random
ops are listed in NOT_IN_TABLE: their values are checked by tests/test_nn_functional.py."""
import numpy as np

from opinfo import NOT_IN_TABLE, OPS, T, DT, OpInfo, Sample, tensor, unary_samples, values

_F = ("float32", "float64", "float16", "bfloat16")


def _add(name, samples, dtypes=_F, inplace=None, out=None, rtol=1e-5, atol=1e-6):
    OPS.append(OpInfo(name, samples, dtypes, inplace, out, rtol, atol))


def _activation_samples(extra):
    def gen(op):
        for s in unary_samples(op):
            yield Sample(s.args + tuple(extra), desc=s.desc)
        yield Sample((tensor((2, 3), "int64"),) + tuple(extra), desc="int64 input")
    return gen


_ACT = {  # overload -> extra positional args
    "gelu.default": (), "silu.default": (), "mish.default": (), "elu.default": (0.7, 1.2, 0.9),
    "celu.default": (1.3,), "leaky_relu.default": (0.2,), "hardtanh.default": (-0.5, 0.8),
    "hardsigmoid.default": (), "hardswish.default": (), "softplus.default": (2, 3),
    "softshrink.default": (0.3,), "hardshrink.default": (0.3,), "threshold.default": (0.1, -2.0),
    "selu.default": (), "relu6.default": (),
}
for _name, _extra in _ACT.items():
    _base = _name.split(".")[0]
    _add(_name, _activation_samples(_extra), _F + ("int64",), f"{_base}_.default"
         if _base not in ("softplus", "softshrink", "hardshrink") else None,
         f"{_base}.out" if _base not in ("selu", "relu6") else None, rtol=1e-4, atol=1e-5)
_add("gelu.default", lambda op: iter([Sample((tensor((3, 4), "float32"),),
                                             {"approximate": "tanh"}),
                                      Sample((tensor((3, 4), "float32"),),
                                             {"approximate": "bad"})]),
     inplace="gelu_.default", out="gelu.out", rtol=1e-4)
_add("softshrink.default", lambda op: iter([Sample((tensor((3,), "float32"), -1.0))]))
_add("log_sigmoid.default", _activation_samples(()), rtol=1e-4)
_add("log_sigmoid_forward.default", _activation_samples(()), rtol=1e-4)


def _glu_samples(op):
    for dt in op.dtypes:
        yield Sample((tensor((4, 6), dt), -1), desc=dt)
        yield Sample((tensor((4, 6), dt, "transposed"), 0), desc=f"{dt} transposed")
    yield Sample((tensor((4, 3), "float32"), 1), desc="odd")
    yield Sample((tensor((), "float32"),), desc="0-dim")


_add("glu.default", _glu_samples, out="glu.out", rtol=1e-4)


def _prelu_samples(op):
    for dt in op.dtypes:
        yield Sample((tensor((2, 3, 4), dt), tensor((3,), dt)), desc=dt)
        yield Sample((tensor((2, 3), dt), tensor((1,), dt)), desc=f"{dt} scalar weight")
    yield Sample((tensor((2, 3), "float32"), tensor((4,), "float32")), desc="channel mismatch")


_add("prelu.default", _prelu_samples)
_add("_prelu_kernel.default", lambda op: iter([
    Sample((tensor((2, 3, 4), "float32"), tensor((1, 3, 1), "float32")))]))


def _softmax_samples(op):
    for dt in op.dtypes:
        for shape, dim in (((3, 4), 1), ((3, 4), 0), ((2, 3, 4), -2), ((), 0), ((0, 3), 1)):
            yield Sample((tensor(shape, dt), dim, False), desc=f"{dt} {shape} dim={dim}")
        yield Sample((tensor((3, 4), dt, "transposed"), 1, False), desc=f"{dt} transposed")
    yield Sample((tensor((3, 4), "float32"), 2, False), desc="dim out of range")
    yield Sample((tensor((3, 4), "int64"), 1, False), desc="int64")
    yield Sample((tensor((3, 4), "float16"), 1, True), desc="half to float on CPU")


def _softmax_int_samples(op):
    for dt in op.dtypes:
        yield Sample((tensor((3, 4), dt), 1), desc=dt)
    yield Sample((tensor((3, 4), "int64"), 1), {"dtype": DT("float64")}, desc="int->float64")
    yield Sample((tensor((3, 4), "float32"), 0), {"dtype": DT("float64")}, desc="dtype")


for _s in ("_softmax", "_log_softmax"):
    _add(f"{_s}.default", _softmax_samples, out=f"{_s}.out", rtol=1e-4)
for _s in ("softmax", "log_softmax"):
    _add(f"{_s}.int", _softmax_int_samples, out=f"{_s}.int_out", rtol=1e-4)


def _layer_norm_samples(op):
    for dt in op.dtypes:
        yield Sample((tensor((3, 4), dt), [4], tensor((4,), dt), tensor((4,), dt), 1e-5), desc=dt)
        yield Sample((tensor((2, 3, 4), dt, "transposed"), [3, 4], None, None, 1e-5),
                     desc=f"{dt} strided, no affine")
    yield Sample((tensor((3, 4), "float32"), [3], None, None, 1e-5), desc="shape mismatch")
    yield Sample((tensor((3, 4), "float32"), [4], tensor((3,), "float32"), None, 1e-5),
                 desc="weight shape")
    yield Sample((tensor((0, 4), "float32"), [4], None, None, 1e-5), desc="empty")


_add("native_layer_norm.default", _layer_norm_samples, rtol=1e-4, atol=1e-5)
_add("layer_norm.default", lambda op: iter([
    Sample((tensor((3, 4), "float32"), [4]), desc="defaults"),
    Sample((tensor((3, 4), "float64"), [4], tensor((4,), "float64")), {"eps": 0.1})]),
    rtol=1e-4, atol=1e-5)


def _batch_norm_samples(op):
    for dt in ("float32", "float64"):
        c = 3
        yield Sample((tensor((4, c, 2), dt), tensor((c,), dt), tensor((c,), dt), None, None, True,
                      0.1, 1e-5), desc=f"{dt} train")
        yield Sample((tensor((4, c), dt), None, None, tensor((c,), dt),
                      tensor((c,), dt, positive=True), False, 0.1, 1e-5), desc=f"{dt} eval")


_add("native_batch_norm.default", _batch_norm_samples, ("float32", "float64"), rtol=1e-4,
     atol=1e-5)
_add("batch_norm.default", lambda op: iter([
    Sample((tensor((4, 3), "float32"), None, None, None, None, True, 0.1, 1e-5, False))]),
    rtol=1e-4, atol=1e-5)


def _group_norm_samples(op):
    for dt in ("float32", "float64"):
        yield Sample((tensor((2, 6, 3), dt), tensor((6,), dt), tensor((6,), dt), 2, 6, 3, 3,
                      1e-5), desc=dt)
        yield Sample((tensor((2, 4), dt), None, None, 2, 4, 1, 2, 1e-5), desc=f"{dt} no affine")
    yield Sample((tensor((2, 6, 3), "float32"), None, None, 2, 6, 3, 4, 1e-5), desc="groups")


_add("native_group_norm.default", _group_norm_samples, ("float32", "float64"), rtol=1e-4,
     atol=1e-5)
_add("group_norm.default", lambda op: iter([Sample((tensor((2, 6, 3), "float32"), 3)),
                                            Sample((tensor((2, 6, 3), "float32"), 4))]),
     rtol=1e-4, atol=1e-5)
_add("instance_norm.default", lambda op: iter([
    Sample((tensor((2, 3, 5), "float32"), None, None, None, None, True, 0.1, 1e-5, False))]),
    rtol=1e-4, atol=1e-5)
_add("rms_norm.default", lambda op: iter([
    Sample((tensor((3, 4), "float32"), [4], tensor((4,), "float32"))),
    Sample((tensor((3, 4), "float64"), [4]), {"eps": 0.1}),
    Sample((tensor((3, 4), "float32"), [3]), desc="shape mismatch")]), rtol=1e-4)


def _log_probs(shape, dt):
    v = values(shape, "float64")
    v = v - np.log(np.exp(v).sum(-1, keepdims=True))
    return T(v, dt)


def _targets(vals):
    return T(np.asarray(vals), "int64")


def _nll_samples(op):
    for dt in op.dtypes:
        for red in (0, 1, 2):
            yield Sample((_log_probs((4, 3), dt), _targets([0, 2, 1, 2]), None, red, -100),
                         desc=f"{dt} reduction={red}")
        yield Sample((_log_probs((4, 3), dt), _targets([0, 2, -100, 2]), tensor((3,), dt,
                      positive=True), 1, -100), desc=f"{dt} weight, ignore")
        yield Sample((_log_probs((3,), dt), _targets(1), None, 1, -100), desc=f"{dt} 1-D")
    yield Sample((_log_probs((4, 3), "float32"), _targets([0, 2, 1]), None, 1, -100),
                 desc="batch mismatch")
    yield Sample((_log_probs((4, 3), "float32"), T(np.array([0, 2, 1, 1]), "int32"), None, 1,
                  -100), desc="int32 target")


_add("nll_loss_forward.default", _nll_samples, ("float32", "float64"), rtol=1e-4, atol=1e-5)
_add("nll_loss.default", lambda op: iter([
    Sample((_log_probs((4, 3), "float32"), _targets([0, 2, 1, 2]))),
    Sample((_log_probs((2, 3, 4), "float32"), T(np.array([[0, 1, 2, 0], [2, 2, 1, 0]]),
                                                "int64")), desc="N-D")]), rtol=1e-4)
_add("nll_loss_nd.default", lambda op: iter([
    Sample((_log_probs((4, 3), "float32"), _targets([0, 2, 1, 2])), {"reduction": 0})]),
    rtol=1e-4)


def _ce_samples(op):
    yield Sample((tensor((4, 3), "float32"), _targets([0, 2, 1, 2])))
    yield Sample((tensor((4, 3), "float64"), _targets([0, 2, -100, 2]), tensor((3,), "float64",
                  positive=True), 1, -100, 0.1), desc="weight, ignore, smoothing")
    yield Sample((tensor((4, 3), "float64"), T(np.abs(values((4, 3), "float64")), "float64")),
                 desc="probabilities")
    yield Sample((tensor((2, 3, 4), "float32"), T(np.array([[0, 1, 2, 0], [2, 2, 1, 0]]),
                                                  "int64"), None, 0), desc="N-D none")


_add("cross_entropy_loss.default", _ce_samples, rtol=1e-4, atol=1e-5)


def _embedding_samples(op):
    for dt in ("float32", "float64", "int64", "float16"):
        yield Sample((tensor((5, 3), dt), _targets([[0, 4], [2, 2]])), desc=dt)
    yield Sample((tensor((5, 3), "float32", "transposed"), _targets([1, 3])), desc="strided")
    yield Sample((tensor((5, 3), "float32"), _targets([1, 5])), desc="out of range",
                 data_dependent=True)
    yield Sample((tensor((5, 3), "float32"), tensor((2,), "float32")), desc="float indices")
    yield Sample((tensor((5, 3), "float32"), _targets(2)), desc="0-dim index")


_add("embedding.default", _embedding_samples, ("float32",), out="embedding.out")


def _loss_samples(op):
    for dt in ("float32", "float64"):
        for red in (0, 1, 2):
            yield Sample((tensor((3, 4), dt), tensor((3, 4), dt), red), desc=f"{dt} {red}")
    yield Sample((tensor((3, 4), "float32"), tensor((4,), "float32")), desc="broadcast target")
    yield Sample((tensor((0, 4), "float32"), tensor((0, 4), "float32")), desc="empty")


_add("mse_loss.default", _loss_samples, out="mse_loss.out", rtol=1e-4)


def _bce_samples(op):
    for dt in ("float32", "float64"):
        p = T(np.clip(np.abs(values((3, 4), "float64")) / 6, 0.01, 0.99), dt)
        y = T(np.abs(values((3, 4), "float64")) / 6, dt)
        for red in (0, 1, 2):
            yield Sample((p, y, None, red), desc=f"{dt} {red}")
        yield Sample((p, y, tensor((3, 4), dt, positive=True)), desc=f"{dt} weight")
    yield Sample((T(np.array([0.0, 1.0, 0.5]), "float32"), T(np.array([0.0, 0.0, 1.0]),
                                                              "float32")), desc="log clamp")
    yield Sample((tensor((3,), "float32", positive=True), tensor((3,), "float32")),
                 desc="input above 1", data_dependent=True)


# PyTorch's binary_cross_entropy.out leaves an empty out unresized for reduction='none'
_add("binary_cross_entropy.default", _bce_samples, rtol=1e-4)
NOT_IN_TABLE["binary_cross_entropy.out"] = ("PyTorch's out= does not resize for "
                                            "reduction='none'; the functional form is tested")


def _bce_logits_samples(op):
    for dt in ("float32", "float64"):
        y = T(np.abs(values((3, 4), "float64")) / 6, dt)
        for red in (0, 1, 2):
            yield Sample((tensor((3, 4), dt), y, None, None, red), desc=f"{dt} {red}")
        yield Sample((tensor((3, 4), dt), y, tensor((4,), dt, positive=True),
                      tensor((4,), dt, positive=True)), desc=f"{dt} weight, pos_weight")


_add("binary_cross_entropy_with_logits.default", _bce_logits_samples,
     out="binary_cross_entropy_with_logits.out", rtol=1e-4)
_add("linear.default", lambda op: iter([
    Sample((tensor((3, 4), "float32"), tensor((5, 4), "float32"), tensor((5,), "float32"))),
    Sample((tensor((2, 3, 4), "float64"), tensor((5, 4), "float64"), tensor((5,), "float64"))),
    Sample((tensor((4,), "float32"), tensor((5, 4), "float32"))),
    Sample((tensor((3, 4), "float32"), tensor((5, 3), "float32")), desc="shape error")]),
    out="linear.out", rtol=1e-4)
_add("bilinear.default", lambda op: iter([
    Sample((tensor((3, 4), "float64"), tensor((3, 2), "float64"), tensor((5, 4, 2), "float64"),
            tensor((5,), "float64")))]), rtol=1e-4)
for _d in ("dropout", "feature_dropout", "alpha_dropout", "feature_alpha_dropout"):
    _add(f"{_d}.default", lambda op: iter([Sample((tensor((2, 3, 2), "float32"), 0.5, False),
                                           desc="eval: identity"),
                                           Sample((tensor((2, 3, 2), "float32"), 0.0, True),
                                           desc="p=0: identity")]))
_add("native_dropout.default", lambda op: iter([
    Sample((tensor((2, 3), "float32"), 0.5, False), desc="eval")]))


def _embedding_renorm_samples(op):
    return iter([])


_REASON = ("backward op: values checked through the gradients in tests/test_nn_functional.py")
for _n in """gelu_backward silu_backward mish_backward elu_backward leaky_relu_backward
        hardtanh_backward hardsigmoid_backward hardswish_backward softplus_backward
        softshrink_backward hardshrink_backward threshold_backward log_sigmoid_backward
        glu_backward _prelu_kernel_backward _softmax_backward_data _log_softmax_backward_data
        native_layer_norm_backward native_batch_norm_backward native_group_norm_backward
        nll_loss_backward embedding_dense_backward embedding_backward native_dropout_backward
        mse_loss_backward binary_cross_entropy_backward""".split():
    NOT_IN_TABLE[f"{_n}.default"] = _REASON
for _n in """hardswish_backward.out _softmax_backward_data.out _log_softmax_backward_data.out
        embedding_dense_backward.out native_dropout_backward.out""".split():
    NOT_IN_TABLE[_n] = _REASON
NOT_IN_TABLE["embedding_renorm_.default"] = ("in-place max_norm renormalization: checked by "
                                             "tests/test_nn_functional.py::test_embedding_max_norm")
NOT_IN_TABLE["selu_.default"] = NOT_IN_TABLE["relu6_.default"] = (
    "composite in-place activation: checked with its functional form's samples")
