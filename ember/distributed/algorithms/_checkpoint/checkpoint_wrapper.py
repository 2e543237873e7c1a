"""``checkpoint_wrapper`` / ``offload_wrapper`` / ``apply_activation_checkpointing``
(PyTorch's ``torch/distributed/algorithms/_checkpoint/checkpoint_wrapper.py``): a module whose
forward runs its wrapped module under ``ember.utils.checkpoint.checkpoint`` (or under
``save_on_cpu``). Its state dict has the wrapped module's keys, without the
``_checkpoint_wrapped_module.`` prefix, so checkpoints load into unwrapped models and back."""
from abc import ABC, abstractmethod
from enum import Enum, auto
from functools import partial

from .... import nn
from ....autograd.graph import save_on_cpu
from ....utils.checkpoint import checkpoint as torch_utils_checkpoint
from ...utils import _pack_kwargs, _replace_by_prefix, _unpack_kwargs

__all__ = ["CheckpointImpl", "ActivationWrapper", "OffloadWrapper", "CheckpointWrapper",
           "offload_wrapper", "checkpoint_wrapper", "apply_activation_checkpointing"]

_CHECKPOINT_WRAPPED_MODULE = "_checkpoint_wrapped_module"
_CHECKPOINT_PREFIX = _CHECKPOINT_WRAPPED_MODULE + "."


class CheckpointImpl(Enum):
    REENTRANT = auto()
    NO_REENTRANT = auto()


class ActivationWrapper(nn.Module, ABC):
    """Base of the checkpoint and offload wrappers; not instantiated directly."""

    def __init__(self, mod):
        super().__init__()
        self._checkpoint_wrapped_module = mod
        self._register_state_dict_hook(self._post_state_dict_hook)
        self.register_load_state_dict_pre_hook(self._pre_load_state_dict_hook)

    @abstractmethod
    def forward(self, *args, **kwargs):
        raise ValueError("Subclasses should implement forward().")

    def __getattr__(self, name):
        """Attributes the wrapper lacks come from the wrapped module."""
        try:
            return super().__getattr__(name)
        except AttributeError:
            return getattr(self._checkpoint_wrapped_module, name)

    def __getitem__(self, key):
        """Indexing goes to the wrapped module (an ``nn.Sequential``, say)."""
        return self._checkpoint_wrapped_module.__getitem__(key)

    def named_parameters(self, *args, **kwargs):
        """The wrapped module's parameter names, without ``_checkpoint_wrapped_module.``."""
        for param_name, param in super().named_parameters(*args, **kwargs):
            yield param_name.replace(_CHECKPOINT_PREFIX, ""), param

    @staticmethod
    def _post_state_dict_hook(module, state_dict, prefix, *args):
        _replace_by_prefix(state_dict, f"{prefix}{_CHECKPOINT_PREFIX}", prefix)
        return state_dict

    @staticmethod
    def _pre_load_state_dict_hook(module, state_dict, prefix, *args):
        _replace_by_prefix(state_dict, prefix, prefix + f"{_CHECKPOINT_PREFIX}")


class OffloadWrapper(ActivationWrapper):
    """Keeps the wrapped module's saved activations in (pinned) CPU memory."""

    def forward(self, *args, **kwargs):
        with save_on_cpu(pin_memory=True):
            return self._checkpoint_wrapped_module(*args, **kwargs)


class CheckpointWrapper(ActivationWrapper):
    """Runs the wrapped module under activation checkpointing (``checkpoint_fn``, by default
    ``ember.utils.checkpoint.checkpoint`` reentrant or not as ``checkpoint_impl`` says)."""

    def __init__(self, mod, checkpoint_impl=CheckpointImpl.NO_REENTRANT, checkpoint_fn=None,
                 **checkpoint_fn_kwargs):
        super().__init__(mod)
        self.checkpoint_impl = checkpoint_impl
        if checkpoint_fn is None:
            self.checkpoint_fn = partial(
                torch_utils_checkpoint,
                use_reentrant=(self.checkpoint_impl == CheckpointImpl.REENTRANT),
                **checkpoint_fn_kwargs)
        else:
            self.checkpoint_fn = partial(checkpoint_fn, **checkpoint_fn_kwargs)

    def forward(self, *args, **kwargs):
        if self.checkpoint_impl == CheckpointImpl.REENTRANT and kwargs != {}:
            # the reentrant checkpoint takes positional inputs only
            flat_args, kwarg_keys = _pack_kwargs(*args, **kwargs)

            def my_function(*inputs):
                unpacked_args, unpacked_kwargs = _unpack_kwargs(inputs, kwarg_keys)
                return self._checkpoint_wrapped_module(*unpacked_args, **unpacked_kwargs)

            return self.checkpoint_fn(my_function, *flat_args)
        return self.checkpoint_fn(self._checkpoint_wrapped_module, *args, **kwargs)


def offload_wrapper(module):
    """``module`` wrapped to offload its saved activations to the CPU."""
    return OffloadWrapper(module)


def checkpoint_wrapper(module, checkpoint_impl=CheckpointImpl.NO_REENTRANT, checkpoint_fn=None,
                       **checkpoint_fn_kwargs):
    """``module`` wrapped to recompute its activations in backward instead of keeping them."""
    return CheckpointWrapper(module, checkpoint_impl, checkpoint_fn, **checkpoint_fn_kwargs)


def apply_activation_checkpointing(model, checkpoint_wrapper_fn=checkpoint_wrapper,
                                   check_fn=lambda _: True, auto_wrap_policy=None):
    """Wrap, in place, the submodules of ``model`` (never ``model`` itself) that ``check_fn``
    (or ``auto_wrap_policy``, which takes precedence) picks with ``checkpoint_wrapper_fn``."""
    from ...fsdp.wrap import (_construct_wrap_fn, _Policy, _post_order_apply, _recursive_wrap,
                              lambda_auto_wrap_policy)
    policy = (auto_wrap_policy if auto_wrap_policy is not None
              else partial(lambda_auto_wrap_policy, lambda_fn=check_fn))
    if not callable(policy):
        if not isinstance(policy, _Policy):
            raise ValueError(f"Expected {policy} to be callable or be a pre-defined wrap policy")
        target_module_to_kwargs = policy._run_policy(model, ignored_modules=set(), root_kwargs={})
        wrap_fn = _construct_wrap_fn(model, target_module_to_kwargs, checkpoint_wrapper_fn)
        _post_order_apply(model, wrap_fn)
        return
    _recursive_wrap(module=model, auto_wrap_policy=policy, wrapper_cls=checkpoint_wrapper_fn,
                    ignored_modules=set(), ignored_params=set(), only_wrap_children=True)
