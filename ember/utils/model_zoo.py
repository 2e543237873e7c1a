"""``torch.utils.model_zoo``: the old name of ``torch.hub``'s checkpoint download."""
# tqdm too: PyTorch's module re-exports hub's (torchvision imports it from here)
from ..hub import load_state_dict_from_url as load_url, tqdm  # noqa: F401

__all__ = ["load_url"]
