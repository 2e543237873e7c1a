"""Meta kernels of GradScaler's two in-place ops: nothing to compute, the outputs are the inputs."""


def meta_amp_foreach_non_finite_check_and_unscale_(self, found_inf, inv_scale):
    return None


def meta_amp_update_scale_(self, growth_tracker, found_inf, scale_growth_factor,
                           scale_backoff_factor, growth_interval):
    return self
