"""Auto-wrap policies and the ``enable_wrap``/``wrap`` annotations (PyTorch's
``torch/distributed/fsdp/wrap.py``).

Two kinds of policy, as in PyTorch:

* a ``_Policy`` object (``ModuleWrapPolicy``, ``CustomPolicy``) picks its target modules up
  front (``_run_policy``); they are then wrapped in post-order (children before parents) by
  ``_post_order_apply``;
* a callable ``policy(module, recurse, nonwrapped_numel)`` (``size_based_auto_wrap_policy``,
  ``transformer_auto_wrap_policy``, ... usually bound with ``functools.partial``) is asked by
  ``_recursive_wrap`` on the way down whether to recurse into a module and on the way up
  whether to wrap it, given the parameters its children did not already take.
"""
import contextlib
import copy
from abc import ABC, abstractmethod

from ... import nn

__all__ = [
    "always_wrap_policy",
    "lambda_auto_wrap_policy",
    "transformer_auto_wrap_policy",
    "size_based_auto_wrap_policy",
    "enable_wrap",
    "wrap",
    "CustomPolicy",
    "ModuleWrapPolicy",
]


def _post_order_apply(root_module, fn):
    """Apply ``fn`` to every module of ``root_module``'s tree in post-order; a module ``fn``
    returns replaces the visited one in its parent."""
    visited_modules = {root_module}

    def inner(module, module_name, parent_module):
        for child_module_name, child_module in module.named_children():
            if child_module not in visited_modules:
                visited_modules.add(child_module)
                inner(child_module, child_module_name, module)
        optional_module = fn(module)
        if optional_module is not None:
            if not isinstance(parent_module, nn.Module):
                raise AssertionError("Non-root modules should have their parent module set but "
                                     f"got {parent_module} for {module}")
            if not module_name:
                raise AssertionError("Non-root modules should have their module name set but "
                                     f"got an empty module name for {module}")
            if not isinstance(optional_module, nn.Module):
                raise AssertionError(
                    f"fn should return None or an nn.Module but got {optional_module}")
            setattr(parent_module, module_name, optional_module)

    inner(root_module, "", None)


def _construct_wrap_fn(root_module, target_module_to_kwargs, fsdp_fn):
    """The function ``_post_order_apply`` calls: wraps the targets (never the root)."""
    def fn(module):
        if module in target_module_to_kwargs and module is not root_module:
            return fsdp_fn(module, **target_module_to_kwargs[module])
        return None
    return fn


def _run_mixed_precision_override_policy(root_module, module_classes, ignored_modules,
                                         root_kwargs, target_module_to_kwargs):
    module_classes_tuple = tuple(set(module_classes))
    for module in root_module.modules():
        if module in ignored_modules:
            continue
        if isinstance(module, module_classes_tuple):
            if module not in target_module_to_kwargs:
                target_module_to_kwargs[module] = root_kwargs
            target_module_to_kwargs[module]["mixed_precision"] = None
    return target_module_to_kwargs


def always_wrap_policy(*args, **kwargs):
    """Wrap every submodule."""
    return True


class _Policy(ABC):
    """A policy that picks the modules to apply a module-level API to."""

    @abstractmethod
    def _run_policy(self, root_module, ignored_modules, root_kwargs):
        """A dict from each target module to its constructor kwargs."""


def _module_wrap_policy(module, recurse, nonwrapped_numel, module_classes):
    if recurse:
        return True
    return isinstance(module, tuple(module_classes))


class ModuleWrapPolicy(_Policy):
    """Wrap every module of the given classes, with the root's kwargs."""

    def __init__(self, module_classes):
        module_classes_set = set(module_classes)
        self._module_classes = module_classes_set
        self._module_classes_str = str(module_classes_set)

    def _run_policy(self, root_module, ignored_modules, root_kwargs):
        module_classes = tuple(self._module_classes)
        target_module_to_kwargs = {}
        for module in root_module.modules():
            if module in ignored_modules:
                continue
            if isinstance(module, module_classes):
                target_module_to_kwargs[module] = copy.copy(root_kwargs)
        return target_module_to_kwargs

    def __call__(self, module, recurse, *args, **kwargs):
        return _module_wrap_policy(module, recurse, nonwrapped_numel=-1,
                                   module_classes=self._module_classes)

    def __repr__(self):
        return super().__repr__() + f"({self._module_classes_str})"


class CustomPolicy(_Policy):
    """``lambda_fn(module)``: False (or ``{}``) leaves the module, True wraps it with the root's
    kwargs, a non-empty dict wraps it with the root's kwargs updated by the dict."""

    def __init__(self, lambda_fn):
        self._lambda_fn = lambda_fn

    def _run_policy(self, root_module, ignored_modules, root_kwargs):
        target_module_to_kwargs = {}
        for module in root_module.modules():
            if module in ignored_modules:
                continue
            res = self._lambda_fn(module)
            if not isinstance(res, (dict, bool)):
                raise ValueError("The lambda_fn passed to CustomPolicy should return "
                                 f"False/True or a kwarg dict, but it returned {res}")
            if not res:
                continue
            kwargs = copy.copy(root_kwargs)
            if isinstance(res, dict):
                kwargs.update(res)
            target_module_to_kwargs[module] = kwargs
        return target_module_to_kwargs


def lambda_auto_wrap_policy(module, recurse, nonwrapped_numel, lambda_fn):
    """Wrap the modules for which ``lambda_fn(module)`` is True."""
    if recurse:
        return True
    return lambda_fn(module)


def transformer_auto_wrap_policy(module, recurse, nonwrapped_numel, transformer_layer_cls):
    """Wrap every module of a class in ``transformer_layer_cls``."""
    return _module_wrap_policy(module, recurse, nonwrapped_numel, transformer_layer_cls)


def _wrap_module_cls_individually(module, module_classes, recurse, *args, **kwargs):
    if recurse:
        return True
    return isinstance(module, tuple(module_classes))


def _or_policy(module, recurse, nonwrapped_numel, policies):
    """Wrap ``module`` if any of ``policies`` would."""
    return any(policy(module=module, recurse=recurse, nonwrapped_numel=nonwrapped_numel)
               for policy in policies)


def size_based_auto_wrap_policy(module, recurse, nonwrapped_numel, min_num_params=int(1e8),
                                force_leaf_modules=None, exclude_wrap_modules=None):
    """Wrap a module once the parameters not yet wrapped below it reach ``min_num_params``;
    never recurse into ``force_leaf_modules``, never wrap ``exclude_wrap_modules``."""
    force_leaf_modules = (size_based_auto_wrap_policy.FORCE_LEAF_MODULES
                          if force_leaf_modules is None else force_leaf_modules)
    exclude_wrap_modules = (size_based_auto_wrap_policy.EXCLUDE_WRAP_MODULES
                            if exclude_wrap_modules is None else exclude_wrap_modules)
    is_large = nonwrapped_numel >= min_num_params
    if recurse:
        return is_large and not isinstance(module, tuple(force_leaf_modules))
    return is_large and not isinstance(module, tuple(exclude_wrap_modules))


size_based_auto_wrap_policy.EXCLUDE_WRAP_MODULES = {nn.ModuleList, nn.ModuleDict}
size_based_auto_wrap_policy.FORCE_LEAF_MODULES = {nn.MultiheadAttention}


@contextlib.contextmanager
def enable_wrap(*, wrapper_cls, **wrapper_kwargs):
    """Inside, ``wrap(module)`` wraps with ``wrapper_cls(module, **wrapper_kwargs)``."""
    with _ConfigAutoWrap(wrapper_cls=wrapper_cls, **wrapper_kwargs):
        yield


def wrap(module, **wrap_overrides):
    """``module`` wrapped by the ``enable_wrap`` context's class (its kwargs overridden by
    ``wrap_overrides``); outside a context, ``module`` itself."""
    if _ConfigAutoWrap.in_autowrap_context:
        if _ConfigAutoWrap.wrapper_cls is None:
            raise AssertionError("Expected _ConfigAutoWrap.wrapper_cls to be set")
        wrap_overrides = {**_ConfigAutoWrap.kwargs, **wrap_overrides}
        return _wrap(module, _ConfigAutoWrap.wrapper_cls, **wrap_overrides)
    return module


def _wrap(module, wrapper_cls, **kwargs):
    if wrapper_cls is None:
        raise AssertionError("Expected wrapper_cls to be set")
    if hasattr(module, "_wrap_overrides"):
        # a module's own overrides win over the policy's kwargs
        return wrapper_cls(module, **{**kwargs, **module._wrap_overrides})
    return wrapper_cls(module, **kwargs)


def _recursive_wrap(module, auto_wrap_policy, wrapper_cls, ignored_modules, ignored_params,
                    only_wrap_children=False, **kwargs):
    """Wrap the submodules of ``module`` that ``auto_wrap_policy`` picks (bottom up); returns
    ``(module or its wrapper, numel wrapped)``."""
    if auto_wrap_policy is None:
        raise AssertionError("Must specify auto_wrap_policy.")
    if wrapper_cls is None:
        raise AssertionError("Must specify wrapper_cls")
    for _, child in module.named_modules():
        if child in ignored_modules:
            continue
        try:
            if isinstance(child, wrapper_cls):
                raise AssertionError(f"Child module {child} is already wrapped by {wrapper_cls}")
        except TypeError:  # wrapper_cls is a function, not a class
            pass
    nonwrapped_numel = sum(p.numel() for p in module.parameters() if p not in ignored_params)
    if auto_wrap_policy(module=module, recurse=True, nonwrapped_numel=nonwrapped_numel):
        total_wrapped_numel = 0
        for name, child in module.named_children():
            if child in ignored_modules:
                continue
            wrapped_child, num_wrapped_params = _recursive_wrap(
                module=child, auto_wrap_policy=auto_wrap_policy, wrapper_cls=wrapper_cls,
                ignored_modules=ignored_modules, ignored_params=ignored_params, **kwargs)
            setattr(module, name, wrapped_child)
            total_wrapped_numel += num_wrapped_params
        remainder = nonwrapped_numel - total_wrapped_numel
        if not only_wrap_children and auto_wrap_policy(module=module, recurse=False,
                                                       nonwrapped_numel=remainder):
            return _wrap(module, wrapper_cls, **kwargs), nonwrapped_numel
        return module, total_wrapped_numel
    return module, 0


class _ConfigAutoWrap:
    """The ``enable_wrap`` context's wrapper class and kwargs (one context at a time)."""

    in_autowrap_context = False
    wrapper_cls = None
    kwargs = {}

    def __init__(self, **kwargs):
        self.kwargs = kwargs

    @staticmethod
    def enable_autowrap_context(kwargs):
        if _ConfigAutoWrap.in_autowrap_context:
            raise NotImplementedError("You are already within an autowrap context and we "
                                      "currently do not supported nested autowrap.")
        _ConfigAutoWrap.in_autowrap_context = True
        if "wrapper_cls" not in kwargs:
            raise AssertionError("Expected to pass in wrapper_cls arg into _ConfigAutoWrap.")
        _ConfigAutoWrap.wrapper_cls = kwargs["wrapper_cls"]
        del kwargs["wrapper_cls"]
        _ConfigAutoWrap.kwargs = kwargs

    @staticmethod
    def disable_autowrap_context():
        _ConfigAutoWrap.in_autowrap_context = False
        _ConfigAutoWrap.wrapper_cls = None
        _ConfigAutoWrap.kwargs = {}

    def __enter__(self):
        self.enable_autowrap_context(self.kwargs)

    def __exit__(self, exc_type, exc_val, exc_tb):
        self.disable_autowrap_context()
