"""The batch-norm entry points PyTorch adds around ``native_batch_norm`` for export and
functionalization (``_native_batch_norm_legit`` and its ``no_stats``/``no_training``/
``_functional`` forms, ``_batch_norm_with_update``/``_batch_norm_no_update`` with their empty
``reserve`` and the ``_functional`` form, ``batch_norm_backward``): each calls ember's
``native_batch_norm`` / ``native_batch_norm_backward`` kernels through the dispatcher, as ATen's
CPU versions call ``batch_norm_cpu``; none restates the math."""
from ..._core import dtype as D
from ..._ops.overload import ops

_aten = ops.aten


def _reserve(input):
    """The (unused on CPU) cuDNN reserve space: an empty uint8 tensor."""
    return _aten.new_empty.default._call(input, [0], D.uint8, None, None, None)


def _native_batch_norm_legit(input, weight, bias, running_mean, running_var, training,
                             momentum, eps):
    return _aten.native_batch_norm.default._call(input, weight, bias, running_mean, running_var,
                                                 training, momentum, eps)


def _native_batch_norm_legit_no_stats(input, weight, bias, training, momentum, eps):
    return _aten.native_batch_norm.default._call(input, weight, bias, None, None, training,
                                                 momentum, eps)


def _batch_norm_legit_no_training(input, weight, bias, running_mean, running_var, momentum,
                                  eps):
    return _aten._native_batch_norm_legit.default._call(input, weight, bias, running_mean,
                                                        running_var, False, momentum, eps)


def _native_batch_norm_legit_functional(input, weight, bias, running_mean, running_var,
                                        training, momentum, eps):
    # the functional form updates copies of the statistics and returns them
    running_mean = _aten.clone.default._call(running_mean, None)
    running_var = _aten.clone.default._call(running_var, None)
    out, save_mean, save_invstd = _aten._native_batch_norm_legit.default._call(
        input, weight, bias, running_mean, running_var, training, momentum, eps)
    return out, save_mean, save_invstd, running_mean, running_var


def _batch_norm_with_update(input, weight, bias, running_mean, running_var, momentum, eps):
    out, save_mean, save_invstd = _aten.native_batch_norm.default._call(
        input, weight, bias, running_mean, running_var, True, momentum, eps)
    return out, save_mean, save_invstd, _reserve(input)


def _batch_norm_with_update_functional(input, weight, bias, running_mean, running_var, momentum,
                                       eps):
    running_mean = _aten.clone.default._call(running_mean, None)
    running_var = _aten.clone.default._call(running_var, None)
    out, save_mean, save_invstd, reserve = _aten._batch_norm_with_update.default._call(
        input, weight, bias, running_mean, running_var, momentum, eps)
    return out, save_mean, save_invstd, reserve, running_mean, running_var


def _batch_norm_no_update(input, weight, bias, running_mean, running_var, momentum, eps):
    out, save_mean, save_invstd = _aten.native_batch_norm.default._call(
        input, weight, bias, running_mean, running_var, False, momentum, eps)
    return out, save_mean, save_invstd, _reserve(input)


def batch_norm_backward(grad_out, input, weight, running_mean, running_var, save_mean, save_var,
                        update, eps, output_mask, reserve):
    return _aten.native_batch_norm_backward.default._call(
        grad_out, input, weight, running_mean, running_var, save_mean, save_var, update, eps,
        output_mask)
