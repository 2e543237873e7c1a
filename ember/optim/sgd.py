"""``SGD``: stochastic gradient descent with momentum, dampening, Nesterov momentum and weight
decay (PyTorch's ``torch.optim.sgd``), and ``sgd``, its functional form.

The per-tensor loop and the multi-tensor ("foreach") path compute the same bits; ``foreach=None``
takes the multi-tensor one wherever ember's foreach kernels serve, the CPU included
(``optimizer._default_foreach_dense``). Parameters with sparse gradients take the loop.
"""
from .. import _foreach_add, _foreach_add_, _foreach_div, _foreach_mul_, _foreach_neg
from .optimizer import (Optimizer, _closure_loss, _default_foreach_dense,
                        _device_dtype_check_for_fused, _get_value,
                        _group_tensors_by_device_and_dtype, _use_grad, _validate)

__all__ = ["SGD", "sgd"]


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
        if fused:
            self._need_device_dtype_check_for_fused = True
            if differentiable:
                raise RuntimeError("`fused` does not support `differentiable`")
            if foreach:
                raise RuntimeError("`fused` and `foreach` cannot be `True` together.")

    def __setstate__(self, state):
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("nesterov", False)
            group.setdefault("maximize", False)
            group.setdefault("foreach", None)
            group.setdefault("differentiable", False)
            group.setdefault("fused", False)

    def _init_group(self, group, params, grads, momentum_buffer_list):
        has_sparse_grad = False
        for p in group["params"]:
            if p.grad is None:
                continue
            if group["fused"] and getattr(self, "_need_device_dtype_check_for_fused", True):
                _device_dtype_check_for_fused(p)
                self._need_device_dtype_check_for_fused = False
            params.append(p)
            grads.append(p.grad)
            has_sparse_grad |= p.grad.is_sparse
            if group["momentum"] != 0:
                momentum_buffer_list.append(self.state[p].get("momentum_buffer"))
        return has_sparse_grad

    @_use_grad
    def step(self, closure=None):
        loss = _closure_loss(closure)
        for group in self.param_groups:
            params, grads, momentum_buffer_list = [], [], []
            has_sparse_grad = self._init_group(group, params, grads, momentum_buffer_list)
            sgd(params, grads, momentum_buffer_list, weight_decay=group["weight_decay"],
                momentum=group["momentum"], lr=group["lr"], dampening=group["dampening"],
                nesterov=group["nesterov"], maximize=group["maximize"],
                has_sparse_grad=has_sparse_grad, foreach=group["foreach"],
                fused=group["fused"], grad_scale=getattr(self, "grad_scale", None),
                found_inf=getattr(self, "found_inf", None))
            if group["momentum"] != 0:  # the buffers made on a first step
                for p, buf in zip(params, momentum_buffer_list):
                    self.state[p]["momentum_buffer"] = buf
        return loss


def _single_tensor_sgd(params, grads, momentum_buffer_list, grad_scale, found_inf, *,
                       weight_decay, momentum, lr, dampening, nesterov, maximize,
                       has_sparse_grad):
    if grad_scale is not None or found_inf is not None:
        raise AssertionError("Expected grad_scale and found_inf to be None")
    lr = _get_value(lr)
    for i, param in enumerate(params):
        grad = -grads[i] if maximize else grads[i]
        if weight_decay != 0:
            grad = grad.add(param, alpha=weight_decay)
        if momentum != 0:
            buf = momentum_buffer_list[i]
            if buf is None:
                buf = momentum_buffer_list[i] = grad.detach().clone()
            else:
                buf.mul_(momentum).add_(grad, alpha=1 - dampening)
            grad = grad.add(buf, alpha=momentum) if nesterov else buf
        param.add_(grad, alpha=-lr)


def _multi_tensor_sgd(params, grads, momentum_buffer_list, grad_scale, found_inf, *,
                      weight_decay, momentum, lr, dampening, nesterov, maximize,
                      has_sparse_grad):
    if grad_scale is not None or found_inf is not None:
        raise AssertionError("Expected grad_scale and found_inf to be None")
    if len(params) == 0:
        return
    lr = _get_value(lr)
    grouped = _group_tensors_by_device_and_dtype(
        [params, grads, momentum_buffer_list or [None] * len(params)], with_indices=True)
    for (device_params, device_grads, device_bufs), device_indices in grouped.values():
        if has_sparse_grad and any(g.is_sparse for g in device_grads):
            # ember's foreach kernels are dense: these parameters take the loop
            _single_tensor_sgd(device_params, device_grads, device_bufs, None, None,
                               weight_decay=weight_decay, momentum=momentum, lr=lr,
                               dampening=dampening, nesterov=nesterov, maximize=maximize,
                               has_sparse_grad=True)
            if momentum != 0:
                for i, buf in zip(device_indices, device_bufs):
                    momentum_buffer_list[i] = buf
            continue
        if maximize:
            device_grads = _foreach_neg(device_grads)
        if weight_decay != 0:
            if maximize:  # device_grads is already a fresh list: update it in place
                _foreach_add_(device_grads, device_params, alpha=weight_decay)
            else:
                device_grads = _foreach_add(device_grads, device_params, alpha=weight_decay)
        if momentum != 0:
            if all(b is not None for b in device_bufs):
                bufs = device_bufs
                _foreach_mul_(bufs, momentum)
                _foreach_add_(bufs, device_grads, alpha=1 - dampening)
            else:
                bufs = []
                for i, g, buf in zip(device_indices, device_grads, device_bufs):
                    if buf is None:
                        buf = momentum_buffer_list[i] = g.detach().clone()
                    else:
                        buf.mul_(momentum).add_(g, alpha=1 - dampening)
                    bufs.append(buf)
            if nesterov:
                # As PyTorch: without maximize/weight decay this updates the .grad tensors.
                _foreach_add_(device_grads, bufs, alpha=momentum)
            else:
                device_grads = bufs
        _foreach_add_(device_params, device_grads, alpha=-lr)


def _fused_sgd(params, grads, momentum_buffer_list, grad_scale, found_inf, *, weight_decay,
               momentum, lr, dampening, nesterov, maximize, has_sparse_grad):
    """PyTorch's ``_fused_sgd``. ember has no ``_fused_sgd_`` kernel: the update is the
    multi-tensor one, after the fused kernel's own handling of a GradScaler's scale (the
    gradients unscaled) and ``found_inf`` (no update at all)."""
    if not params:
        return
    if has_sparse_grad:
        raise RuntimeError("`_fused_sgd` does not support sparse gradients")
    if found_inf is not None and found_inf.item():
        return
    if grad_scale is not None:
        grads = _foreach_div(grads, [grad_scale.to(p.device) for p in params])
    _multi_tensor_sgd(params, grads, momentum_buffer_list, None, None,
                      weight_decay=weight_decay, momentum=momentum, lr=lr,
                      dampening=dampening, nesterov=nesterov, maximize=maximize,
                      has_sparse_grad=False)


def sgd(params, d_p_list, momentum_buffer_list, has_sparse_grad=False, foreach=None,
        fused=None, grad_scale=None, found_inf=None, *, weight_decay, momentum, lr, dampening,
        nesterov, maximize):
    """The SGD update of ``params`` in place (see :class:`SGD`); a ``None`` entry of
    ``momentum_buffer_list`` is replaced by the buffer a first step makes."""
    if foreach is None and fused is None:
        foreach = _default_foreach_dense(params, d_p_list, differentiable=False)
    if foreach:
        func = _multi_tensor_sgd
    elif fused:
        func = _fused_sgd
    else:
        func = _single_tensor_sgd
    func(params, d_p_list, momentum_buffer_list, grad_scale, found_inf,
         weight_decay=weight_decay, momentum=momentum, lr=lr, dampening=dampening,
         nesterov=nesterov, has_sparse_grad=has_sparse_grad, maximize=maximize)
