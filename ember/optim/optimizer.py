"""``Optimizer``: the base class every optimizer derives from (PyTorch's contract).

It owns the parameter groups (each a dict of hyper-parameters plus ``"params"``), the per-parameter
``state`` dict, ``zero_grad``, ``state_dict``/``load_state_dict`` in PyTorch's layout (parameters
replaced by integer ids numbered across groups), and step/state-dict hooks. Subclasses implement
``step``; updates run under ``no_grad`` with in-place tensor ops, so they go through the dispatcher.
"""
import copy
import functools
import warnings
from typing import Any, Iterable, Union
from collections import OrderedDict, defaultdict
from itertools import chain

from .. import (float32, float64, get_default_dtype, is_complex, is_floating_point, tensor,
                view_as_real, zeros_like)
from .._tensor import Tensor
from ..autograd.grad_mode import no_grad, set_grad_enabled
from ..profiler._recorder import record_function
from ..utils._foreach_utils import (_get_foreach_kernels_supported_devices,
                                    _get_fused_kernels_supported_devices,
                                    _group_tensors_by_device_and_dtype)
from ..utils.backend_registration import _get_privateuse1_backend_name
from ..utils.hooks import RemovableHandle

__all__ = ["Optimizer", "required"]


class _RequiredParameter:
    """Singleton marking a hyper-parameter that has no default (e.g. SGD's old ``lr``)."""

    def __repr__(self):
        return "<required parameter>"


required = _RequiredParameter()

_global_optimizer_pre_hooks = OrderedDict()
_global_optimizer_post_hooks = OrderedDict()


def register_optimizer_step_pre_hook(hook):
    handle = RemovableHandle(_global_optimizer_pre_hooks)
    _global_optimizer_pre_hooks[handle.id] = hook
    return handle


def register_optimizer_step_post_hook(hook):
    handle = RemovableHandle(_global_optimizer_post_hooks)
    _global_optimizer_post_hooks[handle.id] = hook
    return handle


def _typename(obj):
    if isinstance(obj, Tensor):
        return obj.type()
    return f"{type(obj).__module__}.{type(obj).__qualname__}" \
        if type(obj).__module__ != "builtins" else type(obj).__qualname__


def _use_grad(step):
    """Run ``step`` under ``no_grad`` (the updates must not be recorded by autograd)."""
    @functools.wraps(step)
    def wrapper(self, *args, **kwargs):
        with no_grad():
            return step(self, *args, **kwargs)
    return wrapper


def _use_grad_for_differentiable(step):
    """Run ``step`` with autograd on only when the optimizer was built ``differentiable=True``
    (PyTorch's decorator of the same name): the update is then recorded, so a loss computed
    from the updated parameters differentiates through the step."""
    @functools.wraps(step)
    def wrapper(self, *args, **kwargs):
        with set_grad_enabled(self.defaults["differentiable"]):
            return step(self, *args, **kwargs)
    return wrapper


def _closure_loss(closure):
    """The loss ``closure`` returns, computed with grad mode on (the step itself runs without)."""
    if closure is None:
        return None
    from ..autograd.grad_mode import enable_grad
    with enable_grad():
        return closure()


# (test, message) per hyper-parameter, shared by the constructors' validation.
_CHECKS = {
    "lr": (lambda v: 0.0 <= v, "Invalid learning rate: {}"),
    "eps": (lambda v: 0.0 <= v, "Invalid epsilon value: {}"),
    "momentum": (lambda v: 0.0 <= v, "Invalid momentum value: {}"),
    "weight_decay": (lambda v: 0.0 <= v, "Invalid weight_decay value: {}"),
    "alpha": (lambda v: 0.0 <= v, "Invalid alpha value: {}"),
    "lr_decay": (lambda v: 0.0 <= v, "Invalid lr_decay value: {}"),
    "momentum_decay": (lambda v: 0.0 <= v, "Invalid momentum_decay value: {}"),
    "rho": (lambda v: 0.0 <= v <= 1.0, "Invalid rho value: {}"),
    "initial_accumulator_value": (lambda v: 0.0 <= v,
                                  "Invalid initial_accumulator_value value: {}"),
}


def _validate(**kwargs):
    """PyTorch's constructor checks of the hyper-parameters given, in PyTorch's order."""
    lr = kwargs.get("lr")
    if hasattr(lr, "numel") and lr.numel() != 1:
        raise ValueError("Tensor lr must be 1-element")
    for name, value in kwargs.items():
        if name == "betas":
            for i, b in enumerate(value):
                if not 0.0 <= b < 1.0:
                    raise ValueError(f"Invalid beta parameter at index {i}: {b}")
            continue
        ok, message = _CHECKS[name]
        if not ok(value):
            raise ValueError(message.format(value))


def _step_tensor(value=0.0, group=None, p=None):
    """A scalar counter PyTorch keeps in optimizer state (``step``, NAdam's ``mu_product``), of
    the default float dtype: on the CPU, or with ``capturable`` on the parameter's device (a
    CUDA graph replaying the step then counts on the device)."""
    device = p.device if group is not None and group.get("capturable") else None
    return tensor(value, dtype=get_default_dtype(), device=device)



def _fill_group(optimizer, name, group, params, grads, state_steps, buffers, counters=()):
    """The body of the optimizers' ``_init_group`` (PyTorch's, one per optimizer): for each of
    the group's params with a gradient, its initial state the first time it is seen (``step``,
    then the scalar ``counters``, then a zero tensor per name of ``buffers``: PyTorch's key
    order), and the param, its gradient, each state entry and its step appended to the lists.
    ``buffers`` and ``counters`` map state names to the lists they go to. Refuses sparse
    gradients with PyTorch's message naming the optimizer ``name`` (a subclass's too); returns
    whether any param is complex."""
    has_complex = False
    for p in group["params"]:
        if p.grad is None:
            continue
        has_complex |= is_complex(p)
        params.append(p)
        if p.grad.is_sparse:
            raise RuntimeError(f"{name} does not support sparse gradients")
        grads.append(p.grad)
        state = optimizer.state[p]
        if len(state) == 0:
            state["step"] = _step_tensor(0.0, group, p)
            for key, (value, _) in dict(counters).items():
                state[key] = _step_tensor(value, group, p)
            for key in buffers:
                state[key] = zeros_like(p)
        for key, out in buffers.items():
            out.append(state[key])
        for key, (_, out) in dict(counters).items():
            out.append(state[key])
        state_steps.append(state["step"])
    return has_complex

def _check_state_steps(state_steps, what="state_steps"):
    """The functional forms' refusal of the pre-1.12 API (plain numbers as step counts)."""
    if not all(isinstance(t, Tensor) for t in state_steps):
        raise RuntimeError(f"API has changed, `{what}` argument must contain a list of "
                           "singleton tensors")


def _device_dtype_check_for_fused(p, cuda_unsupported=False):
    supported = _get_fused_kernels_supported_devices()
    if cuda_unsupported:
        supported.remove("cuda")
    if not (p.device.type in supported and is_floating_point(p)):
        raise RuntimeError(f"`fused=True` requires all the params to be floating point Tensors "
                           f"of supported devices: {supported} but {p.dtype} and "
                           f"{p.device.type}")


def _default_foreach_dense(params, grads, differentiable):
    """ember's choice for ``foreach=None`` in SGD, Adam and AdamW. Their multi-tensor paths
    are their loops' arithmetic op for op and make a fixed number of dispatcher calls per step
    instead of ~12 per parameter, so ember takes them on the CPU too (PyTorch's default there is
    the loop), wherever its foreach kernels serve: dense tensors of one dtype on one CPU or CUDA
    device, a step that is not differentiable."""
    if differentiable or not params:
        return False
    dtype, device = params[0].dtype, params[0].device
    return device.type in ("cpu", "cuda") and all(
        p.device == device and p.dtype is dtype and not g.is_sparse
        for p, g in zip(params, grads))


def _get_value(x):
    return x.item() if isinstance(x, Tensor) else x


def _to_scalar(x):
    """A 1-element hyper-parameter tensor of any shape as a 0-dim one (so it broadcasts against
    every parameter); anything else as it is."""
    return x.squeeze() if isinstance(x, Tensor) and x.dim() != 0 else x


def _get_scalar_dtype():
    """The dtype of scalar optimizer state (step counts, ASGD's ``eta`` and ``mu``): float64
    when that is the default dtype, else float32."""
    return float64 if get_default_dtype() is float64 else float32


def _get_capturable_supported_devices(supports_xla=True):
    """The device types whose steps can be captured into a graph (PyTorch's list, which the
    capturable optimizers name in their device errors)."""
    devices = ["cuda", "xpu", "hpu", _get_privateuse1_backend_name()]
    if supports_xla:
        devices.append("xla")
    return devices


def _check_capturable(devices_of, message, supports_xla=True):
    """PyTorch's capturable precondition: each row of tensors (a parameter and its state
    scalars) sits on one device type, one that supports graph capture."""
    supported = _get_capturable_supported_devices(supports_xla)
    for row in devices_of:
        types = {t.device.type for t in row}
        if len(types) != 1 or row[0].device.type not in supported:
            raise AssertionError(f"{message}: {supported}.")


def _default_to_fused_or_foreach(params, differentiable, use_fused=False):
    """PyTorch's defaults (fused, foreach) for ``params`` (None entries are passed over): fused
    when asked for and every parameter is a plain floating tensor on a device with fused
    kernels; else foreach when every parameter is a plain tensor on a device with foreach
    kernels; neither for a differentiable step."""
    from ..nn.parameter import Buffer, Parameter
    if differentiable:
        return False, False
    plain = (Tensor, Parameter, Buffer)
    # (on the CPU PyTorch's default is the loop: "cpu" has fused kernels, not default foreach)
    fused_devices = _get_fused_kernels_supported_devices()
    foreach_devices = _get_foreach_kernels_supported_devices()
    fused = use_fused and all(p is None or (type(p) in plain and p.device.type in fused_devices
                                            and is_floating_point(p)) for p in params)
    foreach = not fused and all(p is None or (type(p) in plain
                                              and p.device.type in foreach_devices)
                                for p in params)
    return fused, foreach


def _default_to_foreach(params, differentiable):
    """PyTorch's choice for ``foreach=None``: the multi-tensor path when the step is not
    differentiable and every parameter is a plain tensor on a device with foreach kernels."""
    return _default_to_fused_or_foreach(params, differentiable)[1]


def _view_as_real(params, *state_and_grads):
    """Replace, in the lists, each complex parameter and the entries at its index in
    ``state_and_grads`` by their real views: the update treats real and imaginary parts as two
    independent real numbers."""
    for i, p in enumerate(params):
        if is_complex(p):
            params[i] = view_as_real(p)
            for s in state_and_grads:
                s[i] = view_as_real(s[i])


# what optimizers take as ``params`` (PyTorch's alias; libraries annotate with it)
ParamsT = Union[Iterable[Tensor], Iterable[dict[str, Any]], Iterable[tuple[str, Tensor]]]


class Optimizer:
    """Base class for optimizers: ``Optimizer(params, defaults)``."""

    def _cuda_graph_capture_health_check(self):
        """PyTorch's check before a step that may be captured into a CUDA graph: a
        non-capturable step would bake the step count read on the host into the graph."""
        from .. import cuda
        capturing = cuda.is_initialized() and cuda.is_current_stream_capturing()
        capturable = all(group.get("capturable", False) for group in self.param_groups)
        if capturing and not capturable:
            raise RuntimeError(f"Attempting CUDA graph capture of step() for an instance of "
                               f"{type(self).__name__} but param_groups' capturable is False.")
        # as PyTorch, no warning on a machine without a CUDA device (asked last: it is slow)
        if capturable and not capturing and not getattr(
                self, "_warned_capturable_if_run_uncaptured", False) and cuda.is_available():
            warnings.warn("This instance was constructed with capturable=True or some of all "
                          "the param_groups came with capturable=True, but step() is running "
                          "without CUDA graph capture. If you never intend to graph-capture "
                          "this instance, capturable=True can impair performance, and you "
                          "should set capturable=False.")
            self._warned_capturable_if_run_uncaptured = True

    def __init__(self, params, defaults):
        self.defaults = defaults
        self._optimizer_step_pre_hooks = OrderedDict()
        self._optimizer_step_post_hooks = OrderedDict()
        self._optimizer_state_dict_pre_hooks = OrderedDict()
        self._optimizer_state_dict_post_hooks = OrderedDict()
        self._optimizer_load_state_dict_pre_hooks = OrderedDict()
        self._optimizer_load_state_dict_post_hooks = OrderedDict()
        self._patch_step_function()
        if isinstance(params, Tensor):
            raise TypeError("params argument given to the optimizer should be an iterable of "
                            "Tensors or dicts, but got " + _typename(params))
        self.state = defaultdict(dict)
        self.param_groups = []
        param_groups = list(params)
        if len(param_groups) == 0:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(param_groups[0], dict):
            param_groups = [{"params": param_groups}]
        for param_group in param_groups:
            self.add_param_group(param_group)

    def _patch_step_function(self):
        """Wrap the class's ``step`` once (PyTorch's ``profile_hook_step``): hooks and a
        profiler range around every step. It happens in ``__init__``, as in PyTorch, so a
        subclass that never calls ``Optimizer.__init__`` (a wrapper around another optimizer,
        as Accelerate's) keeps its own ``step`` unwrapped."""
        self._zero_grad_profile_name = f"Optimizer.zero_grad#{self.__class__.__name__}.zero_grad"
        if not getattr(self.__class__.step, "hooked", False):
            self.__class__.step = _with_hooks(self.__class__.step)
            self.__class__.step.hooked = True

    def __getstate__(self):
        return {"defaults": self.defaults, "state": self.state,
                "param_groups": self.param_groups}

    def __setstate__(self, state):
        self.__dict__.update(state)
        for name in ("_optimizer_step_pre_hooks", "_optimizer_step_post_hooks",
                     "_optimizer_state_dict_pre_hooks", "_optimizer_state_dict_post_hooks",
                     "_optimizer_load_state_dict_pre_hooks",
                     "_optimizer_load_state_dict_post_hooks"):
            self.__dict__.setdefault(name, OrderedDict())
        self._patch_step_function()

    def __repr__(self):
        format_string = self.__class__.__name__ + " ("
        for i, group in enumerate(self.param_groups):
            format_string += "\n"
            format_string += f"Parameter Group {i}\n"
            for key in sorted(group.keys()):
                if key != "params":
                    format_string += f"    {key}: {group[key]}\n"
        format_string += ")"
        return format_string

    # -- hooks -----------------------------------------------------------------------------------
    def register_step_pre_hook(self, hook):
        handle = RemovableHandle(self._optimizer_step_pre_hooks)
        self._optimizer_step_pre_hooks[handle.id] = hook
        return handle

    def register_step_post_hook(self, hook):
        handle = RemovableHandle(self._optimizer_step_post_hooks)
        self._optimizer_step_post_hooks[handle.id] = hook
        return handle

    def _register(self, hooks, hook, prepend):
        handle = RemovableHandle(hooks)
        hooks[handle.id] = hook
        if prepend:
            hooks.move_to_end(handle.id, last=False)
        return handle

    def register_state_dict_pre_hook(self, hook, prepend=False):
        return self._register(self._optimizer_state_dict_pre_hooks, hook, prepend)

    def register_state_dict_post_hook(self, hook, prepend=False):
        return self._register(self._optimizer_state_dict_post_hooks, hook, prepend)

    def register_load_state_dict_pre_hook(self, hook, prepend=False):
        return self._register(self._optimizer_load_state_dict_pre_hooks, hook, prepend)

    def register_load_state_dict_post_hook(self, hook, prepend=False):
        return self._register(self._optimizer_load_state_dict_post_hooks, hook, prepend)

    # -- state dict ------------------------------------------------------------------------------
    def state_dict(self):
        """``{"state": {id: state}, "param_groups": [group with "params": [ids]]}``; ids number
        the parameters in group order, as PyTorch does."""
        for pre_hook in self._optimizer_state_dict_pre_hooks.values():
            pre_hook(self)
        param_mappings = {}
        start_index = 0

        def pack_group(group):
            nonlocal start_index
            packed = {k: v for k, v in group.items() if k != "params"}
            param_mappings.update({id(p): i for i, p in enumerate(group["params"], start_index)
                                   if id(p) not in param_mappings})
            packed["params"] = [param_mappings[id(p)] for p in group["params"]]
            start_index += len(packed["params"])
            return packed

        param_groups = [pack_group(g) for g in self.param_groups]
        packed_state = {(param_mappings[id(k)] if isinstance(k, Tensor) else k): v
                        for k, v in self.state.items()}
        state_dict = {"state": packed_state, "param_groups": param_groups}
        for post_hook in self._optimizer_state_dict_post_hooks.values():
            result = post_hook(self, state_dict)
            if result is not None:
                state_dict = result
        return state_dict

    @staticmethod
    def _group_tensors_by_device_and_dtype(tensorlistlist, with_indices=False):
        """``tensorlistlist``'s columns grouped by device and dtype
        (``torch.utils._foreach_utils``); while compiling, one group of everything, as
        PyTorch leaves the split to the compiler."""
        from .. import compiler
        if compiler.is_compiling():
            return {(None, None): (tensorlistlist, list(range(len(tensorlistlist[0]))))}
        return _group_tensors_by_device_and_dtype(tensorlistlist, with_indices)

    @staticmethod
    def _process_value_according_to_param_policy(param, value, param_id, param_groups, key=None):
        """State tensors follow their parameter's device, and its dtype when floating point;
        ``step`` keeps its own dtype and device, except in a fused or capturable group, whose
        step reads its counts on the parameter's device, as float32."""
        if key == "step":
            for group in param_groups:
                if param_id in group["params"]:
                    if group.get("fused", False) or group.get("capturable", False):
                        return value.to(dtype=float32, device=param.device)
                    break
            return value
        if param.is_floating_point():
            return value.to(dtype=param.dtype, device=param.device)
        return value.to(device=param.device)

    def load_state_dict(self, state_dict):
        state_dict = state_dict.copy()
        for pre_hook in self._optimizer_load_state_dict_pre_hooks.values():
            hook_result = pre_hook(self, state_dict)
            if hook_result is not None:
                state_dict = hook_result
        groups = self.param_groups
        saved_groups = copy.deepcopy(state_dict["param_groups"])
        if len(groups) != len(saved_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        param_lens = (len(g["params"]) for g in groups)
        saved_lens = (len(g["params"]) for g in saved_groups)
        if any(p_len != s_len for p_len, s_len in zip(param_lens, saved_lens)):
            raise ValueError("loaded state dict contains a parameter group that doesn't match "
                             "the size of optimizer's group")
        id_map = dict(zip(chain.from_iterable(g["params"] for g in saved_groups),
                          chain.from_iterable(g["params"] for g in groups)))

        def cast(param, value, param_id=None, param_groups=None, key=None):
            if isinstance(value, Tensor):
                return Optimizer._process_value_according_to_param_policy(
                    param, value, param_id, param_groups, key)
            if isinstance(value, dict):
                return {k: cast(param, v, param_id, param_groups, key=k)
                        for k, v in value.items()}
            if isinstance(value, (list, tuple)):
                return type(value)(cast(param, v, param_id, param_groups) for v in value)
            return value

        state = defaultdict(dict)
        for k, v in state_dict["state"].items():
            if k in id_map:
                param = id_map[k]
                state[param] = cast(param, v, param_id=k, param_groups=state_dict["param_groups"])
            else:
                state[k] = v

        def update_group(group, new_group):
            new_group["params"] = group["params"]
            if "param_names" in group and "param_names" not in new_group:
                new_group["param_names"] = group["param_names"]
            return new_group

        param_groups = [update_group(g, ng) for g, ng in zip(groups, saved_groups)]
        self.__setstate__({"state": state, "param_groups": param_groups})
        for post_hook in self._optimizer_load_state_dict_post_hooks.values():
            post_hook(self)

    # -- gradients and groups --------------------------------------------------------------------
    def zero_grad(self, set_to_none=True):
        with record_function(self._zero_grad_profile_name):
            self._zero_grad(set_to_none)

    def _zero_grad(self, set_to_none):
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is not None:
                    if set_to_none:
                        p.grad = None
                    else:
                        if p.grad.grad_fn is not None:
                            p.grad = p.grad.detach()
                        else:
                            p.grad.requires_grad_(False)
                        p.grad.zero_()

    def step(self, closure=None):
        raise NotImplementedError

    def add_param_group(self, param_group):
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, but got {type(param_group).__name__}")
        params = param_group["params"]
        if isinstance(params, Tensor):
            param_group["params"] = [params]
        elif isinstance(params, set):
            raise TypeError("optimizer parameters need to be organized in ordered collections, "
                            "but the ordering of tensors in sets will change between runs. "
                            "Please use a list instead.")
        else:
            param_group["params"] = list(params)
        # Named parameters: (name, tensor) pairs.
        extracted, names = [], []
        for param in param_group["params"]:
            if isinstance(param, tuple):
                names.append(param[0])
                extracted.append(param[1])
            else:
                extracted.append(param)
        param_group["params"] = extracted
        if names:
            if len(names) != len(extracted):
                raise ValueError("all optimizer params should be with/without names. Some param "
                                 "names are missing")
            param_group["param_names"] = names

        for param in param_group["params"]:
            if not isinstance(param, Tensor):
                raise TypeError("optimizer can only optimize Tensors, but one of the params is "
                                + _typename(param))
            if not self.defaults.get("differentiable", None) and not (
                    param.is_leaf or param.retains_grad):
                raise ValueError("can't optimize a non-leaf Tensor")

        for name, default in self.defaults.items():
            if default is required and name not in param_group:
                raise ValueError("parameter group didn't specify a value of required "
                                 f"optimization parameter {name}")
            param_group.setdefault(name, default)

        params = param_group["params"]
        if len(params) != len({id(p) for p in params}):
            warnings.warn("optimizer contains a parameter group with duplicate parameters; in "
                          "future, this will cause an error; see "
                          "github.com/pytorch/pytorch/issues/40967 for more information",
                          stacklevel=3)
        param_set = set()
        for group in self.param_groups:
            param_set.update(id(p) for p in group["params"])
            if ("param_names" in param_group) != ("param_names" in group):
                current_group_txt = ("with names" if "param_names" in param_group
                                     else "without names")
                raise ValueError("all optimizer param groups should be with/without names. "
                                 f"cannot add param group {current_group_txt} to the optimizer")
        if not param_set.isdisjoint(id(p) for p in param_group["params"]):
            raise ValueError("some parameters appear in more than one parameter group")
        self.param_groups.append(param_group)


def _with_hooks(step):
    @functools.wraps(step)
    def wrapper(self, *args, **kwargs):
        with record_function(f"Optimizer.step#{self.__class__.__name__}.step"):
            if "capturable" in self.defaults:
                self._cuda_graph_capture_health_check()
            for pre_hook in chain(_global_optimizer_pre_hooks.values(),
                                  self._optimizer_step_pre_hooks.values()):
                result = pre_hook(self, args, kwargs)
                if result is not None:
                    if isinstance(result, tuple) and len(result) == 2:
                        args, kwargs = result
                    else:
                        raise RuntimeError(f"{step} must return None or a tuple of (new_args, "
                                           f"new_kwargs), but got {result}.")
            out = step(self, *args, **kwargs)
            self._opt_called = True
            for post_hook in chain(self._optimizer_step_post_hooks.values(),
                                   _global_optimizer_post_hooks.values()):
                post_hook(self, args, kwargs)
            return out
    return wrapper
