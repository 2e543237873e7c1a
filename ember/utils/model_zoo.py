"""``torch.utils.model_zoo``: the old name of ``torch.hub``'s checkpoint download."""
from ..hub import load_state_dict_from_url as load_url  # noqa: F401

__all__ = ["load_url"]
