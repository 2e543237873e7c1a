"""Meta kernels of GradScaler's two in-place ops and of the fused optimizer ops: nothing to
compute, the outputs are the inputs (the fused ops check their lists, as every backend does)."""
from ..rules.optim import check_fused_adam_lists


def meta_amp_foreach_non_finite_check_and_unscale_(self, found_inf, inv_scale):
    return None


def meta_amp_update_scale_(self, growth_tracker, found_inf, scale_growth_factor,
                           scale_backoff_factor, growth_interval):
    return self


def meta_fused_adam_(self, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps, lr, beta1,
                     beta2, weight_decay, eps, amsgrad, maximize, grad_scale=None,
                     found_inf=None):
    check_fused_adam_lists(self, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps,
                           amsgrad)


meta_fused_adamw_ = meta_fused_adam_
