"""``Rprop``: resilient backpropagation (PyTorch's ``torch.optim.rprop``), and ``rprop``, its
functional form.

Each element keeps its own step size, grown by ``etaplus`` while its gradient keeps its sign and
shrunk by ``etaminus`` when the sign flips (that element then skips the update); the parameter
moves by the step size against the gradient's sign only. State per parameter: ``step`` (a scalar
tensor), ``prev`` (the last gradient used) and ``step_size``. Complex parameters are updated as
pairs of independent reals (their step sizes start at ``lr + lr*j``).
"""
from .. import (Tensor, _foreach_add_, _foreach_addcmul_, _foreach_copy_, _foreach_mul,
                _foreach_mul_, _foreach_neg_, _foreach_sign_, full_like, is_complex, tensor,
                view_as_real, where, zeros, zeros_like)
from .optimizer import (Optimizer, _check_capturable, _closure_loss, _default_to_foreach,
                        _get_scalar_dtype, _get_value, _group_tensors_by_device_and_dtype,
                        _use_grad_for_differentiable, _view_as_real)

__all__ = ["Rprop", "rprop"]

_CAPTURABLE_MESSAGE = "If capturable=True, params and state_steps must be on supported devices"


class Rprop(Optimizer):
    """Resilient backpropagation: ``Rprop(params, lr=1e-2, etas=(0.5, 1.2),
    step_sizes=(1e-6, 50), *, capturable=False, foreach=None, maximize=False,
    differentiable=False)``."""

    def __init__(self, params, lr=1e-2, etas=(0.5, 1.2), step_sizes=(1e-6, 50), *,
                 capturable=False, foreach=None, maximize=False, differentiable=False):
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 < etas[0] < 1.0 < etas[1]:
            raise ValueError(f"Invalid eta values: {etas[0]}, {etas[1]}")
        defaults = dict(lr=lr, etas=etas, step_sizes=step_sizes, foreach=foreach,
                        maximize=maximize, differentiable=differentiable, capturable=capturable)
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
                if len(p_state) != 0 and not isinstance(p_state["step"], Tensor):
                    # a state saved when the step count was a Python number
                    device = p.device if group["capturable"] else None
                    p_state["step"] = tensor(float(p_state["step"]), dtype=_get_scalar_dtype(),
                                             device=device)

    def _init_group(self, group, params, grads, prevs, step_sizes, state_steps):
        has_complex = False
        for p in group["params"]:
            if p.grad is None:
                continue
            has_complex |= is_complex(p)
            params.append(p)
            if p.grad.is_sparse:
                raise RuntimeError("Rprop does not support sparse gradients")
            grads.append(p.grad)
            state = self.state[p]
            if len(state) == 0:
                # the count stays on the host unless a captured graph must advance it itself
                state["step"] = zeros((), dtype=_get_scalar_dtype(),
                                      device=p.device if group["capturable"] else None)
                state["prev"] = zeros_like(p)
                lr = _get_value(group["lr"])
                # a complex element is two reals, each with its own (non-zero) step size
                state["step_size"] = full_like(p.grad, complex(lr, lr) if is_complex(p) else lr)
            prevs.append(state["prev"])
            step_sizes.append(state["step_size"])
            state_steps.append(state["step"])
        return has_complex

    @_use_grad_for_differentiable
    def step(self, closure=None):
        loss = _closure_loss(closure)
        for group in self.param_groups:
            params, grads, prevs, step_sizes, state_steps = [], [], [], [], []
            has_complex = self._init_group(group, params, grads, prevs, step_sizes, state_steps)
            etaminus, etaplus = group["etas"]
            step_size_min, step_size_max = group["step_sizes"]
            rprop(params, grads, prevs, step_sizes, state_steps, foreach=group["foreach"],
                  capturable=group["capturable"], maximize=group["maximize"],
                  differentiable=group["differentiable"], has_complex=has_complex,
                  step_size_min=step_size_min, step_size_max=step_size_max,
                  etaminus=etaminus, etaplus=etaplus)
        return loss


def _factors_from_signs(sign, etaminus, etaplus, capturable):
    """Turn the signs of ``grad * prev`` into the step sizes' factors, in place: ``etaplus``
    where the gradient kept its sign, ``etaminus`` where it flipped, 1 where either is zero.
    Capturable steps select with ``where`` (boolean-mask assignment reads the mask's count on
    the host)."""
    if capturable:
        sign.copy_(where(sign.gt(0), etaplus, sign))
        sign.copy_(where(sign.lt(0), etaminus, sign))
        sign.copy_(where(sign.eq(0), 1, sign))
    else:
        sign[sign.gt(0)] = etaplus
        sign[sign.lt(0)] = etaminus
        sign[sign.eq(0)] = 1


def _single_tensor_rprop(params, grads, prevs, step_sizes, state_steps, *, step_size_min,
                         step_size_max, etaminus, etaplus, maximize, capturable, differentiable,
                         has_complex):
    for param, grad, prev, step_size, step in zip(params, grads, prevs, step_sizes, state_steps):
        grad = -grad if maximize else grad
        if capturable:
            _check_capturable([(param, step)], _CAPTURABLE_MESSAGE)
        step += 1
        if is_complex(param):
            grad, prev = view_as_real(grad), view_as_real(prev)
            param, step_size = view_as_real(param), view_as_real(step_size)
        # prev is overwritten below; a recorded product must keep the value it read
        sign = grad.mul(prev.clone() if differentiable else prev).sign()
        _factors_from_signs(sign, etaminus, etaplus, capturable)
        step_size.mul_(sign).clamp_(step_size_min, step_size_max)
        # where the sign flipped the element stays put, and the next step sees a zero gradient
        grad = grad.clone()
        if capturable:
            grad.copy_(where(sign.eq(etaminus), 0, grad))
        else:
            grad[sign.eq(etaminus)] = 0
        param.addcmul_(grad.sign(), step_size, value=-1)
        prev.copy_(grad)


def _multi_tensor_rprop(params, grads, prevs, step_sizes, state_steps, *, step_size_min,
                        step_size_max, etaminus, etaplus, maximize, capturable, differentiable,
                        has_complex):
    if len(params) == 0:
        return
    if differentiable:
        raise AssertionError("_foreach ops don't support autograd")
    if capturable:
        _check_capturable(zip(params, state_steps), _CAPTURABLE_MESSAGE)
    grouped = _group_tensors_by_device_and_dtype([params, grads, prevs, step_sizes, state_steps])
    for (g_params, g_grads, g_prevs, g_step_sizes, g_steps), _ in grouped.values():
        _foreach_add_(g_steps, 1)
        if has_complex:
            _view_as_real(g_params, g_grads, g_prevs, g_step_sizes)
        signs = _foreach_mul(g_grads, g_prevs)
        if maximize:
            _foreach_neg_(signs)
        # prev takes this step's gradient now and is zeroed below where the sign flipped: it
        # serves as the step's gradient buffer and ends up as the next step's prev
        _foreach_copy_(g_prevs, g_grads)
        if maximize:
            _foreach_neg_(g_prevs)
        _foreach_sign_(signs)
        for sign in signs:
            _factors_from_signs(sign, etaminus, etaplus, capturable)
        _foreach_mul_(g_step_sizes, signs)
        for step_size in g_step_sizes:
            step_size.clamp_(step_size_min, step_size_max)
        for grad, sign in zip(g_prevs, signs):
            grad.copy_(where(sign.eq(etaminus), 0, grad))
        _foreach_addcmul_(g_params, [grad.sign() for grad in g_prevs], g_step_sizes, value=-1)


def rprop(params, grads, prevs, step_sizes, state_steps, foreach=None, capturable=False,
          maximize=False, differentiable=False, has_complex=False, *, step_size_min,
          step_size_max, etaminus, etaplus):
    """The Rprop update of ``params`` in place, given their gradients and state (see
    :class:`Rprop`); ``foreach=None`` picks PyTorch's default."""
    if not all(isinstance(t, Tensor) for t in state_steps):
        raise RuntimeError("API has changed, `state_steps` argument must contain a list of "
                           "singleton tensors")
    if foreach is None:
        foreach = _default_to_foreach(params, differentiable)
    func = _multi_tensor_rprop if foreach else _single_tensor_rprop
    func(params, grads, prevs, step_sizes, state_steps, step_size_min=step_size_min,
         step_size_max=step_size_max, etaminus=etaminus, etaplus=etaplus, maximize=maximize,
         capturable=capturable, differentiable=differentiable, has_complex=has_complex)
