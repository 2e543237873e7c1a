"""Activation modules: each holds its hyper-parameters and calls the ``nn.functional`` form.
``MultiheadAttention`` (with its projection parameters) also lives here, as in PyTorch."""
import ember  # attributes read at call time: the package is initializing when this loads

from ... import empty
from .. import functional as F
from ..init import constant_, xavier_normal_, xavier_uniform_
from ..parameter import Parameter
from ...utils.backend_registration import _get_privateuse1_backend_name
from .linear import NonDynamicallyQuantizableLinear
from .module import Module

__all__ = ["Threshold", "ReLU", "RReLU", "Hardtanh", "ReLU6", "Sigmoid", "Hardsigmoid", "Tanh",
           "SiLU", "Mish", "Hardswish", "ELU", "CELU", "SELU", "GLU", "GELU", "Hardshrink",
           "LeakyReLU", "LogSigmoid", "Softplus", "Softshrink", "MultiheadAttention", "PReLU",
           "Softsign", "Tanhshrink", "Softmin", "Softmax", "Softmax2d", "LogSoftmax"]


class _InplaceActivation(Module):
    """An activation whose only option is ``inplace``; ``_fn`` names its functional form."""

    _fn = None

    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace

    def forward(self, input):
        return getattr(F, self._fn)(input, inplace=self.inplace)

    def extra_repr(self):
        return "inplace=True" if self.inplace else ""


class _PlainActivation(Module):
    """An activation without options."""

    _fn = None

    def forward(self, input):
        return getattr(F, self._fn)(input)


class Threshold(Module):
    def __init__(self, threshold, value, inplace=False):
        super().__init__()
        self.threshold = threshold
        self.value = value
        self.inplace = inplace

    def forward(self, input):
        return F.threshold(input, self.threshold, self.value, self.inplace)

    def extra_repr(self):
        inplace_str = ", inplace=True" if self.inplace else ""
        return f"threshold={self.threshold}, value={self.value}{inplace_str}"


class ReLU(_InplaceActivation):
    _fn = "relu"


class RReLU(Module):
    def __init__(self, lower=1.0 / 8, upper=1.0 / 3, inplace=False):
        super().__init__()
        self.lower = lower
        self.upper = upper
        self.inplace = inplace

    def forward(self, input):
        return F.rrelu(input, self.lower, self.upper, self.training, self.inplace)

    def extra_repr(self):
        inplace_str = ", inplace=True" if self.inplace else ""
        return f"lower={self.lower}, upper={self.upper}{inplace_str}"


class Hardtanh(Module):
    def __init__(self, min_val=-1.0, max_val=1.0, inplace=False, min_value=None, max_value=None):
        super().__init__()
        if min_value is not None:
            min_val = min_value
        if max_value is not None:
            max_val = max_value
        self.min_val = min_val
        self.max_val = max_val
        self.inplace = inplace
        if self.max_val <= self.min_val:
            raise AssertionError(f"max_val ({self.max_val}) must be greater than min_val "
                                 f"({self.min_val})")

    def forward(self, input):
        return F.hardtanh(input, self.min_val, self.max_val, self.inplace)

    def extra_repr(self):
        inplace_str = ", inplace=True" if self.inplace else ""
        return f"min_val={self.min_val}, max_val={self.max_val}{inplace_str}"


class ReLU6(Hardtanh):
    def __init__(self, inplace=False):
        super().__init__(0.0, 6.0, inplace)

    def extra_repr(self):
        return "inplace=True" if self.inplace else ""


class Sigmoid(_PlainActivation):
    _fn = "sigmoid"


class Hardsigmoid(_InplaceActivation):
    _fn = "hardsigmoid"


class Tanh(_PlainActivation):
    _fn = "tanh"


class SiLU(_InplaceActivation):
    _fn = "silu"


class Mish(_InplaceActivation):
    _fn = "mish"


class Hardswish(_InplaceActivation):
    _fn = "hardswish"


class ELU(Module):
    def __init__(self, alpha=1.0, inplace=False):
        super().__init__()
        self.alpha = alpha
        self.inplace = inplace

    def forward(self, input):
        return F.elu(input, self.alpha, self.inplace)

    def extra_repr(self):
        inplace_str = ", inplace=True" if self.inplace else ""
        return f"alpha={self.alpha}{inplace_str}"


class CELU(ELU):
    def forward(self, input):
        return F.celu(input, self.alpha, self.inplace)


class SELU(_InplaceActivation):
    _fn = "selu"


class GLU(Module):
    def __init__(self, dim=-1):
        super().__init__()
        self.dim = dim

    def forward(self, input):
        return F.glu(input, self.dim)

    def extra_repr(self):
        return f"dim={self.dim}"


class GELU(Module):
    def __init__(self, approximate="none"):
        super().__init__()
        self.approximate = approximate

    def forward(self, input):
        return F.gelu(input, approximate=self.approximate)

    def extra_repr(self):
        return f"approximate={repr(self.approximate)}"


class Hardshrink(Module):
    def __init__(self, lambd=0.5):
        super().__init__()
        self.lambd = lambd

    def forward(self, input):
        return F.hardshrink(input, self.lambd)

    def extra_repr(self):
        return f"{self.lambd}"


class LeakyReLU(Module):
    def __init__(self, negative_slope=1e-2, inplace=False):
        super().__init__()
        self.negative_slope = negative_slope
        self.inplace = inplace

    def forward(self, input):
        return F.leaky_relu(input, self.negative_slope, self.inplace)

    def extra_repr(self):
        inplace_str = ", inplace=True" if self.inplace else ""
        return f"negative_slope={self.negative_slope}{inplace_str}"


class LogSigmoid(_PlainActivation):
    _fn = "logsigmoid"


class Softplus(Module):
    def __init__(self, beta=1.0, threshold=20.0):
        super().__init__()
        self.beta = beta
        self.threshold = threshold

    def forward(self, input):
        return F.softplus(input, self.beta, self.threshold)

    def extra_repr(self):
        return f"beta={self.beta}, threshold={self.threshold}"


class Softshrink(Module):
    def __init__(self, lambd=0.5):
        super().__init__()
        self.lambd = lambd

    def forward(self, input):
        return F.softshrink(input, self.lambd)

    def extra_repr(self):
        return str(self.lambd)


class PReLU(Module):
    def __init__(self, num_parameters=1, init=0.25, device=None, dtype=None):
        self.num_parameters = num_parameters
        super().__init__()
        self.init = init
        self.weight = Parameter(empty(num_parameters, device=device, dtype=dtype))
        self.reset_parameters()

    def reset_parameters(self):
        constant_(self.weight, self.init)

    def forward(self, input):
        return F.prelu(input, self.weight)

    def extra_repr(self):
        return f"num_parameters={self.num_parameters}"


class Softsign(_PlainActivation):
    _fn = "softsign"


class Tanhshrink(_PlainActivation):
    _fn = "tanhshrink"


class _DimActivation(Module):
    """Softmax-style modules: a ``dim`` (``None`` = PyTorch's legacy implicit choice)."""

    _fn = None

    def __init__(self, dim=None):
        super().__init__()
        self.dim = dim

    def __setstate__(self, state):
        super().__setstate__(state)
        if not hasattr(self, "dim"):
            self.dim = None

    def forward(self, input):
        return getattr(F, self._fn)(input, self.dim, _stacklevel=5)

    def extra_repr(self):
        return f"dim={self.dim}"


class Softmin(_DimActivation):
    _fn = "softmin"


class Softmax(_DimActivation):
    _fn = "softmax"


class LogSoftmax(_DimActivation):
    _fn = "log_softmax"


class Softmax2d(Module):
    def forward(self, input):
        if input.dim() not in (3, 4):
            raise ValueError(f"Softmax2d: expected input to be 3D or 4D, got {input.dim()}D "
                             "instead")
        return F.softmax(input, -3, _stacklevel=5)


class MultiheadAttention(Module):
    """Attention over ``num_heads`` heads with input/output projections. In eval mode with no
    gradient wanted, self-attention takes PyTorch's fused inference path
    (``aten::_native_multi_head_attention``) under PyTorch's conditions, which
    ``ember.backends.mha.set_fastpath_enabled(False)`` turns off."""

    __constants__ = ["batch_first"]

    def __init__(self, embed_dim, num_heads, dropout=0.0, bias=True, add_bias_kv=False,
                 add_zero_attn=False, kdim=None, vdim=None, batch_first=False, device=None,
                 dtype=None):
        if embed_dim <= 0 or num_heads <= 0:
            raise ValueError(f"embed_dim and num_heads must be greater than 0, got "
                             f"embed_dim={embed_dim} and num_heads={num_heads} instead")
        factory_kwargs = {"device": device, "dtype": dtype}
        super().__init__()
        self.embed_dim = embed_dim
        self.kdim = kdim if kdim is not None else embed_dim
        self.vdim = vdim if vdim is not None else embed_dim
        self._qkv_same_embed_dim = self.kdim == embed_dim and self.vdim == embed_dim
        self.num_heads = num_heads
        self.dropout = dropout
        self.batch_first = batch_first
        self.head_dim = embed_dim // num_heads
        if self.head_dim * num_heads != self.embed_dim:
            raise AssertionError("embed_dim must be divisible by num_heads")
        if not self._qkv_same_embed_dim:
            self.q_proj_weight = Parameter(empty((embed_dim, embed_dim), **factory_kwargs))
            self.k_proj_weight = Parameter(empty((embed_dim, self.kdim), **factory_kwargs))
            self.v_proj_weight = Parameter(empty((embed_dim, self.vdim), **factory_kwargs))
            self.register_parameter("in_proj_weight", None)
        else:
            self.in_proj_weight = Parameter(empty((3 * embed_dim, embed_dim), **factory_kwargs))
            self.register_parameter("q_proj_weight", None)
            self.register_parameter("k_proj_weight", None)
            self.register_parameter("v_proj_weight", None)
        if bias:
            self.in_proj_bias = Parameter(empty(3 * embed_dim, **factory_kwargs))
        else:
            self.register_parameter("in_proj_bias", None)
        self.out_proj = NonDynamicallyQuantizableLinear(embed_dim, embed_dim, bias=bias,
                                                        **factory_kwargs)
        if add_bias_kv:
            self.bias_k = Parameter(empty((1, 1, embed_dim), **factory_kwargs))
            self.bias_v = Parameter(empty((1, 1, embed_dim), **factory_kwargs))
        else:
            self.bias_k = self.bias_v = None
        self.add_zero_attn = add_zero_attn
        self._reset_parameters()

    def _reset_parameters(self):
        if self._qkv_same_embed_dim:
            xavier_uniform_(self.in_proj_weight)
        else:
            xavier_uniform_(self.q_proj_weight)
            xavier_uniform_(self.k_proj_weight)
            xavier_uniform_(self.v_proj_weight)
        if self.in_proj_bias is not None:
            constant_(self.in_proj_bias, 0.0)
            constant_(self.out_proj.bias, 0.0)
        if self.bias_k is not None:
            xavier_normal_(self.bias_k)
        if self.bias_v is not None:
            xavier_normal_(self.bias_v)

    def __setstate__(self, state):
        state.setdefault("_qkv_same_embed_dim", True)
        super().__setstate__(state)

    def forward(self, query, key, value, key_padding_mask=None, need_weights=True,
                attn_mask=None, average_attn_weights=True, is_causal=False):
        is_batched = query.dim() == 3
        key_padding_mask = F._canonical_mask(
            mask=key_padding_mask, mask_name="key_padding_mask",
            other_type=F._none_or_dtype(attn_mask), other_name="attn_mask",
            target_type=query.dtype)
        attn_mask = F._canonical_mask(mask=attn_mask, mask_name="attn_mask", other_type=None,
                                      other_name="", target_type=query.dtype, check_other=False)
        if not self._why_not_fast_path(query, key, value, is_batched):
            merged_mask, mask_type = self.merge_masks(attn_mask, key_padding_mask, query)
            if self.in_proj_bias is not None and self.in_proj_weight is not None:
                return ember._native_multi_head_attention(
                    query, key, value, self.embed_dim, self.num_heads, self.in_proj_weight,
                    self.in_proj_bias, self.out_proj.weight, self.out_proj.bias, merged_mask,
                    need_weights, average_attn_weights, mask_type)
        if self.batch_first and is_batched:  # (N, L, E) -> (L, N, E), keeping q/k/v identity
            if key is value:
                if query is key:
                    query = key = value = query.transpose(1, 0)
                else:
                    query, key = (x.transpose(1, 0) for x in (query, key))
                    value = key
            else:
                query, key, value = (x.transpose(1, 0) for x in (query, key, value))
        separate = {}
        if not self._qkv_same_embed_dim:
            separate = dict(use_separate_proj_weight=True, q_proj_weight=self.q_proj_weight,
                            k_proj_weight=self.k_proj_weight, v_proj_weight=self.v_proj_weight)
        attn_output, attn_output_weights = F.multi_head_attention_forward(
            query, key, value, self.embed_dim, self.num_heads, self.in_proj_weight,
            self.in_proj_bias, self.bias_k, self.bias_v, self.add_zero_attn, self.dropout,
            self.out_proj.weight, self.out_proj.bias, training=self.training,
            key_padding_mask=key_padding_mask, need_weights=need_weights, attn_mask=attn_mask,
            average_attn_weights=average_attn_weights, is_causal=is_causal, **separate)
        if self.batch_first and is_batched:
            return attn_output.transpose(1, 0), attn_output_weights
        return attn_output, attn_output_weights

    def _why_not_fast_path(self, query, key, value, is_batched):
        """Why the fused inference kernel cannot run ("" when it can): PyTorch's conditions,
        checked in PyTorch's order so the first reason is the one it would give."""
        if not ember.backends.mha.get_fastpath_enabled():
            return "torch.backends.mha.get_fastpath_enabled() was not True"
        if not is_batched:
            return f"input not batched; expected query.dim() of 3 but got {query.dim()}"
        if query is not key or key is not value:
            return ("non-self attention was used (query, key, and value are not the same "
                    "Tensor)")
        if self.in_proj_bias is not None and query.dtype != self.in_proj_bias.dtype:
            return (f"dtypes of query ({query.dtype}) and self.in_proj_bias "
                    f"({self.in_proj_bias.dtype}) don't match")
        if self.in_proj_weight is None:
            return "in_proj_weight was None"
        if query.dtype != self.in_proj_weight.dtype:
            return (f"dtypes of query ({query.dtype}) and self.in_proj_weight "
                    f"({self.in_proj_weight.dtype}) don't match")
        if self.training:
            return "training is enabled"
        if self.num_heads % 2 != 0:
            return "self.num_heads is not even"
        if not self.batch_first:
            return "batch_first was not True"
        if self.bias_k is not None:
            return "self.bias_k was not None"
        if self.bias_v is not None:
            return "self.bias_v was not None"
        if self.add_zero_attn:
            return "add_zero_attn was enabled"
        if not self._qkv_same_embed_dim:
            return "_qkv_same_embed_dim was not True"
        if ember.is_autocast_enabled():
            return "autocast is enabled"
        tensor_args = (query, key, value, self.in_proj_weight, self.in_proj_bias,
                       self.out_proj.weight, self.out_proj.bias)
        private = _get_privateuse1_backend_name()
        why = _fast_path_tensor_blocker(tensor_args, ("cpu", "cuda", private),
                                        f"cpu, cuda or {private}")
        if not why and _is_make_fx_tracing():
            why = "we are running make_fx tracing"
        return why

    def merge_masks(self, attn_mask, key_padding_mask, query):
        """(merged mask, mask type) for the fused kernel: a key-padding mask alone is type 1;
        an attention mask (with or without a key-padding one) is expanded to
        (batch, heads, L, L) and is type 2; neither gives (None, None)."""
        mask_type = merged_mask = None
        if key_padding_mask is not None:
            mask_type, merged_mask = 1, key_padding_mask
        if attn_mask is not None:
            batch_size, seq_len, _ = query.shape
            mask_type = 2
            if attn_mask.dim() == 3:
                merged_mask = attn_mask.view(batch_size, -1, seq_len, seq_len)
            else:
                merged_mask = attn_mask.view(1, 1, seq_len, seq_len).expand(
                    batch_size, self.num_heads, -1, -1)
            if key_padding_mask is not None:
                merged_mask = merged_mask + key_padding_mask.view(
                    batch_size, 1, 1, seq_len).expand(-1, self.num_heads, -1, -1)
        return merged_mask, mask_type


def _fast_path_tensor_blocker(tensor_args, device_types, device_message):
    """The fused path's conditions on the tensors themselves ("" when none blocks it)."""
    if ember.overrides.has_torch_function(tensor_args):
        return "some Tensor argument has_torch_function"
    if not all(x is None or x.device.type in device_types for x in tensor_args):
        return f"some Tensor argument's device is neither one of {device_message}"
    if ember.is_grad_enabled() and any(x is not None and x.requires_grad for x in tensor_args):
        return ("grad is enabled and at least one of query or the input/output projection "
                "weights or biases requires_grad")
    return ""


def _is_make_fx_tracing():
    from ...fx.experimental.proxy_tensor import get_proxy_mode
    return get_proxy_mode() is not None or ember.compiler.is_exporting()
