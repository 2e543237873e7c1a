"""``ember.backends.opt_einsum``: PyTorch's switch for einsum's contraction order.

With three or more operands, einsum asks opt_einsum for the cheapest pairwise contraction order
when ``enabled`` is True and the package is installed, using ``strategy`` ("auto", "greedy" or
"optimal", or another of opt_einsum's strategies, as ``opt_einsum.contract_path``'s
``optimize``); otherwise it contracts left to right. Assignments are validated (``ContextProp``
setters; PyTorch's own are never installed, so it takes any value), and ``flags(...)`` scopes
both settings."""
import importlib.util
import sys
from contextlib import contextmanager

from .. import ContextProp, PropModule, _allow_nonbracketed_mutation

__all__ = ["is_available", "get_opt_einsum", "enabled", "strategy", "flags", "set_flags"]

_opt_einsum = None


def is_available():
    """Whether the opt_einsum package can be imported."""
    return importlib.util.find_spec("opt_einsum") is not None


def get_opt_einsum():
    """The opt_einsum module, or None when it is not installed."""
    global _opt_einsum
    if _opt_einsum is None and is_available():
        import opt_einsum
        _opt_einsum = opt_einsum
    return _opt_einsum


def _set_enabled(_enabled):
    if not is_available() and _enabled:
        raise ValueError(
            f"opt_einsum is not available, so setting `enabled` to {_enabled} will not reap "
            "the benefits of calculating an optimal path for einsum. torch.einsum will "
            "fall back to contracting from left to right. To enable this optimal path "
            "calculation, please install opt-einsum.")
    global enabled
    enabled = _enabled


def _get_enabled():
    return enabled


def _set_strategy(_strategy):
    if not is_available():
        raise ValueError(
            f"opt_einsum is not available, so setting `strategy` to {_strategy} will not be "
            "meaningful. torch.einsum will bypass path calculation and simply contract from left "
            "to right. Please install opt_einsum or unset `strategy`.")
    if not enabled:
        raise ValueError(
            f"opt_einsum is not enabled, so setting a `strategy` to {_strategy} will not be "
            "meaningful. torch.einsum will bypass path calculation and simply contract from left "
            "to right. Please set `enabled` to `True` as well or unset `strategy`.")
    if _strategy not in ["auto", "greedy", "optimal"] and not _opt_einsum_knows(_strategy):
        raise ValueError(f"`strategy` must be one of the following: [auto, greedy, optimal] but "
                         f"is {_strategy}")
    global strategy
    strategy = _strategy


def _opt_einsum_knows(name):
    """Whether ``name`` is one of opt_einsum's own path strategies ("auto-hq", "dp" ...):
    PyTorch's module stores an assigned strategy unchecked (its setter is never installed) and
    hands it to ``contract_path``, so programs set these (timm's Kron sets "auto-hq")."""
    try:
        get_opt_einsum().paths.get_path_fn(name)
    except KeyError:
        return False
    return True


def _get_strategy():
    return strategy


def set_flags(_enabled=None, _strategy=None):
    orig_flags = (enabled, None if not is_available() else strategy)
    if _enabled is not None:
        _set_enabled(_enabled)
    if _strategy is not None:
        _set_strategy(_strategy)
    return orig_flags


@contextmanager
def flags(enabled=None, strategy=None):
    with _allow_nonbracketed_mutation():
        orig_flags = set_flags(enabled, strategy)
    try:
        yield
    finally:
        with _allow_nonbracketed_mutation():
            set_flags(*orig_flags)


class OptEinsumModule(PropModule):
    enabled = ContextProp(_get_enabled, _set_enabled)
    strategy = None
    if is_available():
        strategy = ContextProp(_get_strategy, _set_strategy)


enabled = is_available()
strategy = "auto" if is_available() else None

sys.modules[__name__] = OptEinsumModule(sys.modules[__name__], __name__)
