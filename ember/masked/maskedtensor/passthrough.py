"""PyTorch's ``torch.masked.maskedtensor.passthrough``: the shape ops (select, view, cat, stack,
...) that apply to data and mask alike, the result wrapped as a new MaskedTensor."""
import ember

from .core import _map_mt_args_kwargs, _wrap_result

__all__ = []

# PyTorch's list less the ops ember does not declare (select_backward, slice_backward,
# unfold_backward, _reshape_alias): with no schema they never reach __torch_dispatch__
PASSTHROUGH_FNS = [
    ember.ops.aten.select,
    ember.ops.aten.transpose,
    ember.ops.aten.split,
    ember.ops.aten.t,
    ember.ops.aten.slice,
    ember.ops.aten.index,
    ember.ops.aten.expand,
    ember.ops.aten.view,
    ember.ops.aten._unsafe_view,
    ember.ops.aten.cat,
    ember.ops.aten.unsqueeze,
    ember.ops.aten.unfold,
    ember.ops.aten.im2col,
    ember.ops.aten.col2im,
    ember.ops.aten.stack,
]


def _is_pass_through_fn(fn):
    return fn in PASSTHROUGH_FNS


def _apply_pass_through_fn(fn, *args, **kwargs):
    data_args, data_kwargs = _map_mt_args_kwargs(args, kwargs, lambda x: x.get_data())
    result_data = fn(*data_args, **data_kwargs)
    mask_args, mask_kwargs = _map_mt_args_kwargs(args, kwargs, lambda x: x.get_mask())
    result_mask = fn(*mask_args, **mask_kwargs)
    return _wrap_result(result_data, result_mask)
