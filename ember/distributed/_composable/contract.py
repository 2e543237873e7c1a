"""``contract``: PyTorch's decorator that makes a function a composable distributed API
(``fully_shard``). The function may be applied to a module (or a list of modules, grouped)
once; ``func.state(module)`` is the state object it keeps for the module, and the decorator
checks that the function leaves the fully qualified names of parameters, buffers and
submodules as they were."""
import uuid
from collections import OrderedDict
from functools import wraps

from ... import nn
from .._composable_state import _State
from ..utils import _get_root_modules  # noqa: F401 (fully_shard's import)

__all__ = ["contract"]


def generate_state_key(string="__composable_api_state_key"):
    return f"{string}_{uuid.uuid4()}"


STATE_KEY = generate_state_key()
REGISTRY_KEY = generate_state_key()


class RegistryItem:
    pass


def _check_fqn(orig_fqns, new_fqns, check_key):
    if orig_fqns == new_fqns:
        return
    orig_set, new_set = set(orig_fqns), set(new_fqns)
    orig_only, new_only = orig_set - new_set, new_set - orig_set
    if orig_only or new_only:
        raise RuntimeError(f"{check_key}Composable distributed API implementations cannot modify "
                           f"FQNs.\nFQNs only in original: {orig_only}\nFQNs only in new: "
                           f"{new_only}")
    raise RuntimeError(f"{check_key}Composable distributed API implementations cannot modify the "
                       f"order of FQNs.\nOriginal FQNs: {orig_only}\nNew FQNs: {new_only}")


def _named_fqns(modules):
    return [(list(OrderedDict(m.named_parameters())), list(OrderedDict(m.named_buffers())),
             list(OrderedDict(m.named_modules()))) for m in modules]


def contract(state_cls=_State):
    """Decorate ``func(module_or_modules, ...)`` as a composable distributed API; installs
    ``func.state(module)``."""

    def inner(func):
        @wraps(func)
        def wrapper(module, *args, **kwargs):
            inp_module = module
            modules = [module] if isinstance(module, nn.Module) else \
                _get_root_modules(list(module))
            state = state_cls()  # shared across the modules
            registry_item = RegistryItem()
            for m in modules:
                all_state = m.__dict__.setdefault(STATE_KEY, OrderedDict())
                if not isinstance(all_state, dict):
                    raise AssertionError(f"Distributed composable API states corrupted: "
                                         f"{all_state}")
                registry = m.__dict__.setdefault(REGISTRY_KEY, OrderedDict())
                if not isinstance(registry, dict):
                    raise AssertionError(f"Distributed composable API registry corrupted: "
                                         f"{registry}")
                if func in all_state or func.__name__ in registry:
                    raise AssertionError(
                        f"Each distinct composable distributed API can only be applied to a "
                        f"module once. {func.__name__} has already been applied to the "
                        f"following module:\n{m}")
                all_state.setdefault(func, state)
                registry.setdefault(func.__name__, registry_item)
            orig = _named_fqns(modules)
            updated = func(inp_module, *args, **kwargs)
            if updated is None:
                updated = inp_module
            updated_modules = [updated] if isinstance(updated, nn.Module) else \
                _get_root_modules(list(inp_module))
            new = _named_fqns(updated_modules)
            if len(orig) != len(new):
                raise AssertionError(f"{func.__name__} should return the same number of modules "
                                     f"as input modulesInputs: {len(orig)} modules\nOutputs: "
                                     f"{len(new)} modules")
            for (op, ob, om), (np_, nb, nm) in zip(orig, new):
                _check_fqn(op, np_, "Checking parameters: ")
                _check_fqn(ob, nb, "Checking buffers: ")
                _check_fqn(om, nm, "Checking modules: ")
            return updated

        def get_state(module):
            return module.__dict__.setdefault(STATE_KEY, {}).get(func)

        wrapper.state = get_state
        return wrapper

    return inner


def _get_registry(module):
    """The composable APIs applied to ``module`` by name (an ordered dict), or None."""
    return getattr(module, REGISTRY_KEY, None)
