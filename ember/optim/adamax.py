"""``Adamax``: Adam with the infinity norm in place of the second moment (PyTorch's
``torch.optim.adamax``), and ``adamax``, its functional form.

The per-tensor loop writes PyTorch's ``lerp_`` as ``mul_``/``add_`` (the same arithmetic,
rounded once more); the multi-tensor ("foreach") path is PyTorch's op for op. ``foreach=None``
picks the path PyTorch would (the multi-tensor one on CUDA, the loop on the CPU).
"""
from .. import (_foreach_abs, _foreach_abs_, _foreach_add, _foreach_add_, _foreach_addcdiv_,
                _foreach_div_, _foreach_lerp_, _foreach_maximum_, _foreach_mul, _foreach_mul_,
                _foreach_neg, _foreach_pow, _foreach_sub_, is_complex, maximum, view_as_real)
from .optimizer import (Optimizer, _check_capturable, _check_state_steps, _closure_loss,
                        _default_to_foreach, _get_value, _group_tensors_by_device_and_dtype,
                        _fill_group, _use_grad, _validate, _view_as_real)

__all__ = ["Adamax", "adamax"]

_CAPTURABLE_MESSAGE = "If capturable=True, params and state_steps must be on supported devices"


class Adamax(Optimizer):
    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 foreach=None, *, maximize=False, differentiable=False, capturable=False):
        _validate(lr=lr, eps=eps, betas=betas, weight_decay=weight_decay)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, foreach=foreach,
                        maximize=maximize, differentiable=differentiable, capturable=capturable)
        super().__init__(params, defaults)

    def __setstate__(self, state):
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("foreach", None)
            group.setdefault("maximize", False)
            group.setdefault("differentiable", False)
            group.setdefault("capturable", False)

    def _init_group(self, group, params, grads, exp_avgs, exp_infs, state_steps):
        return _fill_group(self, "Adamax", group, params, grads, state_steps,
                           {"exp_avg": exp_avgs, "exp_inf": exp_infs})

    @_use_grad
    def step(self, closure=None):
        loss = _closure_loss(closure)
        for group in self.param_groups:
            params, grads, exp_avgs, exp_infs, state_steps = [], [], [], [], []
            beta1, beta2 = group["betas"]
            has_complex = self._init_group(group, params, grads, exp_avgs, exp_infs,
                                           state_steps)
            adamax(params, grads, exp_avgs, exp_infs, state_steps, eps=group["eps"],
                   beta1=beta1, beta2=beta2, lr=group["lr"], weight_decay=group["weight_decay"],
                   foreach=group["foreach"], maximize=group["maximize"],
                   differentiable=group["differentiable"], capturable=group["capturable"],
                   has_complex=has_complex)
        return loss


def _single_tensor_adamax(params, grads, exp_avgs, exp_infs, state_steps, *, eps, beta1,
                          beta2, lr, weight_decay, maximize, differentiable, capturable,
                          has_complex):
    lr = _get_value(lr)
    for i, param in enumerate(params):
        grad = -grads[i] if maximize else grads[i]
        exp_avg, exp_inf, step_t = exp_avgs[i], exp_infs[i], state_steps[i]
        if capturable:
            _check_capturable([(param, step_t)], _CAPTURABLE_MESSAGE)
        step_t += 1
        if weight_decay != 0:
            grad = grad.add(param, alpha=weight_decay)
        if is_complex(param):
            param, grad = view_as_real(param), view_as_real(grad)
            exp_avg, exp_inf = view_as_real(exp_avg), view_as_real(exp_inf)
        exp_avg.mul_(beta1).add_(grad, alpha=1 - beta1)
        exp_inf.copy_(maximum(exp_inf.mul_(beta2), grad.abs().add_(eps)))
        if capturable:  # the step stays a tensor on the device
            neg_bias_correction = (beta1 ** step_t - 1).div_(lr)
            param.addcdiv_(exp_avg, exp_inf * neg_bias_correction)
        else:
            clr = lr / (1 - beta1 ** step_t.item())
            param.add_(exp_avg / exp_inf, alpha=-clr)


def _multi_tensor_adamax(params, grads, exp_avgs, exp_infs, state_steps, *, eps, beta1, beta2,
                         lr, weight_decay, maximize, differentiable, capturable, has_complex):
    if differentiable:
        raise AssertionError("_foreach ops don't support autograd")
    if len(params) == 0:
        return
    if capturable:
        _check_capturable(zip(params, state_steps), _CAPTURABLE_MESSAGE, supports_xla=False)
    lr = _get_value(lr)
    grouped = _group_tensors_by_device_and_dtype([params, grads, exp_avgs, exp_infs,
                                                  state_steps])
    for (g_params, g_grads, g_exp_avgs, g_exp_infs, g_steps), _ in grouped.values():
        if has_complex:
            _view_as_real(g_params, g_grads, g_exp_avgs, g_exp_infs)
        if maximize:
            g_grads = _foreach_neg(g_grads)
        _foreach_add_(g_steps, 1)
        if weight_decay != 0:
            if maximize:  # g_grads is already a fresh list: update it in place
                _foreach_add_(g_grads, g_params, alpha=weight_decay)
            else:
                g_grads = _foreach_add(g_grads, g_params, alpha=weight_decay)
        _foreach_lerp_(g_exp_avgs, g_grads, 1 - beta1)
        _foreach_mul_(g_exp_infs, beta2)
        if not maximize and weight_decay == 0:  # g_grads are still the .grad tensors
            g_grads = _foreach_abs(g_grads)
        else:
            _foreach_abs_(g_grads)
        _foreach_add_(g_grads, eps)
        _foreach_maximum_(g_exp_infs, g_grads)
        if capturable:
            bias_corrections = _foreach_pow(beta1, g_steps)
            _foreach_sub_(bias_corrections, 1)
            _foreach_div_(bias_corrections, lr)
            denom = _foreach_mul(g_exp_infs, bias_corrections)
            _foreach_addcdiv_(g_params, g_exp_avgs, denom)
        else:
            step_size = [(lr / (1 - beta1 ** _get_value(step))) * -1 for step in g_steps]
            _foreach_addcdiv_(g_params, g_exp_avgs, g_exp_infs, step_size)


def adamax(params, grads, exp_avgs, exp_infs, state_steps, foreach=None, maximize=False,
           differentiable=False, capturable=False, has_complex=False, *, eps, beta1, beta2, lr,
           weight_decay):
    """The Adamax update of ``params`` and their moments in place (see :class:`Adamax`)."""
    _check_state_steps(state_steps)
    if foreach is None:
        foreach = _default_to_foreach(params, differentiable)
    func = _multi_tensor_adamax if foreach else _single_tensor_adamax
    func(params, grads, exp_avgs, exp_infs, state_steps, eps=eps, beta1=beta1, beta2=beta2,
         lr=lr, weight_decay=weight_decay, maximize=maximize, differentiable=differentiable,
         has_complex=has_complex, capturable=capturable)
