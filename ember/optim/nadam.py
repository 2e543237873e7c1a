"""``NAdam``: Adam with Nesterov momentum and a momentum schedule (PyTorch's
``torch.optim.nadam``), and ``nadam``, its functional form.

State per parameter: ``step``, ``mu_product`` (the product of the momentum schedule so far),
``exp_avg`` and ``exp_avg_sq``. The per-tensor loop writes PyTorch's ``lerp_``/``addcmul_``/
``addcdiv_`` with ``mul_``/``add_``/``div`` (the same arithmetic, rounded once more); the
multi-tensor ("foreach") path is PyTorch's op for op. ``foreach=None`` picks the path PyTorch
would (the multi-tensor one on CUDA, the loop on the CPU).
"""
from .. import (_foreach_add, _foreach_add_, _foreach_addcdiv_, _foreach_addcmul_, _foreach_div_,
                _foreach_lerp_, _foreach_mul, _foreach_mul_, _foreach_neg, _foreach_neg_,
                _foreach_pow, _foreach_sqrt, _foreach_sqrt_, _foreach_sub, _foreach_sub_,
                is_complex, view_as_real)
from .optimizer import (Optimizer, _check_capturable, _check_state_steps, _closure_loss,
                        _default_to_foreach, _get_value, _group_tensors_by_device_and_dtype,
                        _fill_group, _use_grad, _validate, _view_as_real)

__all__ = ["NAdam", "nadam"]


class NAdam(Optimizer):
    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 momentum_decay=4e-3, decoupled_weight_decay=False, *, foreach=None,
                 maximize=False, capturable=False, differentiable=False):
        _validate(lr=lr, eps=eps, betas=betas, weight_decay=weight_decay,
                  momentum_decay=momentum_decay)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                        momentum_decay=momentum_decay,
                        decoupled_weight_decay=decoupled_weight_decay, maximize=maximize,
                        foreach=foreach, capturable=capturable, differentiable=differentiable)
        super().__init__(params, defaults)

    def __setstate__(self, state):
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("maximize", False)
            group.setdefault("foreach", None)
            group.setdefault("capturable", False)
            group.setdefault("differentiable", False)
            group.setdefault("decoupled_weight_decay", False)

    def _init_group(self, group, params, grads, exp_avgs, exp_avg_sqs, mu_products,
                    state_steps):
        return _fill_group(self, "NAdam", group, params, grads, state_steps,
                           {"exp_avg": exp_avgs, "exp_avg_sq": exp_avg_sqs},
                           {"mu_product": (1.0, mu_products)})

    @_use_grad
    def step(self, closure=None):
        loss = _closure_loss(closure)
        for group in self.param_groups:
            params, grads, exp_avgs, exp_avg_sqs, mu_products, state_steps = (
                [], [], [], [], [], [])
            beta1, beta2 = group["betas"]
            has_complex = self._init_group(group, params, grads, exp_avgs, exp_avg_sqs,
                                           mu_products, state_steps)
            nadam(params, grads, exp_avgs, exp_avg_sqs, mu_products, state_steps, beta1=beta1,
                  beta2=beta2, lr=group["lr"], weight_decay=group["weight_decay"],
                  momentum_decay=group["momentum_decay"], eps=group["eps"],
                  maximize=group["maximize"],
                  decoupled_weight_decay=group["decoupled_weight_decay"],
                  foreach=group["foreach"], capturable=group["capturable"],
                  differentiable=group["differentiable"], has_complex=has_complex)
        return loss


def _single_tensor_nadam(params, grads, exp_avgs, exp_avg_sqs, mu_products, state_steps, *,
                         beta1, beta2, lr, weight_decay, momentum_decay, eps,
                         decoupled_weight_decay, maximize, capturable, differentiable,
                         has_complex):
    lr = _get_value(lr)
    for i, param in enumerate(params):
        grad = -grads[i] if maximize else grads[i]
        exp_avg, exp_avg_sq = exp_avgs[i], exp_avg_sqs[i]
        mu_product_t, step_t = mu_products[i], state_steps[i]
        if capturable:
            _check_capturable([(param, mu_product_t, step_t)],
                              "If capturable=True, params, mu_products and state_steps must be "
                              "on supported devices")
        if is_complex(param):
            param, grad = view_as_real(param), view_as_real(grad)
            exp_avg, exp_avg_sq = view_as_real(exp_avg), view_as_real(exp_avg_sq)
        step_t += 1
        # with capturable the step and mu_product stay tensors on the device
        step = step_t if capturable else step_t.item()
        bias_correction2 = 1 - beta2 ** step
        if weight_decay != 0:
            if decoupled_weight_decay:
                param.mul_(1 - lr * weight_decay)
            else:
                grad = grad.add(param, alpha=weight_decay)
        mu = beta1 * (1.0 - 0.5 * (0.96 ** (step * momentum_decay)))
        mu_next = beta1 * (1.0 - 0.5 * (0.96 ** ((step + 1) * momentum_decay)))
        mu_product_t *= mu
        exp_avg.mul_(beta1).add_(grad, alpha=1 - beta1)
        exp_avg_sq.mul_(beta2).add_(grad * grad, alpha=1 - beta2)
        denom = exp_avg_sq.div(bias_correction2).sqrt().add_(eps)
        mu_product = mu_product_t if capturable else mu_product_t.item()
        mu_product_next = mu_product * mu_next
        if capturable:  # PyTorch's form: the factors multiply tensors
            param.addcdiv_(grad * (-lr * (1.0 - mu) / (1.0 - mu_product)), denom)
            param.addcdiv_(exp_avg * (-lr * mu_next / (1.0 - mu_product_next)), denom)
        else:
            param.add_(grad / denom, alpha=-lr * (1.0 - mu) / (1.0 - mu_product))
            param.add_(exp_avg / denom, alpha=(-lr * mu_next) / (1.0 - mu_product_next))


def _multi_tensor_nadam(params, grads, exp_avgs, exp_avg_sqs, mu_products, state_steps, *,
                        beta1, beta2, lr, weight_decay, momentum_decay, eps,
                        decoupled_weight_decay, maximize, capturable, differentiable,
                        has_complex):
    if len(params) == 0:
        return
    if differentiable:
        raise AssertionError("_foreach ops don't support autograd")
    if capturable:
        _check_capturable(zip(params, mu_products, state_steps),
                          "If capturable=True, params, mu_products, and state_steps must be on "
                          "supported devices", supports_xla=False)
    lr = _get_value(lr)
    grouped = _group_tensors_by_device_and_dtype(
        [params, grads, exp_avgs, exp_avg_sqs, mu_products, state_steps])
    for (g_params, g_grads, g_exp_avgs, g_exp_avg_sqs, g_mu_products, g_steps), _ in \
            grouped.values():
        if has_complex:
            _view_as_real(g_params, g_grads, g_exp_avgs, g_exp_avg_sqs)
        if maximize:
            g_grads = _foreach_neg(g_grads)
        _foreach_add_(g_steps, 1)
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
        exp_avg_sq_sqrt = _foreach_sqrt(g_exp_avg_sqs)
        if capturable:
            # mu = beta1 * (1 - 0.5 * 0.96 ** (step * momentum_decay)), and mu_next at step + 1
            exponent = _foreach_mul(g_steps, momentum_decay)
            mus = _foreach_pow(0.96, exponent)
            _foreach_mul_(mus, -0.5)
            _foreach_add_(mus, 1.0)
            _foreach_mul_(mus, beta1)
            _foreach_add_(exponent, momentum_decay)
            mu_nexts = _foreach_pow(0.96, exponent)
            _foreach_mul_(mu_nexts, -0.5)
            _foreach_add_(mu_nexts, 1.0)
            _foreach_mul_(mu_nexts, beta1)
            bias_correction_sqrt = _foreach_pow(beta2, g_steps)
            _foreach_sub_(bias_correction_sqrt, 1.0)
            _foreach_neg_(bias_correction_sqrt)
            _foreach_sqrt_(bias_correction_sqrt)
        else:
            steps = [_get_value(step) for step in g_steps]
            bias_correction_sqrt = [(1 - beta2 ** step) ** 0.5 for step in steps]
            mus = [beta1 * (1.0 - 0.5 * (0.96 ** (step * momentum_decay))) for step in steps]
            mu_nexts = [beta1 * (1.0 - 0.5 * (0.96 ** ((step + 1) * momentum_decay)))
                        for step in steps]
        _foreach_mul_(g_mu_products, mus)
        _foreach_div_(exp_avg_sq_sqrt, bias_correction_sqrt)
        _foreach_add_(exp_avg_sq_sqrt, eps)
        if capturable:
            # step_size_grads = lr * (mu - 1) / (1 - mu_product)
            _foreach_sub_(mus, 1.0)
            _foreach_mul_(mus, lr)
            denom = _foreach_sub(g_mu_products, 1.0)
            _foreach_neg_(denom)
            _foreach_div_(mus, denom)
            step_size_grads = mus
            # step_size_expavg = lr * mu_next / (mu_product * mu_next - 1)
            denom = _foreach_mul(g_mu_products, mu_nexts)
            _foreach_mul_(mu_nexts, lr)
            _foreach_sub_(denom, 1.0)
            _foreach_div_(mu_nexts, denom)
            step_size_expavg = mu_nexts
            numerator = _foreach_mul(step_size_grads, g_grads)
            _foreach_addcmul_(numerator, step_size_expavg, g_exp_avgs)
            _foreach_addcdiv_(g_params, numerator, exp_avg_sq_sqrt)
        else:
            step_size_grads = [(lr * (1.0 - mu) / (1.0 - _get_value(mu_product))) * -1
                               for mu_product, mu in zip(g_mu_products, mus)]
            step_size_expavg = [(lr * mu_next / (1.0 - _get_value(mu_product) * mu_next)) * -1
                                for mu_product, mu_next in zip(g_mu_products, mu_nexts)]
            _foreach_addcdiv_(g_params, g_grads, exp_avg_sq_sqrt, step_size_grads)
            _foreach_addcdiv_(g_params, g_exp_avgs, exp_avg_sq_sqrt, step_size_expavg)


def nadam(params, grads, exp_avgs, exp_avg_sqs, mu_products, state_steps,
          decoupled_weight_decay=False, foreach=None, capturable=False, differentiable=False,
          has_complex=False, maximize=False, *, beta1, beta2, lr, weight_decay, momentum_decay,
          eps):
    """The NAdam update of ``params`` and their moments in place (see :class:`NAdam`)."""
    _check_state_steps(state_steps)
    _check_state_steps(mu_products, "mu_products")
    if foreach is None:
        foreach = _default_to_foreach(params, differentiable)
    func = _multi_tensor_nadam if foreach else _single_tensor_nadam
    func(params, grads, exp_avgs, exp_avg_sqs, mu_products, state_steps, beta1=beta1,
         beta2=beta2, lr=lr, weight_decay=weight_decay, momentum_decay=momentum_decay,
         maximize=maximize, decoupled_weight_decay=decoupled_weight_decay, eps=eps,
         capturable=capturable, differentiable=differentiable, has_complex=has_complex)
