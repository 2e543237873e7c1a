"""``RAdam``: Adam with a rectified adaptive learning rate (PyTorch's ``torch.optim.radam``),
and ``radam``, its functional form.

The first steps, while the variance of the adaptive rate is intractable (``rho_t <= 5``), are
SGD with momentum. The per-tensor loop writes PyTorch's ``lerp_``/``addcmul_`` with ``mul_``/
``add_`` (the same arithmetic, rounded once more); the multi-tensor ("foreach") path is
PyTorch's op for op. ``foreach=None`` picks the path PyTorch would (the multi-tensor one on CUDA,
the loop on the CPU).
"""
from .. import (_foreach_add, _foreach_add_, _foreach_addcmul_, _foreach_div_, _foreach_lerp_,
                _foreach_mul, _foreach_mul_, _foreach_neg, _foreach_neg_, _foreach_pow,
                _foreach_reciprocal_, _foreach_sqrt, _foreach_sqrt_, _foreach_sub, is_complex,
                view_as_real, where)
from .optimizer import (Optimizer, _check_capturable, _check_state_steps, _closure_loss,
                        _default_to_foreach, _get_value, _group_tensors_by_device_and_dtype,
                        _fill_group, _use_grad, _validate, _view_as_real)

__all__ = ["RAdam", "radam"]

_CAPTURABLE_MESSAGE = "If capturable=True, params and state_steps must be on supported devices"


class RAdam(Optimizer):
    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 decoupled_weight_decay=False, *, foreach=None, maximize=False,
                 capturable=False, differentiable=False):
        _validate(lr=lr, eps=eps, betas=betas, weight_decay=weight_decay)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                        maximize=maximize, foreach=foreach, capturable=capturable,
                        decoupled_weight_decay=decoupled_weight_decay,
                        differentiable=differentiable)
        super().__init__(params, defaults)

    def __setstate__(self, state):
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("foreach", None)
            group.setdefault("maximize", False)
            group.setdefault("differentiable", False)
            group.setdefault("decoupled_weight_decay", False)
            group.setdefault("capturable", False)

    def _init_group(self, group, params, grads, exp_avgs, exp_avg_sqs, state_steps):
        return _fill_group(self, "RAdam", group, params, grads, state_steps,
                           {"exp_avg": exp_avgs, "exp_avg_sq": exp_avg_sqs})

    @_use_grad
    def step(self, closure=None):
        loss = _closure_loss(closure)
        for group in self.param_groups:
            params, grads, exp_avgs, exp_avg_sqs, state_steps = [], [], [], [], []
            beta1, beta2 = group["betas"]
            has_complex = self._init_group(group, params, grads, exp_avgs, exp_avg_sqs,
                                           state_steps)
            radam(params, grads, exp_avgs, exp_avg_sqs, state_steps, beta1=beta1, beta2=beta2,
                  lr=group["lr"], weight_decay=group["weight_decay"], eps=group["eps"],
                  maximize=group["maximize"], foreach=group["foreach"],
                  capturable=group["capturable"], differentiable=group["differentiable"],
                  decoupled_weight_decay=group["decoupled_weight_decay"],
                  has_complex=has_complex)
        return loss


def _single_tensor_radam(params, grads, exp_avgs, exp_avg_sqs, state_steps, *, beta1, beta2,
                         lr, weight_decay, eps, decoupled_weight_decay, differentiable,
                         maximize, capturable, has_complex):
    lr = _get_value(lr)
    for i, param in enumerate(params):
        grad = -grads[i] if maximize else grads[i]
        exp_avg, exp_avg_sq, step_t = exp_avgs[i], exp_avg_sqs[i], state_steps[i]
        if capturable:
            _check_capturable([(param, step_t)], _CAPTURABLE_MESSAGE)
        if is_complex(param):
            param, grad = view_as_real(param), view_as_real(grad)
            exp_avg, exp_avg_sq = view_as_real(exp_avg), view_as_real(exp_avg_sq)
        step_t += 1
        step = step_t if capturable else step_t.item()
        if weight_decay != 0:
            if decoupled_weight_decay:
                param.mul_(1 - lr * weight_decay)
            else:
                grad = grad.add(param, alpha=weight_decay)
        exp_avg.mul_(beta1).add_(grad, alpha=1 - beta1)
        exp_avg_sq.mul_(beta2).add_(grad * grad, alpha=1 - beta2)
        bias_correction1 = 1 - beta1 ** step
        bias_correction2 = 1 - beta2 ** step
        bias_corrected_exp_avg = exp_avg / bias_correction1
        # Rectify the adaptive learning rate once its variance is tractable (rho_t > 5).
        rho_inf = 2 / (1 - beta2) - 1
        rho_t = rho_inf - 2 * step * (beta2 ** step) / bias_correction2
        if capturable:  # PyTorch's form: both branches, chosen on the device
            rect = ((rho_t - 4) * (rho_t - 2) * rho_inf
                    / ((rho_inf - 4) * (rho_inf - 2) * rho_t)) ** 0.5
            adaptive_lr = (bias_correction2 ** 0.5) / exp_avg_sq.sqrt().add_(eps)
            update = where(rho_t > 5.0, rect * adaptive_lr, 1.0)
            param.add_(bias_corrected_exp_avg * lr * update, alpha=-1.0)
        elif rho_t > 5.0:
            rect = ((rho_t - 4) * (rho_t - 2) * rho_inf
                    / ((rho_inf - 4) * (rho_inf - 2) * rho_t)) ** 0.5
            adaptive_lr = (bias_correction2 ** 0.5) / exp_avg_sq.sqrt().add_(eps)
            param.add_(bias_corrected_exp_avg * lr * adaptive_lr * rect, alpha=-1.0)
        else:
            param.add_(bias_corrected_exp_avg * lr, alpha=-1.0)


def _multi_tensor_radam(params, grads, exp_avgs, exp_avg_sqs, state_steps, *, beta1, beta2,
                        lr, weight_decay, eps, decoupled_weight_decay, differentiable, maximize,
                        capturable, has_complex):
    if len(params) == 0:
        return
    if differentiable:
        raise AssertionError("_foreach ops don't support autograd")
    if capturable:
        _check_capturable(zip(params, state_steps), _CAPTURABLE_MESSAGE, supports_xla=False)
    lr = _get_value(lr)
    grouped = _group_tensors_by_device_and_dtype([params, grads, exp_avgs, exp_avg_sqs,
                                                  state_steps])
    for (g_params, g_grads, g_exp_avgs, g_exp_avg_sqs, g_steps), _ in grouped.values():
        _foreach_add_(g_steps, 1)
        if has_complex:
            _view_as_real(g_params, g_grads, g_exp_avgs, g_exp_avg_sqs)
        if maximize:
            g_grads = _foreach_neg(g_grads)
        rho_inf = 2 / (1 - beta2) - 1
        if capturable:
            # rho_t = rho_inf - 2 * t * beta2^t / (1 - beta2^t), on the device
            bias_correction1 = _foreach_pow(beta2, g_steps)
            _foreach_neg_(bias_correction1)
            _foreach_add_(bias_correction1, 1)
            rho_t_list = _foreach_pow(beta2, g_steps)
            _foreach_mul_(rho_t_list, g_steps)
            _foreach_mul_(rho_t_list, 2)
            _foreach_div_(rho_t_list, bias_correction1)
            _foreach_neg_(rho_t_list)
            _foreach_add_(rho_t_list, rho_inf)
        else:
            rho_t_list = [rho_inf - 2 * _get_value(step) * (beta2 ** _get_value(step))
                          / (1 - beta2 ** _get_value(step)) for step in g_steps]
        if weight_decay != 0:
            if decoupled_weight_decay:
                _foreach_mul_(g_params, 1 - lr * weight_decay)
            elif maximize:  # g_grads is already a fresh list: update it in place
                _foreach_add_(g_grads, g_params, alpha=weight_decay)
            else:
                g_grads = _foreach_add(g_grads, g_params, alpha=weight_decay)
        _foreach_lerp_(g_exp_avgs, g_grads, 1 - beta1)
        _foreach_mul_(g_exp_avg_sqs, beta2)
        _foreach_addcmul_(g_exp_avg_sqs, g_grads, g_grads, 1 - beta2)
        if capturable:
            num = _foreach_sub(rho_t_list, 4)
            _foreach_mul_(num, _foreach_sub(rho_t_list, 2))
            _foreach_mul_(num, rho_inf)
            denom = _foreach_mul(rho_t_list, (rho_inf - 4) * (rho_inf - 2))
            _foreach_div_(num, denom)
            _foreach_sqrt_(num)
            rect = [where(rho_t > 5.0, n, 0.0) for n, rho_t in zip(num, rho_t_list)]
            # the unrectified step: -lr / (1 - beta1^t) where rect is 0, else 0
            unrect_step_size = [where(r > 0, 0.0, 1.0) for r in rect]
            _foreach_mul_(unrect_step_size, lr)
            bias_correction1 = _foreach_pow(beta1, g_steps)
            _foreach_neg_(bias_correction1)
            _foreach_add_(bias_correction1, 1)
            _foreach_div_(unrect_step_size, bias_correction1)
            _foreach_neg_(unrect_step_size)
            # the rectified one: -lr * rect * sqrt(1 - beta2^t) / (1 - beta1^t)
            bias_correction2 = _foreach_pow(beta2, g_steps)
            _foreach_neg_(bias_correction2)
            _foreach_add_(bias_correction2, 1)
            _foreach_sqrt_(bias_correction2)
            _foreach_mul_(bias_correction2, lr)
            _foreach_mul_(bias_correction2, rect)
            _foreach_neg_(bias_correction2)
            _foreach_div_(bias_correction2, bias_correction1)
        else:
            rect = [((rho_t - 4) * (rho_t - 2) * rho_inf
                     / ((rho_inf - 4) * (rho_inf - 2) * rho_t)) ** 0.5 if rho_t > 5 else 0
                    for rho_t in rho_t_list]
            unrectified = [0 if r > 0 else 1.0 for r in rect]
            bias_correction1 = [1 - beta1 ** _get_value(step) for step in g_steps]
            unrect_step_size = [(lr * r / bc) * -1 for r, bc in zip(unrectified,
                                                                     bias_correction1)]
            bias_correction2 = [((1 - beta2 ** _get_value(step)) ** 0.5) * (lr * r / bc) * -1
                                for step, r, bc in zip(g_steps, rect, bias_correction1)]
        buffer = _foreach_sqrt(g_exp_avg_sqs)
        _foreach_add_(buffer, eps)
        _foreach_div_(buffer, bias_correction2)
        _foreach_reciprocal_(buffer)
        _foreach_add_(buffer, unrect_step_size)
        # param += exp_avg * (rectified step / (sqrt(v) + eps) + unrectified step)
        _foreach_addcmul_(g_params, g_exp_avgs, buffer)


def radam(params, grads, exp_avgs, exp_avg_sqs, state_steps, decoupled_weight_decay=False,
          foreach=None, differentiable=False, capturable=False, has_complex=False,
          maximize=False, *, beta1, beta2, lr, weight_decay, eps):
    """The RAdam update of ``params`` and their moments in place (see :class:`RAdam`)."""
    _check_state_steps(state_steps)
    if foreach is None:
        foreach = _default_to_foreach(params, differentiable)
    func = _multi_tensor_radam if foreach else _single_tensor_radam
    func(params, grads, exp_avgs, exp_avg_sqs, state_steps, beta1=beta1, beta2=beta2, lr=lr,
         weight_decay=weight_decay, eps=eps, maximize=maximize,
         decoupled_weight_decay=decoupled_weight_decay, differentiable=differentiable,
         capturable=capturable, has_complex=has_complex)
