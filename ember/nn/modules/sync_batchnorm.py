"""``SyncBatchNorm``: batch normalization whose statistics are taken over the whole batch of all
ranks of a process group (all-reduced sums in forward, all-reduced gradient sums in backward),
and ``convert_sync_batchnorm`` to swap a model's BatchNorm layers for it."""
import ember

from ...autograd.function import Function
from .. import functional as F
from .batchnorm import _BatchNorm

__all__ = ["SyncBatchNorm"]


def _bshape(x, v):
    return v.reshape([1, -1] + [1] * (x.dim() - 2))


class _SyncBatchNormFn(Function):
    @staticmethod
    def forward(ctx, x, weight, bias, running_mean, running_var, eps, momentum, group):
        import ember.distributed as dist
        dims = [0] + list(range(2, x.dim()))
        c = x.shape[1]
        count = ember.tensor([x.numel() // c], dtype=x.dtype)
        stats = ember.cat([x.sum(dims), count])
        dist.all_reduce(stats, group=group)
        n = stats[c].item()
        if n <= 1:
            raise ValueError(f"Expected more than 1 value per channel when training, got input "
                             f"size {list(x.shape)}")
        mean = stats[:c] / n
        xmu = x - _bshape(x, mean)
        sq = (xmu * xmu).sum(dims)
        dist.all_reduce(sq, group=group)
        var = sq / n
        invstd = (var + eps).rsqrt()
        if running_mean is not None:
            running_mean.mul_(1 - momentum).add_(mean * momentum)
            running_var.mul_(1 - momentum).add_(var * (n / (n - 1)) * momentum)
        xhat = xmu * _bshape(x, invstd)
        y = xhat
        if weight is not None:
            y = y * _bshape(x, weight) + _bshape(x, bias)
        ctx.save_for_backward(xhat, invstd, weight)
        ctx.n, ctx.group, ctx.dims = n, group, dims
        return y

    @staticmethod
    def backward(ctx, gy):
        import ember.distributed as dist
        xhat, invstd, weight = ctx.saved_tensors
        dims = ctx.dims
        sum_dy = gy.sum(dims)
        sum_dy_xhat = (gy * xhat).sum(dims)
        # weight and bias gradients stay local: DDP averages them like any other gradient
        gw = sum_dy_xhat if weight is not None else None
        gb = sum_dy.clone() if weight is not None else None
        both = ember.cat([sum_dy, sum_dy_xhat])
        dist.all_reduce(both, group=ctx.group)
        c = sum_dy.shape[0]
        mean_dy, mean_dy_xhat = both[:c] / ctx.n, both[c:] / ctx.n
        scale = invstd if weight is None else invstd * weight
        gx = (gy - _bshape(gy, mean_dy) - xhat * _bshape(gy, mean_dy_xhat)) * _bshape(gy, scale)
        return gx, gw, gb, None, None, None, None, None


class SyncBatchNorm(_BatchNorm):
    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True,
                 track_running_stats=True, process_group=None, device=None, dtype=None):
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device, dtype)
        self.process_group = process_group

    def _check_input_dim(self, input):
        if input.dim() < 2:
            raise ValueError(f"expected at least 2D input (got {input.dim()}D input)")

    def _check_non_zero_input_channels(self, input):
        if input.size(1) == 0:
            raise ValueError("SyncBatchNorm number of input channels should be non-zero")

    def forward(self, input):
        import ember.distributed as dist
        self._check_input_dim(input)
        self._check_non_zero_input_channels(input)
        momentum = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats and self.num_batches_tracked is not None:
            self.num_batches_tracked.add_(1)
            if self.momentum is None:
                momentum = 1.0 / float(self.num_batches_tracked)
        bn_training = self.training or (self.running_mean is None and self.running_var is None)
        running_mean = self.running_mean if not self.training or self.track_running_stats else None
        running_var = self.running_var if not self.training or self.track_running_stats else None
        need_sync = (bn_training and self.training and dist.is_available()
                     and dist.is_initialized())
        if need_sync:
            group = self.process_group if self.process_group is not None else dist.group.WORLD
            need_sync = group.size() > 1
        if not need_sync:
            return F.batch_norm(input, running_mean, running_var, self.weight, self.bias,
                                bn_training, momentum, self.eps)
        return _SyncBatchNormFn.apply(input, self.weight, self.bias, running_mean, running_var,
                                      self.eps, momentum, group)

    @classmethod
    def convert_sync_batchnorm(cls, module, process_group=None):
        """``module`` with every ``BatchNorm*D`` replaced by a ``SyncBatchNorm`` holding the same
        parameters and buffers."""
        module_output = module
        if isinstance(module, _BatchNorm) and not isinstance(module, SyncBatchNorm):
            module_output = SyncBatchNorm(module.num_features, module.eps, module.momentum,
                                          module.affine, module.track_running_stats,
                                          process_group)
            if module.affine:
                with ember.no_grad():
                    module_output.weight = module.weight
                    module_output.bias = module.bias
            module_output.running_mean = module.running_mean
            module_output.running_var = module.running_var
            module_output.num_batches_tracked = module.num_batches_tracked
            module_output.training = module.training
        for name, child in module.named_children():
            module_output.add_module(name, cls.convert_sync_batchnorm(child, process_group))
        del module
        return module_output
