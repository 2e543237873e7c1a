"""``ember.utils.deterministic``: ``fill_uninitialized_memory`` — whether, under
``ember.use_deterministic_algorithms(True)``, memory from ``empty``-style factories and
``resize_`` is filled with a known value (NaN, or the dtype's largest integer) instead of left
as whatever the allocator returned."""
import sys
import types

from ..backends._context import ctx as _ctx


class _Deterministic(types.ModuleType):
    @property
    def fill_uninitialized_memory(self):
        """Whether to fill uninitialized memory with a known value when
        :meth:`ember.use_deterministic_algorithms()` is set to ``True`` (default True)."""
        return _ctx.deterministic_fill_uninitialized_memory

    @fill_uninitialized_memory.setter
    def fill_uninitialized_memory(self, mode):
        if not isinstance(mode, bool):
            raise RuntimeError(f"expected a bool, but got {type(mode).__name__}")
        _ctx.deterministic_fill_uninitialized_memory = mode


sys.modules[__name__].__class__ = _Deterministic
