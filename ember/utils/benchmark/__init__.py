"""``ember.utils.benchmark``: timing statements (``Timer``), the ``Measurement`` it returns and
``Compare``'s tables of many measurements (PyTorch's ``torch.utils.benchmark``).

PyTorch's fuzzers (``Fuzzer``, ``FuzzedTensor`` ...), C++ timing (``language="c++"``) and
Callgrind instruction counts (``Timer.collect_callgrind``) are not here: the latter two raise
``NotImplementedError``.
"""
from .utils.common import (Measurement, TaskSpec, ordered_unique, select_unit,
                           set_torch_threads, trim_sigfig, unit_to_english)
from .utils.compare import Colorize, Compare
from .utils.timer import Language, Timer, timer

__all__ = ["TaskSpec", "Measurement", "select_unit", "unit_to_english", "trim_sigfig",
           "ordered_unique", "set_torch_threads", "Colorize", "Compare", "Timer", "timer",
           "Language"]
