"""``torch.quantization.quantize``: ``ember.ao.quantization.quantize`` under its legacy path."""
from ..ao.quantization.quantize import *  # noqa: F401,F403
from ..ao.quantization.quantize import (_add_observer_, _convert,  # noqa: F401
                                        _observer_forward_hook, _remove_qconfig)
