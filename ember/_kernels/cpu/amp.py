"""CPU kernels of GradScaler's two ops (PyTorch's ``AmpKernels.cpp``, CPU version).

``_amp_foreach_non_finite_check_and_unscale_`` multiplies every gradient by ``inv_scale`` in
place and sets ``found_inf`` to 1.0 if any of them holds an inf or a NaN;
``_amp_update_scale_`` grows or backs off the loss scale and updates the growth tracker.
"""
import numpy as np

from ._util import nd


def _check_scalar_tensor(t, name, dtype_name, np_dtype):
    if t.numel() != 1:
        raise RuntimeError(f"{name} must be a 1-element tensor.")
    if nd(t).dtype != np_dtype:
        raise RuntimeError(f"{name} must be {dtype_name} tensor.")


def _amp_foreach_non_finite_check_and_unscale_(self, found_inf, inv_scale):
    _check_scalar_tensor(inv_scale, "inv_scale", "a float", np.float32)
    _check_scalar_tensor(found_inf, "found_inf", "a float", np.float32)
    for t in self:  # check every input before writing any: a failed call changes nothing
        if not t._dtype.is_floating_point:
            raise NotImplementedError(f'"_amp_foreach_non_finite_check_and_unscale_cpu" not '
                                      f"implemented for '{t._dtype._short}'")
    inv = nd(inv_scale).reshape(())
    found = nd(found_inf)
    for t in self:
        a = nd(t)
        if not np.isfinite(a).all():
            found[...] = 1.0
        # Every gradient is unscaled, found or not: the step is skipped anyway when one is inf.
        np.multiply(a, inv, out=a, casting="unsafe")
    return None


def _amp_update_scale_(self, growth_tracker, found_inf, scale_growth_factor,
                       scale_backoff_factor, growth_interval):
    _check_scalar_tensor(growth_tracker, "growth_tracker", "an int", np.int32)
    _check_scalar_tensor(self, "current_scale", "a float", np.float32)
    _check_scalar_tensor(found_inf, "found_inf", "a float", np.float32)
    scale, tracker = nd(self), nd(growth_tracker)
    if nd(found_inf).reshape(()) != 0:
        scale[...] = scale * np.float32(scale_backoff_factor)
        tracker[...] = 0
    else:
        successful = int(tracker.reshape(())) + 1
        if successful == growth_interval:
            with np.errstate(over="ignore"):
                grown = scale * np.float32(scale_growth_factor)
            if np.isfinite(grown).all():  # never grow the scale into inf
                scale[...] = grown
            tracker[...] = 0
        else:
            tracker[...] = successful
    return self
