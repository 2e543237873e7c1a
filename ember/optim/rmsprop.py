"""``RMSprop`` (PyTorch's ``torch.optim.rmsprop``), optionally centered and with momentum, and
``rmsprop``, its functional form.

The per-tensor loop writes PyTorch's ``addcmul_``/``addcdiv_`` with ``mul_``/``add_``/``div``
(the same arithmetic, rounded once more); the multi-tensor ("foreach") path is PyTorch's op for
op. ``foreach=None`` picks the path PyTorch would (the multi-tensor one on CUDA, the loop on the
CPU).
"""
from .. import (_foreach_add, _foreach_add_, _foreach_addcdiv_, _foreach_addcmul, _foreach_addcmul_,
                _foreach_lerp_, _foreach_mul_, _foreach_neg, _foreach_sqrt, _foreach_sqrt_,
                is_complex, view_as_real)
from .optimizer import (Optimizer, _check_capturable, _check_state_steps, _closure_loss,
                        _default_to_foreach, _get_value, _group_tensors_by_device_and_dtype,
                        _fill_group, _use_grad, _validate, _view_as_real)

__all__ = ["RMSprop", "rmsprop"]

_CAPTURABLE_MESSAGE = "If capturable=True, params and state_steps must be on supported devices"


class RMSprop(Optimizer):
    def __init__(self, params, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0, momentum=0,
                 centered=False, capturable=False, foreach=None, maximize=False,
                 differentiable=False):
        _validate(lr=lr, eps=eps, momentum=momentum, weight_decay=weight_decay, alpha=alpha)
        defaults = dict(lr=lr, momentum=momentum, alpha=alpha, eps=eps, centered=centered,
                        weight_decay=weight_decay, capturable=capturable, foreach=foreach,
                        maximize=maximize, differentiable=differentiable)
        super().__init__(params, defaults)

    def __setstate__(self, state):
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("momentum", 0)
            group.setdefault("centered", False)
            group.setdefault("foreach", None)
            group.setdefault("maximize", False)
            group.setdefault("differentiable", False)
            group.setdefault("capturable", False)

    def _init_group(self, group, params, grads, square_avgs, momentum_buffer_list, grad_avgs,
                    state_steps):
        buffers = {"square_avg": square_avgs}
        if group["momentum"] > 0:
            buffers["momentum_buffer"] = momentum_buffer_list
        if group["centered"]:
            buffers["grad_avg"] = grad_avgs
        return _fill_group(self, "RMSprop", group, params, grads, state_steps, buffers)

    @_use_grad
    def step(self, closure=None):
        loss = _closure_loss(closure)
        for group in self.param_groups:
            params, grads, square_avgs, grad_avgs, momentum_buffer_list, state_steps = (
                [], [], [], [], [], [])
            has_complex = self._init_group(group, params, grads, square_avgs,
                                           momentum_buffer_list, grad_avgs, state_steps)
            rmsprop(params, grads, square_avgs, grad_avgs, momentum_buffer_list, state_steps,
                    lr=group["lr"], alpha=group["alpha"], eps=group["eps"],
                    weight_decay=group["weight_decay"], momentum=group["momentum"],
                    centered=group["centered"], foreach=group["foreach"],
                    maximize=group["maximize"], differentiable=group["differentiable"],
                    capturable=group["capturable"], has_complex=has_complex)
        return loss


def _single_tensor_rmsprop(params, grads, square_avgs, grad_avgs, momentum_buffer_list,
                           state_steps, *, lr, alpha, eps, weight_decay, momentum, centered,
                           maximize, differentiable, capturable, has_complex):
    lr = _get_value(lr)
    for i, param in enumerate(params):
        step_t = state_steps[i]
        if capturable:
            _check_capturable([(param, step_t)], _CAPTURABLE_MESSAGE)
        grad = -grads[i] if maximize else grads[i]
        square_avg = square_avgs[i]
        step_t += 1
        if weight_decay != 0:
            grad = grad.add(param, alpha=weight_decay)
        complex_param = is_complex(param)
        if complex_param:
            param, grad, square_avg = (view_as_real(param), view_as_real(grad),
                                       view_as_real(square_avg))
        square_avg.mul_(alpha).add_(grad * grad, alpha=1 - alpha)
        if centered:
            grad_avg = view_as_real(grad_avgs[i]) if complex_param else grad_avgs[i]
            grad_avg.mul_(alpha).add_(grad, alpha=1 - alpha)
            avg = square_avg.sub(grad_avg * grad_avg).sqrt_()
        else:
            avg = square_avg.sqrt()
        avg = avg.add_(eps)
        if momentum > 0:
            buf = momentum_buffer_list[i]
            buf = view_as_real(buf) if complex_param else buf
            buf.mul_(momentum).add_(grad / avg)
            param.add_(buf, alpha=-lr)
        else:
            param.add_(grad / avg, alpha=-lr)


def _multi_tensor_rmsprop(params, grads, square_avgs, grad_avgs, momentum_buffer_list,
                          state_steps, *, lr, alpha, eps, weight_decay, momentum, centered,
                          maximize, differentiable, capturable, has_complex):
    if len(params) == 0:
        return
    if differentiable:
        raise AssertionError("_foreach ops don't support autograd")
    if capturable:
        _check_capturable(zip(params, state_steps), _CAPTURABLE_MESSAGE)
    lr = _get_value(lr)
    n = len(params)
    grouped = _group_tensors_by_device_and_dtype(
        [params, grads, square_avgs, grad_avgs or [None] * n,
         momentum_buffer_list or [None] * n, state_steps])
    for (g_params, g_grads, g_square_avgs, g_grad_avgs, g_bufs, g_steps), _ in \
            grouped.values():
        if has_complex:
            state_and_grads = [g_grads, g_square_avgs]
            if momentum > 0:
                state_and_grads.append(g_bufs)
            if centered:
                state_and_grads.append(g_grad_avgs)
            _view_as_real(g_params, *state_and_grads)
        if maximize:
            g_grads = _foreach_neg(g_grads)
        _foreach_add_(g_steps, 1)
        if weight_decay != 0:
            if maximize:  # g_grads is already a fresh list: update it in place
                _foreach_add_(g_grads, g_params, alpha=weight_decay)
            else:
                g_grads = _foreach_add(g_grads, g_params, alpha=weight_decay)
        _foreach_mul_(g_square_avgs, alpha)
        _foreach_addcmul_(g_square_avgs, g_grads, g_grads, value=1 - alpha)
        if centered:
            _foreach_lerp_(g_grad_avgs, g_grads, 1 - alpha)
            avg = _foreach_addcmul(g_square_avgs, g_grad_avgs, g_grad_avgs, value=-1)
            _foreach_sqrt_(avg)
        else:
            avg = _foreach_sqrt(g_square_avgs)
        _foreach_add_(avg, eps)
        if momentum > 0:
            _foreach_mul_(g_bufs, momentum)
            _foreach_addcdiv_(g_bufs, g_grads, avg)
            _foreach_add_(g_params, g_bufs, alpha=-lr)
        else:
            _foreach_addcdiv_(g_params, g_grads, avg, value=-lr)


def rmsprop(params, grads, square_avgs, grad_avgs, momentum_buffer_list, state_steps,
            foreach=None, maximize=False, differentiable=False, capturable=False,
            has_complex=False, *, lr, alpha, eps, weight_decay, momentum, centered):
    """The RMSprop update of ``params`` and their averages in place (see :class:`RMSprop`)."""
    _check_state_steps(state_steps)
    if foreach is None:
        foreach = _default_to_foreach(params, differentiable)
    func = _multi_tensor_rmsprop if foreach else _single_tensor_rmsprop
    func(params, grads, square_avgs, grad_avgs, momentum_buffer_list, state_steps, lr=lr,
         alpha=alpha, eps=eps, weight_decay=weight_decay, momentum=momentum, centered=centered,
         maximize=maximize, capturable=capturable, differentiable=differentiable,
         has_complex=has_complex)
