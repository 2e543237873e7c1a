"""Ops PyTorch keeps at top level for TorchScript and older callers, written in ember ops as ATen
writes them: ``frobenius_norm`` and ``nuclear_norm`` (deprecated: one warning per process, then
``linalg_vector_norm`` / ``linalg_matrix_norm``), ``norm_except_dim`` (weight norm's norm over
every dim but one) and ``conv_tbc`` (a 1-d convolution of a time x batch x channel input)."""
from ..._ops.overload import ops

_aten = ops.aten


def _warn_once(key, msg):
    from ..cpu.linalg import warn_once
    warn_once(key, msg)


def frobenius_norm_dim(self, dim, keepdim=False):
    _warn_once("frobenius_norm", "at::frobenius_norm is deprecated and it is just left for JIT "
               "compatibility. It will be removed in a future PyTorch release. Please use "
               "`linalg.vector_norm(A, 2., dim, keepdim)` instead")
    if len(dim) > 2:
        raise RuntimeError(f"Expected at most 2 dimensions, but got {len(dim)} dimensions "
                           f"instead.")
    return _aten.linalg_vector_norm.default._call(self, 2.0, dim, keepdim, None)


def nuclear_norm(self, keepdim=False):
    return nuclear_norm_dim(self, (-2, -1), keepdim)


def nuclear_norm_dim(self, dim, keepdim=False):
    _warn_once("nuclear_norm", "at::nuclear_norm is deprecated and it is just left for JIT "
               "compatibility. It will be removed in a future PyTorch release. Please use "
               "`linalg.matrix_norm(A, 'nuc', dim, keepdim)` instead")
    return _aten.linalg_matrix_norm.str_ord._call(self, "nuc", dim, keepdim, None)


def norm_except_dim(v, pow=2, dim=0):
    """The ``pow``-norm of each slice along ``dim`` (of everything for dim=-1), shaped to
    broadcast against ``v``."""
    if dim == -1:
        return _aten.norm.Scalar._call(v, pow)
    last = v.dim() - 1
    if dim == 0 or dim == last:
        shape = [1] * v.dim()
        shape[dim] = v.size(dim)
        rows = v.contiguous().view(v.size(0), -1) if dim == 0 else \
            v.contiguous().view(-1, v.size(last))
        return _aten.norm.ScalarOpt_dim._call(rows, pow, [1 if dim == 0 else 0], False).view(shape)
    return norm_except_dim(v.transpose(0, dim), pow, 0).transpose(0, dim)


def conv_tbc(self, weight, bias, pad=0):
    """input (time, batch, in) * weight (width, in, out) + bias (out) -> (time', batch, out),
    ``pad`` zeros at each end of time."""
    if self.dim() != 3:
        raise RuntimeError("Input must have 3 dims: time, batch, in_channel")
    if weight.dim() != 3:
        raise RuntimeError("Weight tensor must have 3 dims: kernel_width, in_channels, "
                           "out_channels.")
    if bias.dim() != 1:
        raise RuntimeError("Bias must be 1-D")
    if self.size(2) != weight.size(1):
        raise RuntimeError("Input dim 2 (input channels) is not == dim 1 in the weight tensor")
    if weight.size(2) != bias.size(0):
        raise RuntimeError("Bias size must equal dim 2 in the weight tensor (output channels).")
    out = _aten.conv1d.default._call(self.permute(1, 2, 0), weight.permute(2, 1, 0), bias,
                                     (1,), (pad,), (1,), 1)
    return out.permute(2, 0, 1).contiguous()
