"""``Adafactor`` (PyTorch's ``torch.optim._adafactor``, exported as ``ember.optim.Adafactor``),
and ``adafactor``, its functional form.

Adam-like second moments at sublinear memory: for a parameter of two or more dimensions the
running mean of ``grad ** 2`` is kept factored over its last two dimensions (``row_var``: means
over the last one, ``col_var``: over the one before), and their product divided by the mean row
estimates the variance; a vector keeps the full ``variance``. The step is relative: at most
``lr`` (and ``1 / sqrt(step)``) times the parameter's RMS (at least ``eps[1]``), with the update's
RMS clipped to ``d``. ``eps[0]=None`` means the parameters' dtype's machine epsilon.

As in PyTorch, ``foreach=None`` means the per-tensor loop (the multi-tensor path holds an
update-sized temporary per parameter, and Adafactor is for when memory is short).
"""
from .. import (Tensor, _foreach_add_, _foreach_clamp_min_, _foreach_div_, _foreach_lerp_,
                _foreach_mul, _foreach_mul_, _foreach_neg, _foreach_rsqrt_, finfo, is_complex,
                norm, tensor, zeros_like)
from .optimizer import (Optimizer, _closure_loss, _get_scalar_dtype,
                        _group_tensors_by_device_and_dtype, _to_scalar, _use_grad)

__all__ = ["Adafactor", "adafactor"]


class Adafactor(Optimizer):
    """Adafactor: ``Adafactor(params, lr=1e-2, beta2_decay=-0.8, eps=(None, 1e-3), d=1.0,
    weight_decay=0.0, *, foreach=None, maximize=False)``; weight decay is decoupled (scaled
    by ``lr``)."""

    def __init__(self, params, lr=1e-2, beta2_decay=-0.8, eps=(None, 1e-3), d=1.0,
                 weight_decay=0.0, *, foreach=None, maximize=False):
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 <= lr:
            raise ValueError(f"Learning rate should be >= 0 but is: {lr}")
        if not 0.0 >= beta2_decay:
            raise ValueError(f"beta2_decay should be <= 0 but is: {beta2_decay}")
        if eps[0] is not None and not 0.0 <= eps[0]:
            raise ValueError(f"epsilon1 should be >= 0 but is: {eps[0]}")
        if not 0.0 <= eps[1]:
            raise ValueError(f"epsilon2 should be >= 0 but is: {eps[1]}")
        if not 1.0 <= d:
            raise ValueError(f"Clipping threshold d should be >= 1 but is: {d}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"weight_decay should be >= 0 but is: {weight_decay}")
        defaults = dict(lr=lr, beta2_decay=beta2_decay, eps=eps, d=d, weight_decay=weight_decay,
                        foreach=foreach, maximize=maximize)
        super().__init__(params, defaults)

    def __setstate__(self, state):
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("foreach", None)
            for p in group["params"]:
                p_state = self.state.get(p, {})
                if len(p_state) != 0 and not isinstance(p_state["step"], Tensor):
                    # a state saved when the step count was a Python number
                    p_state["step"] = tensor(float(p_state["step"]), dtype=_get_scalar_dtype())

    def _init_group(self, group, params, grads, row_vars, col_vars, variances, state_steps):
        for p in group["params"]:
            if p.grad is None:
                continue
            if is_complex(p):
                raise RuntimeError("Adafactor does not support complex parameters")
            if p.grad.is_sparse:
                raise RuntimeError("Adafactor does not support sparse gradients")
            params.append(p)
            grads.append(p.grad)
            state = self.state[p]
            if len(state) == 0:
                # on the host: the step reads its count there every step anyway
                state["step"] = tensor(0.0, dtype=_get_scalar_dtype())
                if p.grad.dim() > 1:
                    row_shape = list(p.grad.shape)
                    row_shape[-1] = 1
                    state["row_var"] = p.grad.new_zeros(row_shape)
                    col_shape = list(p.grad.shape)
                    col_shape[-2] = 1
                    state["col_var"] = p.grad.new_zeros(col_shape)
                else:
                    state["variance"] = zeros_like(p.grad)
            row_vars.append(state.get("row_var"))
            col_vars.append(state.get("col_var"))
            variances.append(state.get("variance"))
            state_steps.append(state["step"])
        return False  # complex parameters were refused above

    @_use_grad
    def step(self, closure=None):
        loss = _closure_loss(closure)
        for group in self.param_groups:
            params, grads, row_vars, col_vars, variances, state_steps = [], [], [], [], [], []
            has_complex = self._init_group(group, params, grads, row_vars, col_vars, variances,
                                           state_steps)
            eps1, eps2 = group["eps"]
            adafactor(params, grads, row_vars, col_vars, variances, state_steps,
                      foreach=group["foreach"], grad_scale=getattr(self, "grad_scale", None),
                      found_inf=getattr(self, "found_inf", None), has_complex=has_complex,
                      d=group["d"], lr=group["lr"], beta2_decay=group["beta2_decay"],
                      weight_decay=group["weight_decay"], eps1=eps1, eps2=eps2,
                      maximize=group["maximize"])
        return loss


def _mean_square(grad, dim):
    """``(grad * grad).mean(dim, keepdim=True)`` without a grad-sized temporary."""
    return norm(grad, dim=dim, keepdim=True).square_().div_(grad.size(dim))


def _check_no_grad_scaling(grad_scale, found_inf):
    if grad_scale is not None or found_inf is not None:
        raise AssertionError("Grad scaling should occur outside of optimizer.step()")


def _single_tensor_adafactor(params, grads, row_vars, col_vars, variances, state_steps,
                             grad_scale, found_inf, *, d, lr, beta2_decay, weight_decay, eps1,
                             eps2, maximize, has_complex):
    _check_no_grad_scaling(grad_scale, found_inf)
    lr = _to_scalar(lr)
    for param, grad, row_var, col_var, variance, step_t in zip(
            params, grads, row_vars, col_vars, variances, state_steps):
        grad = -grad if maximize else grad
        if eps1 is None:  # as PyTorch: the first parameter's dtype decides for the whole group
            eps1 = finfo(param.dtype).eps
        step_t += 1
        step = step_t.item()
        one_minus_beta2_t = step ** beta2_decay
        rho_t = min(lr, 1 / (step ** 0.5))
        alpha = max(eps2, param.norm(2).item() / (param.numel() ** 0.5)) * rho_t
        if weight_decay != 0:
            param.mul_(1 - lr * weight_decay)
        if grad.dim() > 1:
            if row_var is None or col_var is None:
                raise AssertionError("row_var and col_var should be defined when grad is "
                                     "multidimensional")
            row_var.lerp_(_mean_square(grad, -1), one_minus_beta2_t)
            col_var.lerp_(_mean_square(grad, -2), one_minus_beta2_t)
            var_estimate = row_var @ col_var
            var_estimate.div_(row_var.mean(dim=-2, keepdim=True).clamp_(min=eps1))
        else:
            if variance is None:
                raise AssertionError("variance should be defined when grad is a vector")
            variance.lerp_(grad * grad, one_minus_beta2_t)
            var_estimate = variance.clone()  # the update below works in place
        # eps1 squared: the square root comes after
        update = var_estimate.clamp_(min=eps1 * eps1).rsqrt_()
        update.mul_(grad)
        denom = max(1.0, update.norm(2).item() / ((update.numel() ** 0.5) * d))
        param.add_(update, alpha=-alpha / denom)


def _group_by_device_dtype_and_is_multidim(tensorlists):
    """The foreach groups, each further split into the factored (multi-dimensional gradient)
    and the unfactored (vector) parameters, so each group updates one kind of state."""
    groups = {}
    for (device, dtype), (lists, _) in _group_tensors_by_device_and_dtype(tensorlists).items():
        for j, grad in enumerate(lists[1]):
            out = groups.setdefault((device, dtype, grad.dim() > 1), [[] for _ in lists])
            for column, values in zip(out, lists):
                column.append(values[j])
    return groups


def _multi_tensor_adafactor(params, grads, row_vars, col_vars, variances, state_steps,
                            grad_scale, found_inf, *, d, lr, beta2_decay, weight_decay, eps1,
                            eps2, maximize, has_complex):
    if len(params) == 0:
        return
    _check_no_grad_scaling(grad_scale, found_inf)
    lr = _to_scalar(lr)
    grouped = _group_by_device_dtype_and_is_multidim(
        [params, grads, row_vars, col_vars, variances, state_steps])
    for (_, dtype, is_multidim), (g_params, g_grads, g_row_vars, g_col_vars, g_variances,
                                  g_steps) in grouped.items():
        if eps1 is None:  # as PyTorch: the first group's dtype decides for the rest
            eps1 = finfo(dtype).eps
        if maximize:
            g_grads = _foreach_neg(g_grads)
        _foreach_add_(g_steps, 1.0)
        steps = [s.item() for s in g_steps]
        one_minus_beta2_ts = [s ** beta2_decay for s in steps]
        rho_ts = [min(lr, 1 / (s ** 0.5)) for s in steps]
        alphas = [max(eps2, p.norm(2).item() / (p.numel() ** 0.5)) * r
                  for p, r in zip(g_params, rho_ts)]
        if weight_decay != 0:
            _foreach_mul_(g_params, 1 - lr * weight_decay)
        if is_multidim:
            if g_row_vars[0] is None or g_col_vars[0] is None:
                raise AssertionError("row_var and col_var should be defined when grad is "
                                     "multidimensional")
            row_means = [norm(grad, dim=-1, keepdim=True) for grad in g_grads]
            _foreach_mul_(row_means, row_means)
            _foreach_div_(row_means, [grad.size(-1) for grad in g_grads])
            _foreach_lerp_(g_row_vars, row_means, one_minus_beta2_ts)
            col_means = [norm(grad, dim=-2, keepdim=True) for grad in g_grads]
            _foreach_mul_(col_means, col_means)
            _foreach_div_(col_means, [grad.size(-2) for grad in g_grads])
            _foreach_lerp_(g_col_vars, col_means, one_minus_beta2_ts)
            var_estimates = [r @ c for r, c in zip(g_row_vars, g_col_vars)]
            row_var_means = [r.mean(dim=-2, keepdim=True) for r in g_row_vars]
            _foreach_clamp_min_(row_var_means, eps1)
            _foreach_div_(var_estimates, row_var_means)
        else:
            if g_variances[0] is None:
                raise AssertionError("variance should be defined when grad is a vector")
            _foreach_lerp_(g_variances, _foreach_mul(g_grads, g_grads), one_minus_beta2_ts)
            var_estimates = [v.clone() for v in g_variances]
        _foreach_clamp_min_(var_estimates, eps1 * eps1)
        _foreach_rsqrt_(var_estimates)
        _foreach_mul_(var_estimates, g_grads)
        updates = var_estimates
        scales = [-a / max(1.0, u.norm(2).item() / ((u.numel() ** 0.5) * d))
                  for a, u in zip(alphas, updates)]
        _foreach_mul_(updates, scales)
        _foreach_add_(g_params, updates)


def adafactor(params, grads, row_vars, col_vars, variances, state_steps, foreach=None,
              grad_scale=None, found_inf=None, has_complex=False, *, d, lr, beta2_decay,
              weight_decay, eps1, eps2, maximize):
    """The Adafactor update of ``params`` in place (see :class:`Adafactor`); only
    ``foreach=True`` takes the multi-tensor path."""
    if not all(isinstance(t, Tensor) for t in state_steps):
        raise RuntimeError("`state_steps` argument must contain a list of singleton tensors")
    func = _multi_tensor_adafactor if foreach else _single_tensor_adafactor
    func(params, grads, row_vars, col_vars, variances, state_steps, grad_scale, found_inf, d=d,
         lr=lr, beta2_decay=beta2_decay, weight_decay=weight_decay, eps1=eps1, eps2=eps2,
         maximize=maximize, has_complex=has_complex)
