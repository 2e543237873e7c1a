"""Kernels of the fused optimizer ops ``aten::_fused_adam_`` and ``_fused_adamw_``
(``Adam``/``AdamW`` with ``fused=True``): one op call per parameter group updates every
parameter, its two moments (and AMSGrad's running maximum) in place.

The update is :func:`adam_update`, written once against an array module, as PyTorch's
``adam_math``: the CPU kernel runs it on NumPy views, the CUDA kernel (``cuda/tensor_ops.py``) on
device arrays. With ``grad_scale`` (GradScaler's scale, for optimizers that unscale themselves)
each gradient is divided by it and written back unscaled; with ``found_inf`` set the call changes
nothing, as PyTorch's kernels do (the optimizer takes the step counts back).
"""
import numpy as np

from ..rules.optim import check_fused_adam_lists
from ._util import array_module, nd


def adam_update(xp, p, g, m, v, vmax, step, *, lr, beta1, beta2, weight_decay, eps, amsgrad,
                maximize, adamw, grad_scale):
    """One parameter's update on arrays of one module (``step`` already counts this one)."""
    if grad_scale is not None:
        g /= g.dtype.type(grad_scale)  # GradScaler's unscale, kept in the gradient
    grad = -g if maximize else g
    if weight_decay != 0:
        if adamw:
            p *= p.dtype.type(1 - lr * weight_decay)
        else:
            grad = grad + p * p.dtype.type(weight_decay)
    m += (grad - m) * m.dtype.type(1 - beta1)
    v *= v.dtype.type(beta2)
    v += grad * grad * v.dtype.type(1 - beta2)
    step_size = lr / (1 - beta1 ** step)
    bias_correction2_sqrt = (1 - beta2 ** step) ** 0.5
    if amsgrad:
        xp.maximum(vmax, v, out=vmax)
        denom = xp.sqrt(vmax)
    else:
        denom = xp.sqrt(v)
    denom /= denom.dtype.type(bias_correction2_sqrt)
    denom += denom.dtype.type(eps)
    p -= m / denom * p.dtype.type(step_size)


def fused_adam(arrays_of, scalar_of, params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs,
               state_steps, adamw, *, lr, beta1, beta2, weight_decay, eps, amsgrad, maximize,
               grad_scale=None, found_inf=None):
    """The op on any device: ``arrays_of(tensor)`` gives its array, ``scalar_of(tensor)`` its
    single value as a Python number."""
    if found_inf is not None and scalar_of(found_inf) != 0:  # (before the checks, as ATen)
        return
    check_fused_adam_lists(params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps,
                           amsgrad)
    scale = scalar_of(grad_scale) if grad_scale is not None else None
    for i, p in enumerate(params):
        arrays = [arrays_of(t) for t in (p, grads[i], exp_avgs[i], exp_avg_sqs[i])]
        vmax = arrays_of(max_exp_avg_sqs[i]) if amsgrad else None
        adam_update(array_module(arrays[0]), *arrays, vmax, scalar_of(state_steps[i]), lr=lr, beta1=beta1,
                    beta2=beta2, weight_decay=weight_decay, eps=eps, amsgrad=amsgrad,
                    maximize=maximize, adamw=adamw, grad_scale=scale)


def _value(t):
    return nd(t).reshape(()).item()


def _kernel(adamw):
    def kernel(self, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps, lr, beta1,
               beta2, weight_decay, eps, amsgrad, maximize, grad_scale=None, found_inf=None):
        with np.errstate(all="ignore"):
            fused_adam(nd, _value, self, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs,
                       state_steps, adamw, lr=lr, beta1=beta1, beta2=beta2,
                       weight_decay=weight_decay, eps=eps, amsgrad=amsgrad, maximize=maximize,
                       grad_scale=grad_scale, found_inf=found_inf)
    kernel.__name__ = kernel.__qualname__ = "_fused_adamw_" if adamw else "_fused_adam_"
    return kernel


_fused_adam_ = _kernel(False)
_fused_adamw_ = _kernel(True)
