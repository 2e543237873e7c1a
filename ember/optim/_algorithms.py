"""The optimizers of ``ember.optim`` with PyTorch's single-tensor update rules.

Each ``step`` walks the parameters that have a gradient, creates their state on first use (the
same keys and dtypes as PyTorch, so state dicts interchange), and updates them in place under
``no_grad``. Outside SGD and Adam, PyTorch's fused ``addcmul_``/``addcdiv_``/``lerp_`` are written
with ``mul_``/``add_``/``div``: the same arithmetic, rounded once more.

SGD, Adam and AdamW also have PyTorch's multi-tensor ("foreach") path: when ``foreach`` is None or
True and every parameter of a group is a dense tensor of one dtype on one CPU or CUDA device
(on a GPU the foreach bodies run on device arrays, ``_kernels/cuda/shared.py``), each update is one
``_foreach_*`` op over the whole group (~12 dispatcher calls per step instead of ~12 per
parameter), with the same arithmetic as the single-tensor path. Adam and AdamW with
``fused=True`` make one ``_fused_adam_``/``_fused_adamw_`` call per group and device.
"""

# PyTorch's torch.utils._foreach_utils._get_fused_kernels_supported_devices()
_FUSED_DEVICES = ["mps", "cuda", "xpu", "hpu", "cpu", "mtia", "privateuseone"]


def _device_dtype_check_for_fused(p):
    if not (p.device.type in _FUSED_DEVICES and is_floating_point(p)):
        raise RuntimeError(f"`fused=True` requires all the params to be floating point Tensors "
                           f"of supported devices: {_FUSED_DEVICES} but {p.dtype} and "
                           f"{p.device.type}")

from .. import (float32, get_default_dtype, is_floating_point, maximum, sparse_coo_tensor,
                tensor, where,
                zeros_like, full_like, _foreach_add, _foreach_add_, _foreach_addcdiv_,
                _foreach_addcmul_, _foreach_div_, _foreach_lerp_, _foreach_maximum_,
                _foreach_mul_, _foreach_neg, _foreach_sqrt, _fused_adam_, _fused_adamw_)
from .optimizer import Optimizer, _get_value, _use_grad

__all__ = ["SGD", "Adam", "AdamW", "Adamax", "NAdam", "RAdam", "RMSprop", "Adagrad",
           "Adadelta"]

# (argument, test, message) rows shared by the constructors' validation.
_CHECKS = {
    "lr": (lambda v: 0.0 <= v, "Invalid learning rate: {}"),
    "eps": (lambda v: 0.0 <= v, "Invalid epsilon value: {}"),
    "momentum": (lambda v: 0.0 <= v, "Invalid momentum value: {}"),
    "weight_decay": (lambda v: 0.0 <= v, "Invalid weight_decay value: {}"),
    "alpha": (lambda v: 0.0 <= v, "Invalid alpha value: {}"),
    "lr_decay": (lambda v: 0.0 <= v, "Invalid lr_decay value: {}"),
    "momentum_decay": (lambda v: 0.0 <= v, "Invalid momentum_decay value: {}"),
    "rho": (lambda v: 0.0 <= v <= 1.0, "Invalid rho value: {}"),
    "initial_accumulator_value": (lambda v: 0.0 <= v, "Invalid initial_accumulator_value value: {}"),
}


def _validate(**kwargs):
    lr = kwargs.get("lr")
    if hasattr(lr, "numel") and lr.numel() != 1:
        raise ValueError("Tensor lr must be 1-element")
    for name, value in kwargs.items():
        if name == "betas":
            for i, b in enumerate(value):
                if not 0.0 <= b < 1.0:
                    raise ValueError(f"Invalid beta parameter at index {i}: {b}")
            continue
        ok, message = _CHECKS[name]
        if not ok(value):
            raise ValueError(message.format(value))


def _step_tensor(value=0.0, group=None, p=None):
    """The scalar ``step`` counter PyTorch keeps in optimizer state (default float dtype): on
    the CPU, or with ``capturable`` on the parameter's device (a CUDA graph replaying the step
    then counts on the device)."""
    device = p.device if group is not None and group.get("capturable") else None
    return tensor(value, dtype=get_default_dtype(), device=device)


def _grad(p, maximize):
    return -p.grad if maximize else p.grad


def _params_with_state(optimizer, group, buffers, **counters):
    """(param, state, grad) for each of the group's params that has a gradient. A param seen for
    the first time gets PyTorch's initial state, in PyTorch's key order: ``step``, the scalar
    ``counters`` (e.g. NAdam's ``mu_product=1.0``), then a zero tensor per name in ``buffers``."""
    for p in group["params"]:
        if p.grad is None:
            continue
        _check_dense_grad(optimizer, p)
        state = optimizer.state[p]
        if len(state) == 0:
            state["step"] = _step_tensor(0.0, group, p)
            for name, value in counters.items():
                state[name] = _step_tensor(value, group, p)
            for name in buffers:
                state[name] = zeros_like(p)
        yield p, state, _grad(p, group["maximize"])


def _check_dense_grad(optimizer, p):
    """PyTorch's refusal of sparse gradients (only SGD, Adagrad and SparseAdam take them)."""
    if p.grad.is_sparse:
        name = "Adam" if isinstance(optimizer, Adam) else type(optimizer).__name__
        hint = ", please consider SparseAdam instead" if name == "Adam" else ""
        raise RuntimeError(f"{name} does not support sparse gradients{hint}")


def _use_foreach(group, params):
    """PyTorch's default choice, restricted to what ember's foreach kernels serve: foreach unless
    the user said False (or asked for a differentiable step), with all parameters dense tensors
    of one dtype on one CPU or CUDA device."""
    if group["foreach"] is False or group["differentiable"] or not params:
        return False
    dtype, device = params[0].dtype, params[0].device
    return device.type in ("cpu", "cuda") and all(
        p.device == device and p.dtype is dtype and not p.grad.is_sparse for p in params)


class SGD(Optimizer):
    def __init__(self, params, lr=1e-3, momentum=0, dampening=0, weight_decay=0, nesterov=False,
                 *, maximize=False, foreach=None, differentiable=False, fused=None):
        _validate(lr=lr, momentum=momentum, weight_decay=weight_decay)
        defaults = dict(lr=lr, momentum=momentum, dampening=dampening,
                        weight_decay=weight_decay, nesterov=nesterov, maximize=maximize,
                        foreach=foreach, differentiable=differentiable, fused=fused)
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        super().__init__(params, defaults)

    def __setstate__(self, state):
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("nesterov", False)
            group.setdefault("maximize", False)

    @_use_grad
    def step(self, closure=None):
        loss = _closure_loss(closure)
        for group in self.param_groups:
            lr, momentum = _get_value(group["lr"]), group["momentum"]
            dampening, wd = group["dampening"], group["weight_decay"]
            params = [p for p in group["params"] if p.grad is not None]
            if _use_foreach(group, params):
                self._foreach_step(group, params, lr)
                continue
            for p in group["params"]:
                if p.grad is None:
                    continue
                grad = _grad(p, group["maximize"])
                if wd != 0:
                    grad = grad.add(p, alpha=wd)
                if momentum != 0:
                    state = self.state[p]
                    buf = state.get("momentum_buffer")
                    if buf is None:
                        buf = state["momentum_buffer"] = grad.clone().detach()
                    else:
                        buf.mul_(momentum).add_(grad, alpha=1 - dampening)
                    grad = grad.add(buf, alpha=momentum) if group["nesterov"] else buf
                p.add_(grad, alpha=-lr)
        return loss

    def _foreach_step(self, group, params, lr):
        """PyTorch's ``_multi_tensor_sgd`` for one group."""
        momentum, dampening, wd = group["momentum"], group["dampening"], group["weight_decay"]
        grads = [p.grad for p in params]
        if group["maximize"]:
            grads = _foreach_neg(grads)
        if wd != 0:
            if group["maximize"]:  # grads is already a fresh list: update it in place
                _foreach_add_(grads, params, alpha=wd)
            else:
                grads = _foreach_add(grads, params, alpha=wd)
        if momentum != 0:
            bufs = [self.state[p].get("momentum_buffer") for p in params]
            if all(b is not None for b in bufs):
                _foreach_mul_(bufs, momentum)
                _foreach_add_(bufs, grads, alpha=1 - dampening)
            else:
                for i, (p, g) in enumerate(zip(params, grads)):
                    if bufs[i] is None:
                        bufs[i] = self.state[p]["momentum_buffer"] = g.detach().clone()
                    else:
                        bufs[i].mul_(momentum).add_(g, alpha=1 - dampening)
            if group["nesterov"]:
                # As PyTorch: without maximize/weight decay this updates the .grad tensors.
                _foreach_add_(grads, bufs, alpha=momentum)
            else:
                grads = bufs
        _foreach_add_(params, grads, alpha=-lr)


def _closure_loss(closure):
    if closure is None:
        return None
    from ..autograd.grad_mode import enable_grad
    with enable_grad():
        return closure()


class Adam(Optimizer):
    _decoupled_default = False

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 amsgrad=False, *, foreach=None, maximize=False, capturable=False,
                 differentiable=False, fused=None, decoupled_weight_decay=False):
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
            group.setdefault("decoupled_weight_decay", self._decoupled_default)

    @_use_grad
    def step(self, closure=None):
        loss = _closure_loss(closure)
        for group in self.param_groups:
            beta1, beta2 = group["betas"]
            lr, eps, wd = _get_value(group["lr"]), group["eps"], group["weight_decay"]
            params = [p for p in group["params"] if p.grad is not None]
            for p in params:
                _check_dense_grad(self, p)
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
            if group["fused"] and params:
                self._fused_step(group, params, lr)
                continue
            capturable = group["capturable"]
            if not capturable and _use_foreach(group, params):
                self._foreach_step(group, params, lr)
                continue
            for p in params:
                state = self.state[p]
                if capturable and not (p.device.type == state["step"].device.type == "cuda"):
                    raise AssertionError("If capturable=True, params and state_steps must be on "
                                         "supported devices: ['cuda'].")
                grad = _grad(p, group["maximize"])
                exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
                state["step"] += 1
                if wd != 0:
                    if group["decoupled_weight_decay"]:
                        p.mul_(1 - lr * wd)
                    else:
                        grad = grad.add(p, alpha=wd)
                exp_avg.lerp_(grad, 1 - beta1)
                exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
                if group["amsgrad"]:
                    max_sq = state["max_exp_avg_sq"]
                    max_sq.copy_(maximum(max_sq, exp_avg_sq))
                    sq = max_sq
                else:
                    sq = exp_avg_sq
                if capturable:
                    # PyTorch's capturable form: the step count and the bias corrections stay
                    # tensors on the device, which a CUDA graph replaying the step reads anew
                    step = state["step"]
                    step_size_neg = (lr / (1 - beta1 ** step)).neg()
                    bias_correction2_sqrt = (1 - beta2 ** step).sqrt()
                    denom = (sq.sqrt() / (bias_correction2_sqrt * step_size_neg)).add_(
                        eps / step_size_neg)
                    p.addcdiv_(exp_avg, denom)
                else:
                    step = state["step"].item()
                    step_size = lr / (1 - beta1 ** step)
                    bias_correction2_sqrt = (1 - beta2 ** step) ** 0.5
                    denom = (sq.sqrt() / bias_correction2_sqrt).add_(eps)
                    p.addcdiv_(exp_avg, denom, value=-step_size)
        return loss

    def _fused_step(self, group, params, lr):
        """PyTorch's ``_fused_adam``: one ``_fused_adam_``/``_fused_adamw_`` call per device.
        Under a GradScaler (``grad_scale``/``found_inf`` set by ``GradScaler.step``) the op
        unscales the gradients itself and changes nothing when an inf was found; the step counts
        are taken back then."""
        beta1, beta2 = group["betas"]
        grad_scale = getattr(self, "grad_scale", None)
        found_inf = getattr(self, "found_inf", None)
        op = _fused_adamw_ if group["decoupled_weight_decay"] else _fused_adam_
        for device in dict.fromkeys(p.device for p in params):
            on = [p for p in params if p.device == device]
            states = [self.state[p] for p in on]
            steps = [s["step"] for s in states]
            dev_scale = grad_scale.to(device) if grad_scale is not None else None
            dev_inf = found_inf.to(device) if found_inf is not None else None
            _foreach_add_(steps, 1)
            op(on, [p.grad for p in on], [s["exp_avg"] for s in states],
               [s["exp_avg_sq"] for s in states],
               [s["max_exp_avg_sq"] for s in states] if group["amsgrad"] else [], steps,
               amsgrad=group["amsgrad"], lr=lr, beta1=beta1, beta2=beta2,
               weight_decay=group["weight_decay"], eps=group["eps"], maximize=group["maximize"],
               grad_scale=dev_scale, found_inf=dev_inf)
            if dev_inf is not None:
                _foreach_add_(steps, [dev_inf] * len(steps), alpha=-1)

    def _foreach_step(self, group, params, lr):
        """PyTorch's ``_multi_tensor_adam`` (non-capturable) for one group."""
        beta1, beta2 = group["betas"]
        eps, wd, maximize = group["eps"], group["weight_decay"], group["maximize"]
        states = [self.state[p] for p in params]
        grads = [p.grad for p in params]
        exp_avgs = [s["exp_avg"] for s in states]
        exp_avg_sqs = [s["exp_avg_sq"] for s in states]
        steps = [s["step"] for s in states]
        if maximize:
            grads = _foreach_neg(grads)
        _foreach_add_(steps, 1)
        if wd != 0:
            if group["decoupled_weight_decay"]:
                _foreach_mul_(params, 1 - lr * wd)
            elif maximize:  # grads is already a fresh list: update it in place
                _foreach_add_(grads, params, alpha=wd)
            else:
                grads = _foreach_add(grads, params, alpha=wd)
        _foreach_lerp_(exp_avgs, grads, 1 - beta1)
        _foreach_mul_(exp_avg_sqs, beta2)
        _foreach_addcmul_(exp_avg_sqs, grads, grads, 1 - beta2)
        step_values = [s.item() for s in steps]
        step_size = [(lr / (1 - beta1 ** t)) * -1 for t in step_values]
        bias_correction2_sqrt = [(1 - beta2 ** t) ** 0.5 for t in step_values]
        if group["amsgrad"]:
            max_exp_avg_sqs = [s["max_exp_avg_sq"] for s in states]
            _foreach_maximum_(max_exp_avg_sqs, exp_avg_sqs)
            denom = _foreach_sqrt(max_exp_avg_sqs)
        else:
            denom = _foreach_sqrt(exp_avg_sqs)
        _foreach_div_(denom, bias_correction2_sqrt)
        _foreach_add_(denom, eps)
        _foreach_addcdiv_(params, exp_avgs, denom, step_size)


class AdamW(Adam):
    """Adam with decoupled weight decay (default 1e-2)."""

    _decoupled_default = True

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2,
                 amsgrad=False, *, maximize=False, foreach=None, capturable=False,
                 differentiable=False, fused=None):
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, foreach=foreach,
                         maximize=maximize, capturable=capturable,
                         differentiable=differentiable, fused=fused,
                         decoupled_weight_decay=True)


class Adamax(Optimizer):
    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 foreach=None, *, maximize=False, differentiable=False, capturable=False):
        _validate(lr=lr, eps=eps, betas=betas, weight_decay=weight_decay)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, foreach=foreach,
                        maximize=maximize, differentiable=differentiable, capturable=capturable)
        super().__init__(params, defaults)

    @_use_grad
    def step(self, closure=None):
        loss = _closure_loss(closure)
        for group in self.param_groups:
            beta1, beta2 = group["betas"]
            lr, eps, wd = _get_value(group["lr"]), group["eps"], group["weight_decay"]
            for p, state, grad in _params_with_state(self, group, ("exp_avg", "exp_inf")):
                state["step"] += 1
                if wd != 0:
                    grad = grad.add(p, alpha=wd)
                exp_avg, exp_inf = state["exp_avg"], state["exp_inf"]
                exp_avg.mul_(beta1).add_(grad, alpha=1 - beta1)
                exp_inf.copy_(maximum(exp_inf.mul_(beta2), grad.abs().add_(eps)))
                if group["capturable"]:  # PyTorch's capturable form: the step stays a tensor
                    neg_bias_correction = (beta1 ** state["step"] - 1).div_(lr)
                    p.addcdiv_(exp_avg, exp_inf * neg_bias_correction)
                else:
                    clr = lr / (1 - beta1 ** state["step"].item())
                    p.add_(exp_avg / exp_inf, alpha=-clr)
        return loss


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

    @_use_grad
    def step(self, closure=None):
        loss = _closure_loss(closure)
        for group in self.param_groups:
            beta1, beta2 = group["betas"]
            lr, eps, wd = _get_value(group["lr"]), group["eps"], group["weight_decay"]
            momentum_decay = group["momentum_decay"]
            for p, state, grad in _params_with_state(self, group, ("exp_avg", "exp_avg_sq"),
                                                     mu_product=1.0):
                exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
                state["step"] += 1
                capturable = group["capturable"]  # (the step and mu_product stay tensors)
                step = state["step"] if capturable else state["step"].item()
                bias_correction2 = 1 - beta2 ** step
                if wd != 0:
                    if group["decoupled_weight_decay"]:
                        p.mul_(1 - lr * wd)
                    else:
                        grad = grad.add(p, alpha=wd)
                mu = beta1 * (1.0 - 0.5 * (0.96 ** (step * momentum_decay)))
                mu_next = beta1 * (1.0 - 0.5 * (0.96 ** ((step + 1) * momentum_decay)))
                state["mu_product"] *= mu
                exp_avg.mul_(beta1).add_(grad, alpha=1 - beta1)
                exp_avg_sq.mul_(beta2).add_(grad * grad, alpha=1 - beta2)
                denom = exp_avg_sq.div(bias_correction2).sqrt().add_(eps)
                mu_product = state["mu_product"] if capturable else state["mu_product"].item()
                mu_product_next = mu_product * mu_next
                if capturable:  # PyTorch's form: the factors multiply tensors
                    p.addcdiv_(grad * (-lr * (1.0 - mu) / (1.0 - mu_product)), denom)
                    p.addcdiv_(exp_avg * (-lr * mu_next / (1.0 - mu_product_next)), denom)
                else:
                    p.add_(grad / denom, alpha=-lr * (1.0 - mu) / (1.0 - mu_product))
                    p.add_(exp_avg / denom, alpha=(-lr * mu_next) / (1.0 - mu_product_next))
        return loss


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

    @_use_grad
    def step(self, closure=None):
        loss = _closure_loss(closure)
        for group in self.param_groups:
            beta1, beta2 = group["betas"]
            lr, eps, wd = _get_value(group["lr"]), group["eps"], group["weight_decay"]
            for p, state, grad in _params_with_state(self, group, ("exp_avg", "exp_avg_sq")):
                exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
                state["step"] += 1
                capturable = group["capturable"]
                step = state["step"] if capturable else state["step"].item()
                if wd != 0:
                    if group["decoupled_weight_decay"]:
                        p.mul_(1 - lr * wd)
                    else:
                        grad = grad.add(p, alpha=wd)
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
                    p.add_(bias_corrected_exp_avg * lr * update, alpha=-1.0)
                elif rho_t > 5.0:
                    rect = ((rho_t - 4) * (rho_t - 2) * rho_inf
                            / ((rho_inf - 4) * (rho_inf - 2) * rho_t)) ** 0.5
                    adaptive_lr = (bias_correction2 ** 0.5) / exp_avg_sq.sqrt().add_(eps)
                    p.add_(bias_corrected_exp_avg * lr * adaptive_lr * rect, alpha=-1.0)
                else:
                    p.add_(bias_corrected_exp_avg * lr, alpha=-1.0)
        return loss


class RMSprop(Optimizer):
    def __init__(self, params, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0, momentum=0,
                 centered=False, capturable=False, foreach=None, maximize=False,
                 differentiable=False):
        _validate(lr=lr, eps=eps, momentum=momentum, weight_decay=weight_decay, alpha=alpha)
        defaults = dict(lr=lr, momentum=momentum, alpha=alpha, eps=eps, centered=centered,
                        weight_decay=weight_decay, capturable=capturable, foreach=foreach,
                        maximize=maximize, differentiable=differentiable)
        super().__init__(params, defaults)

    @_use_grad
    def step(self, closure=None):
        loss = _closure_loss(closure)
        for group in self.param_groups:
            lr, alpha, eps = _get_value(group["lr"]), group["alpha"], group["eps"]
            wd, momentum = group["weight_decay"], group["momentum"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                _check_dense_grad(self, p)
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = _step_tensor(0.0, group, p)
                    state["square_avg"] = zeros_like(p)
                    if momentum > 0:
                        state["momentum_buffer"] = zeros_like(p)
                    if group["centered"]:
                        state["grad_avg"] = zeros_like(p)
                grad = _grad(p, group["maximize"])
                state["step"] += 1
                if wd != 0:
                    grad = grad.add(p, alpha=wd)
                square_avg = state["square_avg"]
                square_avg.mul_(alpha).add_(grad * grad, alpha=1 - alpha)
                if group["centered"]:
                    grad_avg = state["grad_avg"]
                    grad_avg.mul_(alpha).add_(grad, alpha=1 - alpha)
                    avg = square_avg.sub(grad_avg * grad_avg).sqrt_()
                else:
                    avg = square_avg.sqrt()
                avg = avg.add_(eps)
                if momentum > 0:
                    buf = state["momentum_buffer"]
                    buf.mul_(momentum).add_(grad / avg)
                    p.add_(buf, alpha=-lr)
                else:
                    p.add_(grad / avg, alpha=-lr)
        return loss


class Adagrad(Optimizer):
    def __init__(self, params, lr=1e-2, lr_decay=0, weight_decay=0, initial_accumulator_value=0,
                 eps=1e-10, foreach=None, *, maximize=False, differentiable=False, fused=None):
        _validate(lr=lr, lr_decay=lr_decay, weight_decay=weight_decay,
                  initial_accumulator_value=initial_accumulator_value, eps=eps)
        defaults = dict(lr=lr, lr_decay=lr_decay, eps=eps, weight_decay=weight_decay,
                        initial_accumulator_value=initial_accumulator_value, foreach=foreach,
                        maximize=maximize, differentiable=differentiable, fused=fused)
        super().__init__(params, defaults)
        # Unlike the others, Adagrad creates its state up front.
        for group in self.param_groups:
            for p in group["params"]:
                state = self.state[p]
                state["step"] = _step_tensor()
                state["sum"] = full_like(p, group["initial_accumulator_value"])

    @_use_grad
    def step(self, closure=None):
        loss = _closure_loss(closure)
        for group in self.param_groups:
            lr, eps, wd = _get_value(group["lr"]), group["eps"], group["weight_decay"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self.state[p]
                state["step"] += 1
                step = state["step"].item()
                grad = _grad(p, group["maximize"])
                clr = lr / (1 + (step - 1) * group["lr_decay"])
                if grad.is_sparse:
                    _sparse_adagrad(p, grad, state["sum"], clr, eps, wd)
                    continue
                if wd != 0:
                    grad = grad.add(p, alpha=wd)
                state["sum"].add_(grad * grad)
                std = state["sum"].sqrt().add_(eps)
                p.add_(grad / std, alpha=-clr)
        return loss


def _sparse_adagrad(p, grad, state_sum, clr, eps, wd):
    """PyTorch's sparse Adagrad step: the sums and the parameter change at the gradient's
    (coalesced) entries only."""
    if wd != 0:
        raise RuntimeError("weight_decay option is not compatible with sparse gradients")
    grad = grad.coalesce()
    indices, values = grad._indices(), grad._values()
    state_sum.add_(sparse_coo_tensor(indices, values.pow(2), grad.shape))
    std_values = state_sum.sparse_mask(grad)._values().sqrt_().add_(eps)
    p.add_(sparse_coo_tensor(indices, values / std_values, grad.shape), alpha=-clr)


class Adadelta(Optimizer):
    def __init__(self, params, lr=1.0, rho=0.9, eps=1e-6, weight_decay=0, foreach=None, *,
                 capturable=False, maximize=False, differentiable=False):
        _validate(lr=lr, rho=rho, eps=eps, weight_decay=weight_decay)
        defaults = dict(lr=lr, rho=rho, eps=eps, weight_decay=weight_decay, maximize=maximize,
                        capturable=capturable, foreach=foreach, differentiable=differentiable)
        super().__init__(params, defaults)

    @_use_grad
    def step(self, closure=None):
        loss = _closure_loss(closure)
        for group in self.param_groups:
            lr, rho, eps, wd = (_get_value(group["lr"]), group["rho"], group["eps"],
                                group["weight_decay"])
            for p, state, grad in _params_with_state(self, group, ("square_avg", "acc_delta")):
                state["step"] += 1
                if wd != 0:
                    grad = grad.add(p, alpha=wd)
                square_avg, acc_delta = state["square_avg"], state["acc_delta"]
                square_avg.mul_(rho).add_(grad * grad, alpha=1 - rho)
                std = square_avg.add(eps).sqrt_()
                delta = acc_delta.add(eps).sqrt_()
                delta.div_(std).mul_(grad)
                acc_delta.mul_(rho).add_(delta * delta, alpha=1 - rho)
                p.add_(delta, alpha=-lr)
        return loss


