"""``torch.utils.data._utils``: where PyTorch keeps the DataLoader's helpers, which programs
import from there (``from torch.utils.data._utils.collate import default_collate``). ember's
modules are one level up; these names are those modules."""
import sys

from .. import _pin_memory as pin_memory, collate, worker

__all__ = ["collate", "pin_memory", "worker"]

for _name, _module in (("collate", collate), ("pin_memory", pin_memory), ("worker", worker)):
    sys.modules[f"{__name__}.{_name}"] = _module
