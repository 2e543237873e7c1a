"""PyTorch's ``torch.optim._functional``: the optimizers' functional forms in one namespace
(re-exported from their modules), and ``sparse_adam``, SparseAdam's, which lives here."""
import math

from .. import sparse_coo_tensor
from .adadelta import adadelta  # noqa: F401
from .adagrad import _make_sparse, adagrad  # noqa: F401
from .adam import adam  # noqa: F401
from .adamax import adamax  # noqa: F401
from .adamw import adamw  # noqa: F401
from .asgd import asgd  # noqa: F401
from .nadam import nadam  # noqa: F401
from .radam import radam  # noqa: F401
from .rmsprop import rmsprop  # noqa: F401
from .rprop import rprop  # noqa: F401
from .sgd import sgd  # noqa: F401


def sparse_adam(params, grads, exp_avgs, exp_avg_sqs, state_steps, *, eps, beta1, beta2, lr,
                maximize):
    """SparseAdam's update (see :class:`SparseAdam`): the moments and the parameters change
    only at the entries of each sparse gradient; ``state_steps`` are Python ints."""
    for param, grad, exp_avg, exp_avg_sq, step in zip(params, grads, exp_avgs, exp_avg_sqs,
                                                      state_steps):
        grad = -grad if maximize else grad
        grad = grad.coalesce()  # the update is not linear: one entry per index
        indices, values = grad._indices(), grad._values()
        if values.numel() == 0:
            continue
        size = grad.shape

        def make_sparse(v):
            return sparse_coo_tensor(indices, v, size)

        # old <- b * old + (1 - b) * new, as old += (1 - b) * (new - old)
        old_exp_avg = exp_avg.sparse_mask(grad)._values()
        exp_avg_update = values.sub(old_exp_avg).mul_(1 - beta1)
        exp_avg.add_(make_sparse(exp_avg_update))
        old_exp_avg_sq = exp_avg_sq.sparse_mask(grad)._values()
        exp_avg_sq_update = values.pow(2).sub_(old_exp_avg_sq).mul_(1 - beta2)
        exp_avg_sq.add_(make_sparse(exp_avg_sq_update))
        # dense additions again, rather than another sparse_mask
        numer = exp_avg_update.add_(old_exp_avg)
        denom = exp_avg_sq_update.add_(old_exp_avg_sq).sqrt_().add_(eps)
        step_size = lr * math.sqrt(1 - beta2 ** step) / (1 - beta1 ** step)
        param.add_(make_sparse(-step_size * numer.div_(denom)))
