"""``torch.ao.nn.quantized``: quantized modules. ember has the dynamic ones' Linear
(``dynamic``); static quantized modules, which take quantized inputs, are not provided."""
from . import dynamic  # noqa: F401
