"""PyTorch's ``torch.export.custom_obj``: the metadata an exported graph's node keeps for a
script object (a custom class instance) it uses."""
from dataclasses import dataclass

__all__ = ["ScriptObjectMeta"]


@dataclass
class ScriptObjectMeta:
    """Metadata stored on nodes representing ScriptObjects."""
    # the key of the real object in the program's constants table
    constant_name: str
    class_fqn: str
