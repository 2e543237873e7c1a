"""``Adam`` (PyTorch's ``torch.optim.adam``), with optional AMSGrad and decoupled weight decay,
and ``adam``, its functional form (``AdamW`` and ``adamw`` in ``adamw.py`` are these with the
decay decoupled).

Three implementations, as PyTorch's: the per-tensor loop, the multi-tensor ("foreach") path and
the fused one (one ``_fused_adam_``/``_fused_adamw_`` call per device and dtype). The foreach
path is the loop's arithmetic op for op (ember's foreach kernels may round a last place
differently); ``foreach=None`` takes it wherever ember's foreach kernels serve, the CPU included
(``optimizer._default_foreach_dense``).
"""
from .. import (Tensor, _foreach_add, _foreach_add_, _foreach_addcdiv_, _foreach_addcmul_,
                _foreach_div_, _foreach_lerp_, _foreach_maximum_, _foreach_mul_, _foreach_neg,
                _foreach_neg_, _foreach_pow, _foreach_reciprocal_, _foreach_sqrt,
                _foreach_sqrt_, _foreach_sub_, _fused_adam_, _fused_adamw_, float32, is_complex,
                maximum, tensor, view_as_real, zeros_like)
from .optimizer import (Optimizer, _check_capturable, _check_state_steps, _closure_loss,
                        _default_foreach_dense, _device_dtype_check_for_fused, _get_value,
                        _group_tensors_by_device_and_dtype, _step_tensor, _use_grad, _validate,
                        _view_as_real)

__all__ = ["Adam", "adam"]

_CAPTURABLE_MESSAGE = "If capturable=True, params and state_steps must be on supported devices"


class Adam(Optimizer):
    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 amsgrad=False, *, foreach=None, maximize=False, capturable=False,
                 differentiable=False, fused=None, decoupled_weight_decay=False):
        if isinstance(lr, Tensor) and foreach and not capturable:
            raise ValueError("lr as a Tensor is not supported for capturable=False and "
                             "foreach=True")
        _validate(lr=lr, eps=eps, betas=betas, weight_decay=weight_decay)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, amsgrad=amsgrad,
                        maximize=maximize, foreach=foreach, capturable=capturable,
                        differentiable=differentiable, fused=fused,
                        decoupled_weight_decay=decoupled_weight_decay)
        super().__init__(params, defaults)
        if fused:
            if differentiable:
                raise RuntimeError("`fused` does not support `differentiable`")
            # GradScaler hands this optimizer its scale and found_inf instead of unscaling
            self._step_supports_amp_scaling = True
            if foreach:
                raise RuntimeError("`fused` and `foreach` cannot be `True` together.")

    def __setstate__(self, state):
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("amsgrad", False)
            group.setdefault("maximize", False)
            group.setdefault("foreach", None)
            group.setdefault("capturable", False)
            group.setdefault("differentiable", False)
            group.setdefault("decoupled_weight_decay", False)
            group.setdefault("fused", None)

    def _init_group(self, group, params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs,
                    state_steps):
        has_complex = False
        for p in group["params"]:
            if p.grad is None:
                continue
            has_complex |= is_complex(p)
            params.append(p)
            if p.grad.is_sparse:
                raise RuntimeError("Adam does not support sparse gradients, please consider "
                                   "SparseAdam instead")
            grads.append(p.grad)
            state = self.state[p]
            if len(state) == 0:
                if group["fused"]:
                    _device_dtype_check_for_fused(p)
                    # the fused op reads its step counts where the params live, as float32
                    state["step"] = tensor(0.0, dtype=float32, device=p.device)
                else:
                    state["step"] = _step_tensor(0.0, group, p)
                state["exp_avg"] = zeros_like(p)
                state["exp_avg_sq"] = zeros_like(p)
                if group["amsgrad"]:
                    state["max_exp_avg_sq"] = zeros_like(p)
            exp_avgs.append(state["exp_avg"])
            exp_avg_sqs.append(state["exp_avg_sq"])
            if group["amsgrad"]:
                max_exp_avg_sqs.append(state["max_exp_avg_sq"])
            if group["foreach"] and isinstance(group["lr"], Tensor) and not group["capturable"]:
                raise RuntimeError("lr as a Tensor is not supported for capturable=False and "
                                   "foreach=True")
            state_steps.append(state["step"])
        return has_complex

    @_use_grad
    def step(self, closure=None):
        loss = _closure_loss(closure)
        for group in self.param_groups:
            params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps = (
                [], [], [], [], [], [])
            beta1, beta2 = group["betas"]
            has_complex = self._init_group(group, params, grads, exp_avgs, exp_avg_sqs,
                                           max_exp_avg_sqs, state_steps)
            adam(params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps,
                 amsgrad=group["amsgrad"], has_complex=has_complex, beta1=beta1, beta2=beta2,
                 lr=group["lr"], weight_decay=group["weight_decay"], eps=group["eps"],
                 maximize=group["maximize"], foreach=group["foreach"],
                 capturable=group["capturable"], differentiable=group["differentiable"],
                 fused=group["fused"], grad_scale=getattr(self, "grad_scale", None),
                 found_inf=getattr(self, "found_inf", None),
                 decoupled_weight_decay=group["decoupled_weight_decay"])
        return loss


def _single_tensor_adam(params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps,
                        grad_scale, found_inf, *, amsgrad, has_complex, beta1, beta2, lr,
                        weight_decay, eps, maximize, capturable, differentiable,
                        decoupled_weight_decay):
    if grad_scale is not None or found_inf is not None:
        raise AssertionError("Expected grad_scale and found_inf to be None")
    lr = _get_value(lr)
    for i, param in enumerate(params):
        grad = -grads[i] if maximize else grads[i]
        exp_avg, exp_avg_sq, step_t = exp_avgs[i], exp_avg_sqs[i], state_steps[i]
        if capturable:
            _check_capturable([(param, step_t)], _CAPTURABLE_MESSAGE)
        step_t += 1
        if weight_decay != 0:
            if decoupled_weight_decay:
                param.mul_(1 - lr * weight_decay)
            else:
                grad = grad.add(param, alpha=weight_decay)
        max_sq = max_exp_avg_sqs[i] if amsgrad else None
        if is_complex(param):  # real and imaginary parts are two independent reals
            grad, exp_avg, exp_avg_sq = (view_as_real(grad), view_as_real(exp_avg),
                                         view_as_real(exp_avg_sq))
            max_sq = view_as_real(max_sq) if amsgrad else None
            param = view_as_real(param)
        exp_avg.lerp_(grad, 1 - beta1)
        exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
        if amsgrad:
            max_sq.copy_(maximum(max_sq, exp_avg_sq))
            sq = max_sq
        else:
            sq = exp_avg_sq
        if capturable:
            # the step count and the bias corrections stay tensors on the device, which a CUDA
            # graph replaying the step reads anew
            step_size_neg = (lr / (1 - beta1 ** step_t)).neg()
            bias_correction2_sqrt = (1 - beta2 ** step_t).sqrt()
            denom = (sq.sqrt() / (bias_correction2_sqrt * step_size_neg)).add_(
                eps / step_size_neg)
            param.addcdiv_(exp_avg, denom)
        else:
            step = step_t.item()
            step_size = lr / (1 - beta1 ** step)
            bias_correction2_sqrt = (1 - beta2 ** step) ** 0.5
            denom = (sq.sqrt() / bias_correction2_sqrt).add_(eps)
            param.addcdiv_(exp_avg, denom, value=-step_size)


def _multi_tensor_adam(params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps,
                       grad_scale, found_inf, *, amsgrad, has_complex, beta1, beta2, lr,
                       weight_decay, eps, maximize, capturable, differentiable,
                       decoupled_weight_decay):
    if len(params) == 0:
        return
    if isinstance(lr, Tensor) and not capturable:
        raise RuntimeError("lr as a Tensor is not supported for capturable=False and "
                           "foreach=True")
    if capturable:
        _check_capturable(zip(params, state_steps), _CAPTURABLE_MESSAGE, supports_xla=False)
    if grad_scale is not None or found_inf is not None:
        raise AssertionError("Expected grad_scale and found_inf to be None")
    if differentiable:
        raise AssertionError("_foreach ops don't support autograd")
    lr = _get_value(lr)
    grouped = _group_tensors_by_device_and_dtype(
        [params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs or [None] * len(params),
         state_steps])
    for (device_params, device_grads, device_exp_avgs, device_exp_avg_sqs,
         device_max_exp_avg_sqs, device_steps), _ in grouped.values():
        if has_complex:
            _view_as_real(device_params, device_grads, device_exp_avgs, device_exp_avg_sqs,
                          *([device_max_exp_avg_sqs] if amsgrad else []))
        if maximize:
            device_grads = _foreach_neg(device_grads)
        _foreach_add_(device_steps, 1)
        if weight_decay != 0:
            if decoupled_weight_decay:
                _foreach_mul_(device_params, 1 - lr * weight_decay)
            elif maximize:  # device_grads is already a fresh list: update it in place
                _foreach_add_(device_grads, device_params, alpha=weight_decay)
            else:
                device_grads = _foreach_add(device_grads, device_params, alpha=weight_decay)
        _foreach_lerp_(device_exp_avgs, device_grads, 1 - beta1)
        _foreach_mul_(device_exp_avg_sqs, beta2)
        _foreach_addcmul_(device_exp_avg_sqs, device_grads, device_grads, 1 - beta2)
        if amsgrad:
            _foreach_maximum_(device_max_exp_avg_sqs, device_exp_avg_sqs)
            denom = _foreach_sqrt(device_max_exp_avg_sqs)
        else:
            denom = _foreach_sqrt(device_exp_avg_sqs)
        if capturable:
            # PyTorch's capturable form: step_size = -lr / (1 - beta1^t) and
            # sqrt(1 - beta2^t) computed on the device from the step tensors
            step_size = _foreach_pow(beta1, device_steps)
            _foreach_sub_(step_size, 1)
            bias_correction2_sqrt = _foreach_pow(beta2, device_steps)
            _foreach_sub_(bias_correction2_sqrt, 1)
            _foreach_neg_(bias_correction2_sqrt)
            _foreach_div_(step_size, lr)
            _foreach_reciprocal_(step_size)
            _foreach_sqrt_(bias_correction2_sqrt)
            _foreach_div_(denom, bias_correction2_sqrt)
            _foreach_add_(denom, eps)
            _foreach_div_(denom, step_size)
            _foreach_addcdiv_(device_params, device_exp_avgs, denom)
        else:
            step_values = [s.item() for s in device_steps]
            step_size = [(lr / (1 - beta1 ** t)) * -1 for t in step_values]
            bias_correction2_sqrt = [(1 - beta2 ** t) ** 0.5 for t in step_values]
            _foreach_div_(denom, bias_correction2_sqrt)
            _foreach_add_(denom, eps)
            _foreach_addcdiv_(device_params, device_exp_avgs, denom, step_size)


def _fused_adam(params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps,
                grad_scale, found_inf, *, amsgrad, has_complex, beta1, beta2, lr, weight_decay,
                eps, maximize, capturable, differentiable, decoupled_weight_decay):
    """One ``_fused_adam_``/``_fused_adamw_`` call per device and dtype. Under a GradScaler
    (``grad_scale``/``found_inf`` set by ``GradScaler.step``) the op unscales the gradients
    itself and changes nothing when an inf was found; the step counts are taken back then."""
    if not params:
        return
    if differentiable:
        raise RuntimeError("Adam with fused=True does not support differentiable=True")
    lr = _get_value(lr)
    op = _fused_adamw_ if decoupled_weight_decay else _fused_adam_
    grouped = _group_tensors_by_device_and_dtype(
        [params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs or [None] * len(params),
         state_steps])
    for (device, _), ((device_params, device_grads, device_exp_avgs, device_exp_avg_sqs,
                       device_max_exp_avg_sqs, device_steps), _) in grouped.items():
        device_scale = grad_scale.to(device) if grad_scale is not None else None
        device_inf = found_inf.to(device) if found_inf is not None else None
        _foreach_add_(device_steps, 1)
        op(device_params, device_grads, device_exp_avgs, device_exp_avg_sqs,
           device_max_exp_avg_sqs if amsgrad else [], device_steps, amsgrad=amsgrad, lr=lr,
           beta1=beta1, beta2=beta2, weight_decay=weight_decay, eps=eps, maximize=maximize,
           grad_scale=device_scale, found_inf=device_inf)
        if device_inf is not None:
            _foreach_add_(device_steps, [device_inf] * len(device_steps), alpha=-1)


def adam(params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps, foreach=None,
         capturable=False, differentiable=False, fused=None, grad_scale=None, found_inf=None,
         has_complex=False, decoupled_weight_decay=False, *, amsgrad, beta1, beta2, lr,
         weight_decay, eps, maximize):
    """The Adam update of ``params`` and their moments in place (see :class:`Adam`)."""
    if fused is None and foreach is None:
        foreach = _default_foreach_dense(params, grads, differentiable)
        # as PyTorch: not for the unsupported case of a Tensor lr without capturable
        if foreach and isinstance(lr, Tensor) and not capturable:
            foreach = False
    _check_state_steps(state_steps)
    if fused:
        func = _fused_adam
    elif foreach:
        func = _multi_tensor_adam
    else:
        func = _single_tensor_adam
    func(params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps, grad_scale,
         found_inf, amsgrad=amsgrad, has_complex=has_complex, beta1=beta1, beta2=beta2, lr=lr,
         weight_decay=weight_decay, eps=eps, maximize=maximize, capturable=capturable,
         differentiable=differentiable, decoupled_weight_decay=decoupled_weight_decay)
