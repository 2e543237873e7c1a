"""The state a composable distributed API (``fully_shard``) keeps for the modules it manages,
and the module -> state mapping (PyTorch's ``torch.distributed._composable_state``). The
mapping holds modules and states weakly: a state lives as long as its API's data on the
module does."""
import weakref

__all__ = []


class _State:
    pass


_module_state_mapping = weakref.WeakKeyDictionary()


def _insert_module_state(module, state):
    if module in _module_state_mapping:
        raise AssertionError(f"Inserting {module} more than once.")
    _module_state_mapping[module] = weakref.ref(state)


def _get_module_state(module):
    """``module`` itself if it is a ``_State``, else the state of the composable API that
    manages it, or None."""
    if isinstance(module, _State):
        return module
    if module in _module_state_mapping:
        state = _module_state_mapping[module]()
        if state is None:
            raise AssertionError("State has already been garbage collected")
        return state
    return None
