"""``ember.backends.opt_einsum``: PyTorch's switch for einsum's contraction order.

With three or more operands, einsum asks opt_einsum for the cheapest pairwise contraction order
when ``enabled`` is True and the package is installed, using ``strategy`` ("auto", "greedy" or
"optimal", as ``opt_einsum.contract_path``'s ``optimize``); otherwise it contracts left to
right."""
import importlib.util

__all__ = ["is_available", "get_opt_einsum", "enabled", "strategy"]

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


enabled = is_available()
strategy = "auto" if is_available() else None
