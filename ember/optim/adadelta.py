"""``Adadelta`` (PyTorch's ``torch.optim.adadelta``), and ``adadelta``, its functional form.

The per-tensor loop writes PyTorch's ``addcmul_`` with ``mul_``/``add_`` (the same arithmetic,
rounded once more); the multi-tensor ("foreach") path is PyTorch's op for op. ``foreach=None``
picks the path PyTorch would (the multi-tensor one on CUDA, the loop on the CPU).
"""
from .. import (_foreach_add, _foreach_add_, _foreach_addcmul_, _foreach_div_, _foreach_mul_,
                _foreach_neg, _foreach_sqrt_, is_complex, view_as_real)
from .optimizer import (Optimizer, _check_capturable, _check_state_steps, _closure_loss,
                        _default_to_foreach, _get_value, _group_tensors_by_device_and_dtype,
                        _fill_group, _use_grad, _validate, _view_as_real)

__all__ = ["Adadelta", "adadelta"]

_CAPTURABLE_MESSAGE = "If capturable=True, params and state_steps must be on supported devices"


class Adadelta(Optimizer):
    def __init__(self, params, lr=1.0, rho=0.9, eps=1e-6, weight_decay=0, foreach=None, *,
                 capturable=False, maximize=False, differentiable=False):
        _validate(lr=lr, rho=rho, eps=eps, weight_decay=weight_decay)
        defaults = dict(lr=lr, rho=rho, eps=eps, weight_decay=weight_decay, maximize=maximize,
                        capturable=capturable, foreach=foreach, differentiable=differentiable)
        super().__init__(params, defaults)

    def __setstate__(self, state):
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("foreach", None)
            group.setdefault("maximize", False)
            group.setdefault("differentiable", False)
            group.setdefault("capturable", False)

    def _init_group(self, group, params, grads, square_avgs, acc_deltas, state_steps):
        return _fill_group(self, "Adadelta", group, params, grads, state_steps,
                           {"square_avg": square_avgs, "acc_delta": acc_deltas})

    @_use_grad
    def step(self, closure=None):
        loss = _closure_loss(closure)
        for group in self.param_groups:
            params, grads, square_avgs, acc_deltas, state_steps = [], [], [], [], []
            has_complex = self._init_group(group, params, grads, square_avgs, acc_deltas,
                                           state_steps)
            adadelta(params, grads, square_avgs, acc_deltas, state_steps, lr=group["lr"],
                     rho=group["rho"], eps=group["eps"], weight_decay=group["weight_decay"],
                     foreach=group["foreach"], maximize=group["maximize"],
                     differentiable=group["differentiable"], capturable=group["capturable"],
                     has_complex=has_complex)
        return loss


def _single_tensor_adadelta(params, grads, square_avgs, acc_deltas, state_steps, *, lr, rho,
                            eps, weight_decay, maximize, differentiable, capturable,
                            has_complex):
    if capturable:
        _check_capturable(zip(params, state_steps), _CAPTURABLE_MESSAGE, supports_xla=False)
    lr = _get_value(lr)
    for param, grad, square_avg, acc_delta, step_t in zip(params, grads, square_avgs,
                                                          acc_deltas, state_steps):
        step_t += 1
        grad = -grad if maximize else grad
        if weight_decay != 0:
            grad = grad.add(param, alpha=weight_decay)
        if is_complex(param):
            square_avg, acc_delta = view_as_real(square_avg), view_as_real(acc_delta)
            param, grad = view_as_real(param), view_as_real(grad)
        square_avg.mul_(rho).add_(grad * grad, alpha=1 - rho)
        std = square_avg.add(eps).sqrt_()
        delta = acc_delta.add(eps).sqrt_()
        delta.div_(std).mul_(grad)
        acc_delta.mul_(rho).add_(delta * delta, alpha=1 - rho)
        param.add_(delta, alpha=-lr)


def _multi_tensor_adadelta(params, grads, square_avgs, acc_deltas, state_steps, *, lr, rho,
                           eps, weight_decay, maximize, differentiable, capturable,
                           has_complex):
    if differentiable:
        raise AssertionError("_foreach ops don't support autograd")
    if capturable:
        _check_capturable(zip(params, state_steps), _CAPTURABLE_MESSAGE, supports_xla=False)
    if len(params) == 0:
        return
    lr = _get_value(lr)
    grouped = _group_tensors_by_device_and_dtype([params, grads, square_avgs, acc_deltas,
                                                  state_steps])
    for (g_params, g_grads, g_square_avgs, g_acc_deltas, g_steps), _ in grouped.values():
        if has_complex:
            _view_as_real(g_params, g_grads, g_square_avgs, g_acc_deltas)
        _foreach_add_(g_steps, 1)
        if maximize:
            g_grads = _foreach_neg(g_grads)
        if weight_decay != 0:
            if maximize:  # g_grads is already a fresh list: update it in place
                _foreach_add_(g_grads, g_params, alpha=weight_decay)
            else:
                g_grads = _foreach_add(g_grads, g_params, alpha=weight_decay)
        _foreach_mul_(g_square_avgs, rho)
        _foreach_addcmul_(g_square_avgs, g_grads, g_grads, value=1 - rho)
        std = _foreach_add(g_square_avgs, eps)
        _foreach_sqrt_(std)
        deltas = _foreach_add(g_acc_deltas, eps)
        _foreach_sqrt_(deltas)
        _foreach_div_(deltas, std)
        _foreach_mul_(deltas, g_grads)
        _foreach_mul_(g_acc_deltas, rho)
        _foreach_addcmul_(g_acc_deltas, deltas, deltas, value=1 - rho)
        _foreach_add_(g_params, deltas, alpha=-lr)


def adadelta(params, grads, square_avgs, acc_deltas, state_steps, capturable=False,
             foreach=None, differentiable=False, has_complex=False, *, lr, rho, eps,
             weight_decay, maximize):
    """The Adadelta update of ``params`` and their averages in place (see :class:`Adadelta`)."""
    _check_state_steps(state_steps)
    if foreach is None:
        foreach = _default_to_foreach(params, differentiable)
    func = _multi_tensor_adadelta if foreach else _single_tensor_adadelta
    func(params, grads, square_avgs, acc_deltas, state_steps, lr=lr, rho=rho, eps=eps,
         weight_decay=weight_decay, maximize=maximize, differentiable=differentiable,
         capturable=capturable, has_complex=has_complex)
