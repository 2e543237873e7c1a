"""``Muon`` (PyTorch's ``torch.optim._muon``, exported as ``ember.optim.Muon``), and ``muon``,
its functional form.

For 2-D parameters (hidden-layer weights): SGD momentum (Nesterov by default) whose update is
orthogonalised by a few Newton-Schulz iterations in bfloat16 before it is applied, with
decoupled weight decay and a learning rate scaled by the matrix's shape. State per parameter:
``momentum_buffer``.
"""
import math

from .. import Tensor, addmm, is_complex, zeros_like
from .optimizer import Optimizer, _closure_loss, _to_scalar, _use_grad

__all__ = ["Muon"]

# The constants of Keller Jordan's Muon (https://kellerjordan.github.io/posts/muon/): the
# quintic iteration's coefficients maximise its slope at zero.
EPS = 1e-7
DEFAULT_A = 3.4445
DEFAULT_B = -4.7750
DEFAULT_C = 2.0315
DEFAULT_NS_STEPS = 5


def _zeropower_via_newtonschulz(grad, ns_coefficients, ns_steps, eps):
    """An approximate orthogonalisation ``U S' V^T`` of ``grad = U S V^T`` (``S'`` roughly
    within 0.5 to 1.5, which trains as well as ``U V^T``), by ``ns_steps`` quintic
    Newton-Schulz iterations in bfloat16, on the wide orientation of the matrix."""
    if ns_steps >= 100:
        raise ValueError("Number of steps must be less than 100 for computational efficiency")
    if len(grad.shape) != 2:
        raise ValueError("Input tensor gradient must be a 2D matrix")
    if len(ns_coefficients) != 3:
        raise ValueError("Coefficients must be a tuple of exactly 3 values")
    a, b, c = ns_coefficients
    ortho_grad = grad.bfloat16()
    tall = grad.size(0) > grad.size(1)
    if tall:
        ortho_grad = ortho_grad.T
    # a Frobenius norm of at most 1 bounds the spectral norm, where the iteration converges
    ortho_grad.div_(ortho_grad.norm().clamp(min=eps))
    for _ in range(ns_steps):
        gram_matrix = ortho_grad @ ortho_grad.T
        gram_update = addmm(gram_matrix, gram_matrix, gram_matrix, beta=b, alpha=c)
        ortho_grad = addmm(ortho_grad, gram_update, ortho_grad, beta=a)
    return ortho_grad.T if tall else ortho_grad


def _adjust_lr(lr, adjust_lr_fn, param_shape):
    """The learning rate for a matrix of ``param_shape``: ``"original"`` (the default) keeps the
    update's RMS alike across rectangular shapes, ``"match_rms_adamw"`` matches AdamW's."""
    rows, cols = param_shape[:2]
    if adjust_lr_fn is None or adjust_lr_fn == "original":
        ratio = math.sqrt(max(1, rows / cols))
    elif adjust_lr_fn == "match_rms_adamw":
        ratio = 0.2 * math.sqrt(max(rows, cols))
    else:
        ratio = 1.0
    return lr * ratio


class Muon(Optimizer):
    """Muon: ``Muon(params, lr=1e-3, weight_decay=0.1, momentum=0.95, nesterov=True,
    ns_coefficients=(3.4445, -4.775, 2.0315), eps=1e-7, ns_steps=5, adjust_lr_fn=None)``;
    every parameter must be 2-D (optimise biases and embeddings with e.g. AdamW)."""

    def __init__(self, params, lr=1e-3, weight_decay=0.1, momentum=0.95, nesterov=True,
                 ns_coefficients=(DEFAULT_A, DEFAULT_B, DEFAULT_C), eps=EPS,
                 ns_steps=DEFAULT_NS_STEPS, adjust_lr_fn=None):
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 <= lr:
            raise ValueError(f"Learning rate should be >= 0 but is: {lr}")
        if not 0.0 <= momentum:
            raise ValueError(f"momentum should be >= 0 but is: {momentum}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"weight decay should be >= 0 but is: {weight_decay}")
        if adjust_lr_fn is not None and adjust_lr_fn not in ["original", "match_rms_adamw"]:
            raise ValueError(f"Adjust learning rate function {adjust_lr_fn} is not supported")
        defaults = dict(lr=lr, weight_decay=weight_decay, momentum=momentum, nesterov=nesterov,
                        ns_coefficients=ns_coefficients, eps=eps, ns_steps=ns_steps,
                        adjust_lr_fn=adjust_lr_fn)
        super().__init__(params, defaults)
        for group in self.param_groups:
            for p in group["params"]:
                if p.ndim != 2:
                    raise ValueError("Muon only supports 2D parameters whereas we found a "
                                     f"parameter with size: {p.size()}")

    def _init_group(self, group, params, grads, momentum_bufs):
        for p in group["params"]:
            if p.grad is None:
                continue
            if is_complex(p):
                raise RuntimeError("Muon does not support complex parameters")
            if p.grad.is_sparse:
                raise RuntimeError("Muon does not support sparse gradients")
            params.append(p)
            grads.append(p.grad)
            state = self.state[p]
            if "momentum_buffer" not in state:
                state["momentum_buffer"] = zeros_like(p.grad)
            momentum_bufs.append(state["momentum_buffer"])
        return False  # complex parameters were refused above

    @_use_grad
    def step(self, closure=None):
        loss = _closure_loss(closure)
        for group in self.param_groups:
            params, grads, momentum_bufs = [], [], []
            has_complex = self._init_group(group, params, grads, momentum_bufs)
            muon(params, grads, momentum_bufs, lr=group["lr"],
                 weight_decay=group["weight_decay"], momentum=group["momentum"],
                 nesterov=group["nesterov"], ns_coefficients=group["ns_coefficients"],
                 eps=group["eps"], ns_steps=group["ns_steps"],
                 adjust_lr_fn=group["adjust_lr_fn"], has_complex=has_complex)
        return loss


def _single_tensor_muon(params, grads, momentum_bufs, *, lr, weight_decay, momentum, nesterov,
                        ns_coefficients, ns_steps, eps, adjust_lr_fn, has_complex):
    lr = _to_scalar(lr)
    if has_complex:
        raise ValueError("Complex parameters are not supported")
    for param, grad, buf in zip(params, grads, momentum_bufs):
        if grad.ndim != 2:
            raise ValueError("Param gradient must be a 2D matrix")
        buf.lerp_(grad, 1 - momentum)
        update = grad.lerp(buf, momentum) if nesterov else buf
        update = _zeropower_via_newtonschulz(update, ns_coefficients, ns_steps, eps)
        adjusted_lr = _adjust_lr(lr, adjust_lr_fn, param.shape)
        param.mul_(1 - lr * weight_decay)
        param.add_(update, alpha=-adjusted_lr)


def muon(params, grads, muon_momentum_bufs, *, foreach=None, lr, weight_decay, momentum, nesterov,
         ns_coefficients, ns_steps, eps, adjust_lr_fn, has_complex):
    """The Muon update of ``params`` in place (see :class:`Muon`); there is no multi-tensor
    path (``foreach=True`` is refused, as in PyTorch)."""
    if foreach:
        raise RuntimeError("Foreach is not supported for Muon yet")
    _single_tensor_muon(params, grads, muon_momentum_bufs, lr=lr, weight_decay=weight_decay,
                        momentum=momentum, nesterov=nesterov, ns_coefficients=ns_coefficients,
                        ns_steps=ns_steps, eps=eps, adjust_lr_fn=adjust_lr_fn,
                        has_complex=has_complex)
