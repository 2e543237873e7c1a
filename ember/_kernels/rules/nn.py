"""Rules of the nn.functional native ops (activations, softmax, norms, losses, dropout, embedding),
for every backend: argument checks and result shapes and dtypes, with PyTorch's errors. The CPU
kernels (``cpu/nn.py``) and the Meta kernels (``meta/nn.py``) call them; this module imports no
backend."""
import math

from ..._core import dtype as D
from ..._core import strides as _st
from ..._core.promotion import result_type_of


def _fmt(shape):
    return "[" + ", ".join(map(str, shape)) + "]"


def check_floating(kernel, *tensors):
    """PyTorch's dtype dispatch of a floating-only kernel."""
    for t in tensors:
        if t is not None and t._dtype._category != D.FLOATING:
            raise NotImplementedError(f'"{kernel}" not implemented for \'{t._dtype._short}\'')


def check_inexact(kernel, *tensors):
    """PyTorch's dtype dispatch of a floating-or-complex kernel."""
    for t in tensors:
        if t is not None and t._dtype._category not in (D.FLOATING, D.COMPLEX):
            raise NotImplementedError(f'"{kernel}" not implemented for \'{t._dtype._short}\'')


def check_numeric(kernel, *tensors):
    for t in tensors:
        if t is not None and (t._dtype is D.bool_ or t._dtype._category > D.FLOATING):
            raise NotImplementedError(f'"{kernel}" not implemented for \'{t._dtype._short}\'')


# Losses that nn.functional writes in ember ops where ATen has one kernel each: the kernel whose
# dtype dispatch (on the operands' common dtype) PyTorch's error names, and the dtypes it has
LOSS_KERNELS = {
    "smooth_l1_loss": ("smooth_l1_cpu", (D.float16, D.bfloat16, D.float32, D.float64)),
    "huber_loss": ("huber_cpu", (D.float16, D.bfloat16, D.float32, D.float64)),
    "multi_margin_loss": ("multi_margin_loss_cpu_kernel", (D.float32, D.float64)),
    "multilabel_margin_loss": ("multilabel_margin_loss_forward_out_frame",
                               (D.float32, D.float64)),
    "ctc_loss": ("ctc_loss_cpu", (D.float32, D.float64)),
}


def check_loss_dtype(name, *operands):
    kernel, dtypes = LOSS_KERNELS[name]
    dt = result_type_of(operands)
    if dt not in dtypes:
        raise NotImplementedError(f'"{kernel}" not implemented for \'{dt._short}\'')


def check_cosine_similarity(x1, x2):
    dt = result_type_of((x1, x2))
    if not dt.is_floating_point:
        raise RuntimeError(f"expected common dtype to be floating point, yet common dtype is "
                           f"{dt._short}")


def check_kl_div(self, target):
    if self._dtype.is_complex or target._dtype.is_complex:
        raise RuntimeError("kl_div: Complex inputs not supported.")
    if self._dtype._category <= D.INTEGRAL or target._dtype._category <= D.INTEGRAL:
        raise RuntimeError("kl_div: Integral inputs not supported.")


def check_same_shape(name, a, b):
    if a._size != b._size:
        raise RuntimeError(f"{name}: expected {_fmt(a._size)} and {_fmt(b._size)} to have the "
                           f"same shape")


def activation_backward_shape(grad_output, self):
    """The result shape of an activation's backward op: PyTorch computes them as binary
    TensorIterator ops, so the gradient and the input broadcast (as under vmap, where one of
    them carries a batch dim)."""
    return _st.broadcast_shapes(grad_output._size, self._size)


def _check_approximate(approximate):
    if approximate not in ("none", "tanh"):
        raise RuntimeError("approximate argument must be either none or tanh.")


def _check_lambd(lambd):
    if lambd < 0:
        raise RuntimeError(f"lambda must be greater or equal to 0, but found to be {lambd}.")


def glu_shape(self, dim):
    if self.dim() == 0:
        raise RuntimeError("glu does not support scalars because halving size must be even")
    d = _st.wrap_dim(dim, self.dim())
    n = self._size[d]
    if n % 2:
        raise RuntimeError(f"Halving dimension must be even, but dimension {d} is size {n}")
    return d, self._size[:d] + (n // 2,) + self._size[d + 1:]


def check_prelu(self, weight):
    check_floating("prelu_cpu", self, weight)
    _st.broadcast_shapes(self._size, weight._size)


def _softmax_kernel(name, t, dim):
    """ATen's CPU softmax kernel for ``dim``: one over the last dim, another over inner ones."""
    nd = t.dim()
    return f"{name}_lastdim_kernel_impl" if nd == 0 or dim % nd == nd - 1 else \
        f"{name}_kernel_impl"


def check_softmax(self, dim, half_to_float, name="softmax"):
    if half_to_float:
        raise RuntimeError(f"{name} with half to float conversion is not supported on CPU")
    d = _st.wrap_dim(dim, self.dim())
    check_floating(_softmax_kernel(name, self, d), self)
    return d


def check_softmax_backward(grad_output, output, dim, input_dtype, name="softmax"):
    check_same_shape("softmax_backward", grad_output, output)
    d = _st.wrap_dim(dim, output.dim())
    check_floating(_softmax_kernel(f"{name}_backward", output, d), grad_output)
    return d


def layer_norm_shapes(input, normalized_shape, weight, bias):
    """(M, N, stats shape) of native_layer_norm, after PyTorch's argument checks."""
    ns = tuple(normalized_shape)
    if len(ns) < 1:
        raise RuntimeError("Expected normalized_shape to be at least 1-dimensional, i.e., "
                           "containing at least one element, but got normalized_shape = []")
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and t._size != ns:
            raise RuntimeError(f"Expected {name} to be of same shape as normalized_shape, but got "
                               f"{name} of shape {_fmt(t._size)} and normalized_shape = {_fmt(ns)}")
    k = len(ns)
    if input.dim() < k or input._size[input.dim() - k:] != ns:
        raise RuntimeError(f"Given normalized_shape={_fmt(ns)}, expected input with shape "
                           f"[*, {', '.join(map(str, ns))}], but got input of size"
                           f"{_fmt(input._size)}")
    axis = input.dim() - k
    m = math.prod(input._size[:axis])
    n = math.prod(ns)
    return m, n, input._size[:axis] + (1,) * k


def norm_stats_dtype(input, *params):
    """The dtype of the saved statistics of layer, group and batch norm (mean and rstd or
    invstd): float32 for a bfloat16/float16 input with float32 parameters (ATen's "mixed type":
    autocast's norms, whose inputs come from bfloat16 layers), else the input's. Parameters
    (weight, bias, running stats) of another dtype than the input's must be that case (ATen's
    check_mixed_data_type)."""
    params = [p for p in params if p is not None]
    if all(p._dtype is input._dtype for p in params):
        return input._dtype
    if any(p._dtype is not D.float32 for p in params):
        raise RuntimeError("mixed dtype (CPU): expect parameter to have scalar type of Float")
    if input._dtype is D.float32:
        raise RuntimeError("mixed dtype (CPU): expect input to have scalar type of BFloat16 or "
                           "Half")
    return D.float32


def batch_norm_shapes(input, weight, bias, running_mean, running_var):
    c = input._size[_st.wrap_dim(1, input.dim())]  # PyTorch's IndexError for a 1-d input
    for name, t in (("weight", weight), ("bias", bias), ("running_mean", running_mean),
                    ("running_var", running_var)):
        if t is not None and t.numel() != c:
            raise RuntimeError(f"{name} should contain {c} elements not {t.numel()}")
    return c


def check_group_norm(input, weight, bias, N, C, HxW, group):
    if group <= 0:
        raise RuntimeError(f"Expected num groups to be greater than 0, got {group}")
    if C % group:
        raise RuntimeError(f"Expected number of channels in input to be divisible by num_groups, "
                           f"but got input of shape {_fmt(input._size)} and num_groups={group}")
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and (t.dim() != 1 or t.numel() != C):
            raise RuntimeError(f"Expected {name} to be a vector of size equal to the number of "
                               f"channels in input, but got {name} of shape {_fmt(t._size)} and "
                               f"input of shape {_fmt(input._size)}")
    if input.numel() != N * C * HxW:
        raise RuntimeError(f"Expected input to have {N * C * HxW} elements, got {input.numel()}")


def nll_loss_shapes(self, target, weight, reduction, ignore_index):
    """Output shape of nll_loss_forward after PyTorch's checks."""
    if self.dim() < 1 or self.dim() > 2:
        raise RuntimeError("input tensor should be 1D or 2D")
    if target.dim() > 1:
        raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
    no_batch = self.dim() == 1 and target.dim() == 0
    if not no_batch and self._size[0] != target._size[0]:
        raise RuntimeError(f"size mismatch (got input: {_fmt(self._size)}, target: "
                           f"{_fmt(target._size)})")
    if target._dtype is not D.int64 and target._dtype is not D.uint8:
        raise RuntimeError(f"expected target dtype to be Long or Byte, but got "
                           f"{target._dtype._short}")
    n_classes = self._size[-1]
    if weight is not None and weight.numel() != n_classes:
        raise RuntimeError(f"weight tensor should be defined either for all {n_classes} classes "
                           f"or no classes but got weight tensor of shape: {_fmt(weight._size)}")
    if reduction == 0 and self.dim() == 2:
        return (self._size[0],)
    return ()


def check_embedding(weight, indices):
    if indices._dtype not in (D.int64, D.int32):
        raise RuntimeError(f"Expected tensor for argument #1 'indices' to have one of the "
                           f"following scalar types: Long, Int; but got torch.{indices._dtype._short}Tensor "
                           f"instead (while checking arguments for embedding)")
    if weight.dim() != 2:
        raise RuntimeError("'weight' must be 2-D")
    return indices._size + (weight._size[1],)


def check_dropout(input, p):
    if p < 0 or p > 1:
        raise RuntimeError(f"dropout probability has to be between 0 and 1, but got {p}")


def dropout_backward_dtype(grad_output, mask, scale):
    """grad * mask * scale promotes as PyTorch's kernel does: an integer gradient times the
    float scale is a float tensor."""
    if mask._dtype is not D.bool_:
        raise RuntimeError(f"Mask should be Bool Scalar Type{mask._dtype._short}")
    # grad * mask promotes first: the identity for every dtype but the barebones unsigned
    # types, whose promotion with bool PyTorch refuses
    result_type_of((grad_output, mask))
    return result_type_of((grad_output, float(scale)))


def loss_shapes(name, self, target, reduction):
    if reduction not in (0, 1, 2):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    shape = _st.broadcast_shapes(self._size, target._size)
    return shape if reduction == 0 else ()


def check_bce(self, target, weight):
    if self._size != target._size:
        raise ValueError(f"Using a target size ({target.shape}) that is different to the input "
                         f"size ({self.shape}) is deprecated. Please ensure they have the same "
                         f"size.")


def bce_with_logits_dtype(self, target):
    """binary_cross_entropy_with_logits' result dtype: ATen builds the loss in place on
    ``1 - target``, so it has the target's dtype (float32 for a float64 input and a float32
    target), and an integer target cannot hold it."""
    dt = result_type_of((self, target))
    if not (target._dtype.is_floating_point or target._dtype.is_complex):
        raise RuntimeError(f"result type {dt._short} can't be cast to the desired output type "
                           f"{target._dtype._short}")
    return target._dtype


# ---------------------------------------------------------------------------------------------
# The activations generated from one row each (cpu/nn.py computes them).

ACTIVATION_RULES = {
    # name: (dtype check, PyTorch's kernel name for dtype errors)
    "gelu": (check_floating, "GeluKernelImpl"),
    "silu": (check_inexact, "silu_cpu"),
    "mish": (check_floating, "mish_cpu"),
    "elu": (check_floating, "elu_cpu"),
    "celu": (check_floating, "elu_cpu"),
    "leaky_relu": (check_floating, "leaky_relu_cpu"),
    "hardtanh": (check_numeric, "hardtanh_cpu"),
    "hardsigmoid": (check_floating, "hardsigmoid_cpu"),
    "hardswish": (check_floating, "hardswish_cpu"),
    "softplus": (check_floating, "softplus_cpu"),
    "softshrink": (check_floating, "softshrink_check"),  # (ATen checks lambd per dtype first)
    "hardshrink": (check_floating, "hardshrink_cpu"),
    "threshold": (check_numeric, "threshold_cpu"),
}

# Activations PyTorch has no in-place op for.
NO_INPLACE = {"hardshrink", "softplus", "softshrink"}

# Activations whose backward op does not take the generated kernel: elu's and leaky_relu's take
# other arguments (written out in cpu/nn.py), celu's is a composite.
_OWN_BACKWARD = {"elu", "celu", "leaky_relu"}


def has_generated_backward(name):
    """Whether activation ``name``'s backward op gets the kernel generated from its row."""
    return name not in _OWN_BACKWARD


def check_activation(name, self, params):
    check, kernel = ACTIVATION_RULES[name]
    if name == "hardtanh":  # ATen's hardtanh checks bool itself, then is clamp
        if self._dtype is D.bool_:
            raise RuntimeError("Bool inputs not supported for hardtanh")
        if self._dtype.is_complex:
            raise NotImplementedError("clamp is not supported for complex types")
    check(kernel, self)
    if name == "gelu":
        _check_approximate(*params)
    if name in ("softshrink",):
        _check_lambd(*params)
