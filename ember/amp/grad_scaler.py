"""``GradScaler``: loss scaling for low-precision training (PyTorch's ``torch/amp/grad_scaler.py``).

Small float16 gradients underflow to zero. Multiplying the loss by a large scale S before
``backward`` keeps them representable; ``unscale_`` divides the gradients by S again (and notes
whether any became inf/NaN), ``step`` skips the optimizer step when one did, and ``update``
shrinks S after an overflow or grows it after ``growth_interval`` clean steps. The arithmetic
runs in two ops, ``_amp_foreach_non_finite_check_and_unscale_`` and ``_amp_update_scale_``, so the
scale never has to be read back to Python except to decide whether to step.

Works with any optimizer that has ``param_groups`` (lists of dicts with ``"params"``) and
``step()``; gradient clipping goes between ``unscale_(opt)`` and ``step(opt)``.
"""
import warnings
from collections import abc, defaultdict
from enum import Enum

import ember

__all__ = ["OptState", "GradScaler"]


class _MultiDeviceReplicator:
    """Lazily copies a master tensor to each device that asks for it."""

    def __init__(self, master_tensor):
        self.master = master_tensor
        self._per_device_tensors = {}

    def get(self, device):
        retval = self._per_device_tensors.get(device)
        if retval is None:
            retval = self.master.to(device=device, non_blocking=True, copy=True)
            self._per_device_tensors[device] = retval
        return retval


class OptState(Enum):
    READY = 0
    UNSCALED = 1
    STEPPED = 2


def _refresh_per_optimizer_state():
    return {"stage": OptState.READY, "found_inf_per_device": {}}


class GradScaler:
    """Scale the loss, unscale gradients, skip steps with inf/NaN gradients, adapt the scale."""

    def __init__(self, device="cuda", init_scale=2.0 ** 16, growth_factor=2.0,
                 backoff_factor=0.5, growth_interval=2000, enabled=True):
        self._device = device
        self._enabled = enabled
        if self._device == "cuda" and enabled:
            from .. import cuda
            if not cuda.is_available():
                warnings.warn("torch.cuda.amp.GradScaler is enabled, but CUDA is not available.  "
                              "Disabling.", stacklevel=2)
                self._enabled = False
        if self._enabled:
            if growth_factor <= 1.0:
                raise AssertionError("The growth factor must be > 1.0.")
            if backoff_factor >= 1.0:
                raise AssertionError("The backoff factor must be < 1.0.")
            self._init_scale = init_scale
            self._scale = None  # float32 0-dim tensor, created on the device at the first scale()
            self._growth_factor = growth_factor
            self._backoff_factor = backoff_factor
            self._growth_interval = growth_interval
            self._init_growth_tracker = 0
            self._growth_tracker = None  # int32 0-dim tensor
            self._per_optimizer_states = defaultdict(_refresh_per_optimizer_state)

    def _check_scale_growth_tracker(self, funcname):
        fix = ("This may indicate your script did not use scaler.scale(loss or outputs) earlier "
               "in the iteration.")
        if self._scale is None:
            raise AssertionError(f"Attempted {funcname} but _scale is None.  " + fix)
        if self._growth_tracker is None:
            raise AssertionError(f"Attempted {funcname} but _growth_tracker is None.  " + fix)
        return self._scale, self._growth_tracker

    def _lazy_init_scale_growth_tracker(self, dev):
        self._scale = ember.full((), self._init_scale, dtype=ember.float32, device=dev)
        self._growth_tracker = ember.full((), self._init_growth_tracker, dtype=ember.int32, device=dev)

    def scale(self, outputs):
        """``outputs`` (a tensor, or nested lists/tuples of tensors) multiplied by the scale."""
        if not self._enabled:
            return outputs
        if isinstance(outputs, ember.Tensor):
            if self._scale is None:
                self._lazy_init_scale_growth_tracker(outputs.device)
            return outputs * self._scale.to(device=outputs.device, non_blocking=True)

        stash = []  # one replicator of the scale for the whole structure

        def apply_scale(val):
            if isinstance(val, ember.Tensor):
                if not stash:
                    if self._scale is None:
                        self._lazy_init_scale_growth_tracker(val.device)
                    stash.append(_MultiDeviceReplicator(self._scale))
                return val * stash[0].get(val.device)
            if isinstance(val, abc.Iterable):
                iterable = map(apply_scale, val)
                return type(val)(iterable) if isinstance(val, (list, tuple)) else iterable
            raise ValueError("outputs must be a Tensor or an iterable of Tensors")
        return apply_scale(outputs)

    # What a subclass changes (ShardedGradScaler): the per-device copies of the scale and of
    # found_inf, found_inf's shape, whether float16 gradients may be unscaled
    _replicator = _MultiDeviceReplicator
    _found_inf_shape = ()
    _allow_fp16 = False

    def _unscale_grads_(self, optimizer, inv_scale, found_inf, allow_fp16):
        per_device_inv_scale = self._replicator(inv_scale)
        per_device_found_inf = self._replicator(found_inf)
        # device -> dtype -> grads: the op takes one list per (device, dtype)
        grouped = defaultdict(lambda: defaultdict(list))
        with ember.no_grad():
            for group in optimizer.param_groups:
                for param in group["params"]:
                    if not isinstance(param, ember.Tensor):
                        raise AssertionError(
                            f"expected param to be torch.Tensor, got {type(param).__name__}")
                    if param.grad is None:
                        continue
                    if not allow_fp16 and param.grad.dtype == ember.float16:
                        raise ValueError("Attempting to unscale FP16 gradients.")
                    grouped[param.grad.device][param.grad.dtype].append(param.grad)
            for device, per_dtype_grads in grouped.items():
                for grads in per_dtype_grads.values():
                    ember._amp_foreach_non_finite_check_and_unscale_(
                        grads, per_device_found_inf.get(device), per_device_inv_scale.get(device))
        return per_device_found_inf._per_device_tensors

    def unscale_(self, optimizer):
        """Divide ``optimizer``'s gradients by the scale, in place (once per update())."""
        if not self._enabled:
            return
        self._check_scale_growth_tracker("unscale_")
        optimizer_state = self._per_optimizer_states[id(optimizer)]
        if optimizer_state["stage"] is OptState.UNSCALED:
            raise RuntimeError("unscale_() has already been called on this optimizer since the "
                               "last update().")
        if optimizer_state["stage"] is OptState.STEPPED:
            raise RuntimeError("unscale_() is being called after step().")
        # The reciprocal in float64, then float32, as PyTorch does for accuracy.
        inv_scale = self._scale.double().reciprocal().float()
        found_inf = ember.full(self._found_inf_shape, 0.0, dtype=ember.float32,
                               device=self._scale.device)
        optimizer_state["found_inf_per_device"] = self._unscale_grads_(
            optimizer, inv_scale, found_inf, self._allow_fp16)
        optimizer_state["stage"] = OptState.UNSCALED
        self._agree_on_found_inf(optimizer_state["found_inf_per_device"])

    def _agree_on_found_inf(self, found_inf_per_device):
        """(ShardedGradScaler: all-reduces them, so every rank skips or takes the step.)"""

    def _maybe_opt_step(self, optimizer, optimizer_state, *args, **kwargs):
        if not sum(v.item() for v in optimizer_state["found_inf_per_device"].values()):
            return optimizer.step(*args, **kwargs)
        return None

    def step(self, optimizer, *args, **kwargs):
        """``optimizer.step()`` unless the (unscaled) gradients hold an inf or NaN."""
        if not self._enabled:
            return optimizer.step(*args, **kwargs)
        if "closure" in kwargs:
            raise RuntimeError("Closure use is not currently supported if GradScaler is enabled.")
        self._check_scale_growth_tracker("step")
        optimizer_state = self._per_optimizer_states[id(optimizer)]
        if optimizer_state["stage"] is OptState.STEPPED:
            raise RuntimeError("step() has already been called since the last update().")
        if getattr(optimizer, "_step_supports_amp_scaling", False):
            return self._step_with_optimizer_scaling(optimizer, optimizer_state, *args, **kwargs)
        if optimizer_state["stage"] is OptState.READY:
            self.unscale_(optimizer)
        if len(optimizer_state["found_inf_per_device"]) == 0:
            raise AssertionError("No inf checks were recorded for this optimizer.")
        retval = self._maybe_opt_step(optimizer, optimizer_state, *args, **kwargs)
        optimizer_state["stage"] = OptState.STEPPED
        return retval

    def _step_with_optimizer_scaling(self, optimizer, optimizer_state, *args, **kwargs):
        """PyTorch's branch for optimizers that unscale and skip by themselves (Adam/AdamW with
        ``fused=True``): they get ``grad_scale`` (None once unscale_() ran) and ``found_inf`` as
        attributes for the one step, and the infs are only checked here."""
        if optimizer_state["stage"] is OptState.READY:
            self._check_inf_per_device(optimizer)
        scale = self._get_scale_async()
        found_inf = sum(t.to(scale.device, non_blocking=True)
                        for t in optimizer_state["found_inf_per_device"].values())
        optimizer.grad_scale = (None if optimizer_state["stage"] is OptState.UNSCALED
                                else scale * getattr(optimizer, "grad_scale", 1))
        optimizer.found_inf = found_inf
        try:
            retval = optimizer.step(*args, **kwargs)
        finally:
            del optimizer.grad_scale
            del optimizer.found_inf
        optimizer_state["stage"] = OptState.STEPPED
        return retval

    def _check_inf_per_device(self, optimizer):
        """found_inf per device without unscaling (an inverse scale of 1)."""
        _scale, _ = self._check_scale_growth_tracker("_check_inf_per_device")
        dummy_inv_scale = ember.full((), 1.0, dtype=ember.float32, device=_scale.device)
        found_inf = ember.full((), 0.0, dtype=ember.float32, device=_scale.device)
        state = self._per_optimizer_states[id(optimizer)]
        state["found_inf_per_device"] = self._unscale_grads_(optimizer, dummy_inv_scale,
                                                             found_inf, True)
        return state["found_inf_per_device"]

    def update(self, new_scale=None):
        """Back off the scale if any optimizer saw inf/NaN, else count towards growth."""
        if not self._enabled:
            return
        _scale, _growth_tracker = self._check_scale_growth_tracker("update")
        if new_scale is not None:
            if isinstance(new_scale, float):
                self._scale.fill_(new_scale)
            else:
                reason = ("new_scale should be a float or a 1-element torch.cuda.FloatTensor or "
                          "torch.FloatTensor with requires_grad=False.")
                if new_scale.device.type != self._device:
                    raise AssertionError(reason)
                if new_scale.numel() != 1:
                    raise AssertionError(reason)
                if new_scale.requires_grad is True:
                    raise AssertionError(reason)
                self._scale.copy_(new_scale)
        else:
            found_infs = [found_inf.to(device=_scale.device, non_blocking=True)
                          for state in self._per_optimizer_states.values()
                          for found_inf in state["found_inf_per_device"].values()]
            if len(found_infs) == 0:
                raise AssertionError("No inf checks were recorded prior to update.")
            found_inf_combined = found_infs[0]
            for extra in found_infs[1:]:
                found_inf_combined += extra
            ember._amp_update_scale_(_scale, _growth_tracker, found_inf_combined,
                                    self._growth_factor, self._backoff_factor,
                                    self._growth_interval)
        self._per_optimizer_states = defaultdict(_refresh_per_optimizer_state)

    # -- accessors ------------------------------------------------------------------------------
    def _get_scale_async(self):
        return self._scale

    def get_scale(self):
        if self._enabled:
            return self._init_scale if self._scale is None else self._scale.item()
        return 1.0

    def get_growth_factor(self):
        return self._growth_factor

    def set_growth_factor(self, new_factor):
        self._growth_factor = new_factor

    def get_backoff_factor(self):
        return self._backoff_factor

    def set_backoff_factor(self, new_factor):
        self._backoff_factor = new_factor

    def get_growth_interval(self):
        return self._growth_interval

    def set_growth_interval(self, new_interval):
        self._growth_interval = new_interval

    def _get_growth_tracker(self):
        if self._enabled:
            return (self._init_growth_tracker if self._growth_tracker is None
                    else self._growth_tracker.item())
        return 0

    def is_enabled(self):
        return self._enabled

    def state_dict(self):
        if self._enabled:
            return {"scale": self.get_scale(), "growth_factor": self._growth_factor,
                    "backoff_factor": self._backoff_factor,
                    "growth_interval": self._growth_interval,
                    "_growth_tracker": self._get_growth_tracker()}
        return {}

    def load_state_dict(self, state_dict):
        if not self._enabled:
            return
        if len(state_dict) == 0:
            raise RuntimeError("The source state dict is empty, possibly because it was saved "
                               "from a disabled instance of GradScaler.")
        self._init_scale = state_dict["scale"]
        if self._scale is not None:
            self._scale.fill_(state_dict["scale"])
        self._growth_factor = state_dict["growth_factor"]
        self._backoff_factor = state_dict["backoff_factor"]
        self._growth_interval = state_dict["growth_interval"]
        self._init_growth_tracker = state_dict["_growth_tracker"]
        if self._growth_tracker is not None:
            self._growth_tracker.fill_(state_dict["_growth_tracker"])

    def __getstate__(self):
        state = self.__dict__.copy()
        if self._enabled:
            if len(self._per_optimizer_states) != 0:
                raise AssertionError("A GradScaler instance may only be pickled at the beginning "
                                     "of an iteration, or at the end after scaler.update().")
            state["_init_scale"] = self.get_scale()
            state["_init_growth_tracker"] = self._get_growth_tracker()
            state["_scale"] = None
            state["_growth_tracker"] = None
            state["_per_optimizer_states"] = None
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        if self.__dict__.get("_enabled"):
            self._per_optimizer_states = defaultdict(_refresh_per_optimizer_state)
