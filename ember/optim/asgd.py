"""``ASGD``: averaged stochastic gradient descent (PyTorch's ``torch.optim.asgd``), and
``asgd``, its functional form.

SGD with a decaying step ``eta = lr / (1 + lambd * lr * step) ** alpha`` and a decay of the
parameter by ``lambd * eta``, plus a running average ``ax`` of the iterates that starts averaging
(``mu = 1 / (step - t0)``) after ``t0`` steps. State per parameter: ``step``, ``eta`` and ``mu``
(scalar tensors on the parameter's device) and ``ax``.

The per-tensor loop and the multi-tensor ("foreach") path round differently (the foreach path
folds the decay into one ``addcmul`` and always averages with ``mu``), as in PyTorch, so each
follows its PyTorch counterpart; ``foreach=None`` picks the path PyTorch would.
"""
from .. import (Tensor, _foreach_add, _foreach_add_, _foreach_addcmul_, _foreach_copy_,
                _foreach_maximum_, _foreach_mul, _foreach_mul_, _foreach_neg, _foreach_pow_,
                _foreach_reciprocal_, _foreach_sub, as_tensor, is_complex, maximum, ones,
                ones_like, tensor, view_as_real, zeros, zeros_like)
from .optimizer import (Optimizer, _check_capturable, _closure_loss, _default_to_foreach,
                        _get_scalar_dtype, _get_value, _group_tensors_by_device_and_dtype,
                        _to_scalar, _use_grad_for_differentiable, _view_as_real)

__all__ = ["ASGD", "asgd"]

_CAPTURABLE_MESSAGE = ("If capturable=True, params, mus, etas, and state_steps must be on "
                       "supported devices")


class ASGD(Optimizer):
    """Averaged SGD: ``ASGD(params, lr=1e-2, lambd=1e-4, alpha=0.75, t0=1e6, weight_decay=0,
    foreach=None, maximize=False, differentiable=False, capturable=False)``."""

    def __init__(self, params, lr=1e-2, lambd=1e-4, alpha=0.75, t0=1e6, weight_decay=0,
                 foreach=None, maximize=False, differentiable=False, capturable=False):
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        defaults = dict(lr=lr, lambd=lambd, alpha=alpha, t0=t0, weight_decay=weight_decay,
                        foreach=foreach, maximize=maximize, differentiable=differentiable,
                        capturable=capturable)
        super().__init__(params, defaults)

    def __setstate__(self, state):
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("foreach", None)
            group.setdefault("maximize", False)
            group.setdefault("differentiable", False)
            group.setdefault("capturable", False)
            for p in group["params"]:
                p_state = self.state.get(p, {})
                # a state saved when these were Python numbers
                for key in ("step", "eta", "mu") if len(p_state) != 0 else ():
                    if not isinstance(p_state[key], Tensor):
                        p_state[key] = tensor(float(p_state[key]), dtype=_get_scalar_dtype(),
                                              device=p.device)

    def _init_group(self, group, params, grads, mus, axs, etas, state_steps):
        has_complex = False
        for p in group["params"]:
            if p.grad is None:
                continue
            has_complex |= is_complex(p)
            params.append(p)
            if p.grad.is_sparse:
                raise RuntimeError("ASGD does not support sparse gradients")
            grads.append(p.grad)
            state = self.state[p]
            if len(state) == 0:
                state["step"] = zeros((), dtype=_get_scalar_dtype(), device=p.device)
                state["eta"] = as_tensor(_to_scalar(group["lr"]), dtype=_get_scalar_dtype(),
                                         device=p.device).clone().detach()
                state["mu"] = ones((), dtype=_get_scalar_dtype(), device=p.device)
                state["ax"] = zeros_like(p)
            mus.append(state["mu"])
            axs.append(state["ax"])
            etas.append(state["eta"])
            state_steps.append(state["step"])
        return has_complex

    @_use_grad_for_differentiable
    def step(self, closure=None):
        loss = _closure_loss(closure)
        for group in self.param_groups:
            params, grads, mus, axs, etas, state_steps = [], [], [], [], [], []
            has_complex = self._init_group(group, params, grads, mus, axs, etas, state_steps)
            asgd(params, grads, axs, mus, etas, state_steps, lambd=group["lambd"],
                 lr=group["lr"], t0=group["t0"], alpha=group["alpha"],
                 weight_decay=group["weight_decay"], foreach=group["foreach"],
                 maximize=group["maximize"], differentiable=group["differentiable"],
                 capturable=group["capturable"], has_complex=has_complex)
        return loss


def _single_tensor_asgd(params, grads, axs, mus, etas, state_steps, *, lambd, lr, t0, alpha,
                        weight_decay, maximize, differentiable, capturable, has_complex):
    lr = _to_scalar(lr)
    for param, grad, ax, mu, eta, step_t in zip(params, grads, axs, mus, etas, state_steps):
        grad = -grad if maximize else grad
        if capturable:
            _check_capturable([(param, mu, eta, step_t)], _CAPTURABLE_MESSAGE)
        if is_complex(param):
            grad, param, ax = view_as_real(grad), view_as_real(param), view_as_real(ax)
        step_t += 1
        if weight_decay != 0:
            grad = grad.add(param, alpha=weight_decay)
        if capturable:  # eta stays a device tensor: a replayed graph reads its current value
            param.mul_(1 - lambd * eta)
            param.addcmul_(grad, eta, value=-1)
        else:
            eta_value = _get_value(eta)
            param.mul_(1 - lambd * eta_value)
            param.add_(grad, alpha=-eta_value)
        if capturable or mu.item() != 1:
            ax.add_(param.sub(ax).mul_(mu))
        else:  # before t0 the "average" is the last iterate
            ax.copy_(param)
        if capturable:
            eta.copy_(lr / ((1 + lambd * lr * step_t) ** alpha))
            mu.copy_(1 / maximum(step_t - t0, ones_like(step_t)))
        else:
            step = _get_value(step_t)
            eta.copy_(as_tensor(lr / ((1 + lambd * lr * step) ** alpha)))
            mu.copy_(as_tensor(1 / max(1, step - t0)))


def _multi_tensor_asgd(params, grads, axs, mus, etas, state_steps, *, lambd, lr, t0, alpha,
                       weight_decay, maximize, differentiable, capturable, has_complex):
    if len(params) == 0:
        return
    if differentiable:
        raise AssertionError("_foreach ops don't support autograd")
    if capturable:
        _check_capturable(zip(params, mus, etas, state_steps), _CAPTURABLE_MESSAGE,
                          supports_xla=False)
    lr = _to_scalar(lr)
    grouped = _group_tensors_by_device_and_dtype([params, grads, axs, mus, etas, state_steps])
    for (device, _), ((g_params, g_grads, g_axs, g_mus, g_etas, g_steps), _) in \
            grouped.items():
        if has_complex:
            _view_as_real(g_params, g_grads, g_axs)
        if maximize:
            g_grads = _foreach_neg(g_grads)
        _foreach_add_(g_steps, 1)
        # param * (1 - lambd * eta) - eta * grad, as param - eta * (grad + lambd * param)
        if weight_decay != 0:
            if maximize:  # g_grads is already a fresh list: update it in place
                _foreach_add_(g_grads, g_params, alpha=weight_decay)
                intermediate = g_grads
            else:
                intermediate = _foreach_add(g_grads, g_params, alpha=weight_decay)
            _foreach_add_(intermediate, g_params, alpha=lambd)
        else:
            intermediate = _foreach_add(g_grads, g_params, alpha=lambd)
        _foreach_addcmul_(g_params, intermediate, g_etas, value=-1)
        # ax += mu * (param - ax)
        _foreach_addcmul_(g_axs, _foreach_sub(g_params, g_axs), g_mus)
        if capturable:
            new_mus = _foreach_sub(g_steps, t0)
            _foreach_maximum_(new_mus, 1.0)
            _foreach_reciprocal_(new_mus)
            _foreach_copy_(g_mus, new_mus)
            new_etas = _foreach_mul(g_steps, lambd)
            _foreach_mul_(new_etas, lr)
            _foreach_add_(new_etas, 1)
            _foreach_pow_(new_etas, alpha)
            _foreach_reciprocal_(new_etas)
            _foreach_mul_(new_etas, lr)
            _foreach_copy_(g_etas, new_etas)
        else:
            _foreach_copy_(g_etas, [as_tensor(lr / ((1 + lambd * lr * step) ** alpha),
                                              device=device) for step in g_steps])
            _foreach_copy_(g_mus, [as_tensor(1 / max(1, _get_value(step) - t0), device=device)
                                   for step in g_steps])


def asgd(params, grads, axs, mus, etas, state_steps, foreach=None, maximize=False,
         differentiable=False, capturable=False, has_complex=False, *, lambd, lr, t0, alpha,
         weight_decay):
    """The ASGD update of ``params`` and their averages ``axs`` in place (see :class:`ASGD`);
    ``foreach=None`` picks PyTorch's default."""
    if foreach is None:
        foreach = _default_to_foreach(params, differentiable)
    func = _multi_tensor_asgd if foreach else _single_tensor_asgd
    func(params, grads, axs, mus, etas, state_steps, lambd=lambd, lr=lr, t0=t0, alpha=alpha,
         weight_decay=weight_decay, maximize=maximize, differentiable=differentiable,
         capturable=capturable, has_complex=has_complex)
