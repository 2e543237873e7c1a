"""``SparseAdam``: Adam for parameters with sparse gradients (``nn.Embedding(sparse=True)``),
PyTorch's lazy variant: the moments and the parameter change only at the rows a step's gradient
has."""
from .. import zeros_like
from . import _functional as F
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
                F.sparse_adam([p], [p.grad], [state["exp_avg"]], [state["exp_avg_sq"]],
                              [state["step"]], eps=eps, beta1=beta1, beta2=beta2, lr=lr,
                              maximize=group.get("maximize", False))
        return loss
