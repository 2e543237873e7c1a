"""``Adagrad`` (PyTorch's ``torch.optim.adagrad``), and ``adagrad``, its functional form.

Adagrad creates its state (``step`` and the running ``sum`` of squared gradients) in the
constructor, and steps with sparse gradients too (the sums and the parameter change at the
gradient's entries only). The per-tensor loop writes PyTorch's ``addcmul_``/``addcdiv_`` with
``add_``/``div`` (the same arithmetic, rounded once more); the multi-tensor ("foreach") path is
PyTorch's op for op. ``foreach=None`` picks the path PyTorch would (the multi-tensor one on
CUDA, the loop on the CPU).
"""
from .. import (_foreach_add, _foreach_add_, _foreach_addcdiv_, _foreach_addcmul_,
                _foreach_div, _foreach_mul, _foreach_mul_, _foreach_neg, _foreach_sqrt,
                float32, full_like, is_complex, sparse_coo_tensor, tensor, view_as_real)
from .optimizer import (Optimizer, _check_state_steps, _closure_loss, _default_to_foreach,
                        _device_dtype_check_for_fused, _get_value,
                        _group_tensors_by_device_and_dtype, _step_tensor, _use_grad, _validate,
                        _view_as_real)

__all__ = ["Adagrad", "adagrad"]


class Adagrad(Optimizer):
    def __init__(self, params, lr=1e-2, lr_decay=0, weight_decay=0, initial_accumulator_value=0,
                 eps=1e-10, foreach=None, *, maximize=False, differentiable=False, fused=None):
        _validate(lr=lr, lr_decay=lr_decay, weight_decay=weight_decay,
                  initial_accumulator_value=initial_accumulator_value, eps=eps)
        defaults = dict(lr=lr, lr_decay=lr_decay, eps=eps, weight_decay=weight_decay,
                        initial_accumulator_value=initial_accumulator_value, foreach=foreach,
                        maximize=maximize, differentiable=differentiable, fused=fused)
        super().__init__(params, defaults)
        if fused:
            if differentiable:
                raise RuntimeError("`fused` does not support `differentiable`")
            if foreach:
                raise RuntimeError("`fused` and `foreach` cannot be `True` together.")
            self._need_device_dtype_check_for_fused = True
        for group in self.param_groups:
            for p in group["params"]:
                state = self.state[p]
                # the fused step counts where the params live, as float32
                state["step"] = (tensor(0.0, dtype=float32, device=p.device) if group["fused"]
                                 else _step_tensor())
                init = group["initial_accumulator_value"]
                state["sum"] = full_like(p, complex(init, init) if is_complex(p) else init)

    def __setstate__(self, state):
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("foreach", None)
            group.setdefault("maximize", False)
            group.setdefault("differentiable", False)
            group.setdefault("fused", None)

    def share_memory(self):
        for group in self.param_groups:
            for p in group["params"]:
                self.state[p]["sum"].share_memory_()

    def _init_group(self, group, params, grads, state_sums, state_steps):
        has_sparse_grad, has_complex = False, False
        for p in group["params"]:
            if p.grad is None:
                continue
            if group["fused"] and getattr(self, "_need_device_dtype_check_for_fused", True):
                _device_dtype_check_for_fused(p)
                self._need_device_dtype_check_for_fused = False
            has_sparse_grad |= p.grad.is_sparse
            has_complex |= is_complex(p)
            params.append(p)
            grads.append(p.grad)
            state = self.state[p]
            state_sums.append(state["sum"])
            state_steps.append(state["step"])
        return has_sparse_grad, has_complex

    @_use_grad
    def step(self, closure=None):
        loss = _closure_loss(closure)
        for group in self.param_groups:
            params, grads, state_sums, state_steps = [], [], [], []
            has_sparse_grad, has_complex = self._init_group(group, params, grads, state_sums,
                                                            state_steps)
            adagrad(params, grads, state_sums, state_steps, lr=group["lr"],
                    weight_decay=group["weight_decay"], lr_decay=group["lr_decay"],
                    eps=group["eps"], has_sparse_grad=has_sparse_grad,
                    foreach=group["foreach"], maximize=group["maximize"],
                    differentiable=group["differentiable"], has_complex=has_complex,
                    fused=group["fused"], grad_scale=getattr(self, "grad_scale", None),
                    found_inf=getattr(self, "found_inf", None))
        return loss


def _make_sparse(grad, grad_indices, values):
    return sparse_coo_tensor(grad_indices, values, grad.shape)


def _single_tensor_adagrad(params, grads, state_sums, state_steps, grad_scale, found_inf, *,
                           lr, weight_decay, lr_decay, eps, has_sparse_grad, maximize,
                           differentiable, has_complex):
    if grad_scale is not None or found_inf is not None:
        raise AssertionError("Expected grad_scale and found_inf to be None")
    lr = _get_value(lr)
    for param, grad, state_sum, step_t in zip(params, grads, state_sums, state_steps):
        step_t += 1
        step = step_t.item()
        grad = -grad if maximize else grad
        clr = lr / (1 + (step - 1) * lr_decay)
        if grad.is_sparse:
            # the sums and the parameter change at the (coalesced) gradient's entries only
            if weight_decay != 0:
                raise RuntimeError("weight_decay option is not compatible with sparse "
                                   "gradients")
            grad = grad.coalesce()
            indices, values = grad._indices(), grad._values()
            state_sum.add_(_make_sparse(grad, indices, values.pow(2)))
            std_values = state_sum.sparse_mask(grad)._values().sqrt_().add_(eps)
            param.add_(_make_sparse(grad, indices, values / std_values), alpha=-clr)
            continue
        if weight_decay != 0:
            grad = grad.add(param, alpha=weight_decay)
        if is_complex(param):
            param, grad, state_sum = (view_as_real(param), view_as_real(grad),
                                      view_as_real(state_sum))
        state_sum.add_(grad * grad)
        std = state_sum.sqrt().add_(eps)
        param.add_(grad / std, alpha=-clr)


def _multi_tensor_adagrad(params, grads, state_sums, state_steps, grad_scale, found_inf, *, lr,
                          weight_decay, lr_decay, eps, has_sparse_grad, maximize,
                          differentiable, has_complex):
    if differentiable:
        raise AssertionError("_foreach ops don't support autograd")
    if grad_scale is not None or found_inf is not None:
        raise AssertionError("Expected grad_scale and found_inf to be None")
    if len(params) == 0:
        return
    lr = _get_value(lr)
    grouped = _group_tensors_by_device_and_dtype([params, grads, state_sums, state_steps])
    for (g_params, g_grads, g_sums, g_steps), _ in grouped.values():
        if has_sparse_grad and any(g.is_sparse for g in g_grads):
            _single_tensor_adagrad(g_params, g_grads, g_sums, g_steps, None, None, lr=lr,
                                   weight_decay=weight_decay, lr_decay=lr_decay, eps=eps,
                                   has_sparse_grad=True, maximize=maximize,
                                   differentiable=differentiable, has_complex=has_complex)
            continue
        if has_complex:
            _view_as_real(g_params, g_grads, g_sums)
        if maximize:
            g_grads = _foreach_neg(g_grads)
        _foreach_add_(g_steps, 1)
        if weight_decay != 0:
            if maximize:  # g_grads is already a fresh list: update it in place
                _foreach_add_(g_grads, g_params, alpha=weight_decay)
            else:
                g_grads = _foreach_add(g_grads, g_params, alpha=weight_decay)
        minus_clr = [-lr / (1 + (_get_value(step) - 1) * lr_decay) for step in g_steps]
        _foreach_addcmul_(g_sums, g_grads, g_grads, value=1)
        std = _foreach_sqrt(g_sums)
        _foreach_add_(std, eps)
        if weight_decay != 0 or maximize:  # g_grads is a fresh list: scale it in place
            _foreach_mul_(g_grads, minus_clr)
            numerator = g_grads
        else:
            numerator = _foreach_mul(g_grads, minus_clr)
        _foreach_addcdiv_(g_params, numerator, std)


def _fused_adagrad(params, grads, state_sums, state_steps, grad_scale, found_inf, *, lr,
                   weight_decay, lr_decay, eps, has_sparse_grad, maximize, differentiable,
                   has_complex):
    """PyTorch's ``_fused_adagrad``. ember has no ``_fused_adagrad_`` kernel: the update is the
    per-tensor one, after the fused kernel's own handling of a GradScaler's scale (the
    gradients unscaled) and ``found_inf`` (no update at all)."""
    if not params:
        return
    if has_sparse_grad or has_complex:
        raise RuntimeError("`fused` does not support sparse grad or complex param")
    if differentiable:
        raise RuntimeError("adagrad with fused=True does not support differentiable=True")
    if found_inf is not None and found_inf.item():
        return
    if grad_scale is not None:
        grads = _foreach_div(grads, [grad_scale.to(p.device) for p in params])
    _single_tensor_adagrad(params, grads, state_sums, state_steps, None, None, lr=lr,
                           weight_decay=weight_decay, lr_decay=lr_decay, eps=eps,
                           has_sparse_grad=False, maximize=maximize, differentiable=False,
                           has_complex=False)


def adagrad(params, grads, state_sums, state_steps, fused=None, grad_scale=None,
            found_inf=None, has_sparse_grad=False, foreach=None, differentiable=False,
            has_complex=False, *, lr, weight_decay, lr_decay, eps, maximize):
    """The Adagrad update of ``params`` and their sums in place (see :class:`Adagrad`)."""
    _check_state_steps(state_steps)
    if fused is None and foreach is None:
        foreach = _default_to_foreach(params, differentiable)
    if fused:
        func = _fused_adagrad
    elif foreach:
        func = _multi_tensor_adagrad
    else:
        func = _single_tensor_adagrad
    func(params, grads, state_sums, state_steps, grad_scale, found_inf, lr=lr,
         weight_decay=weight_decay, lr_decay=lr_decay, eps=eps,
         has_sparse_grad=has_sparse_grad, maximize=maximize, differentiable=differentiable,
         has_complex=has_complex)
