"""``SparseAdam``: Adam for parameters with sparse gradients (``nn.Embedding(sparse=True)``),
PyTorch's lazy variant: the moments and the parameter change only at the rows a step's gradient
has."""
import math

from .. import sparse_coo_tensor, zeros_like
from .optimizer import Optimizer, _get_value, _use_grad

__all__ = ["SparseAdam"]


class SparseAdam(Optimizer):
    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, maximize=False):
        if hasattr(lr, "numel") and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 < lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 < eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        for i, b in enumerate(betas):
            if not 0.0 <= b < 1.0:
                raise ValueError(f"Invalid beta parameter at index {i}: {b}")
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, maximize=maximize))
        for kind, test in (("Sparse", "is_sparse"), ("Complex", "is_complex")):
            found = [[g, i] for g, group in enumerate(self.param_groups)
                     for i, p in enumerate(group["params"])
                     if (p.is_sparse if test == "is_sparse" else p.is_complex())]
            if found:
                what = ("SparseAdam requires dense parameter tensors" if kind == "Sparse"
                        else "SparseAdam does not support complex parameters")
                raise ValueError(f"{kind} params at indices {found}: {what}")

    @_use_grad
    def step(self, closure=None):
        loss = None
        if closure is not None:
            from .. import enable_grad
            with enable_grad():
                loss = closure()
        for group in self.param_groups:
            beta1, beta2 = group["betas"]
            lr, eps = _get_value(group["lr"]), group["eps"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                if not p.grad.is_sparse:
                    raise RuntimeError("SparseAdam does not support dense gradients, please "
                                       "consider Adam instead")
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = 0
                    state["exp_avg"] = zeros_like(p)
                    state["exp_avg_sq"] = zeros_like(p)
                state["step"] += 1
                _sparse_adam(p, -p.grad if group.get("maximize", False) else p.grad,
                             state["exp_avg"], state["exp_avg_sq"], state["step"], lr, beta1,
                             beta2, eps)
        return loss


def _sparse_adam(param, grad, exp_avg, exp_avg_sq, step, lr, beta1, beta2, eps):
    """PyTorch's ``optim._functional.sparse_adam`` for one parameter."""
    grad = grad.coalesce()  # the update is not linear: one entry per index
    indices, values = grad._indices(), grad._values()
    if values.numel() == 0:
        return
    size = grad.shape

    def make_sparse(v):
        return sparse_coo_tensor(indices, v, size)

    old_exp_avg = exp_avg.sparse_mask(grad)._values()
    exp_avg_update = values.sub(old_exp_avg).mul_(1 - beta1)
    exp_avg.add_(make_sparse(exp_avg_update))
    old_exp_avg_sq = exp_avg_sq.sparse_mask(grad)._values()
    exp_avg_sq_update = values.pow(2).sub_(old_exp_avg_sq).mul_(1 - beta2)
    exp_avg_sq.add_(make_sparse(exp_avg_sq_update))
    numer = exp_avg_update.add_(old_exp_avg)
    denom = exp_avg_sq_update.add_(old_exp_avg_sq).sqrt_().add_(eps)
    step_size = lr * math.sqrt(1 - beta2 ** step) / (1 - beta1 ** step)
    param.add_(make_sparse(-step_size * numer.div_(denom)))
