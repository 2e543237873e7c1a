"""What ``import torch`` exposes about mixed precision and profiling at top level.

``ember/__init__.py`` star-imports this module: ``ember.autocast``, the torch-level autocast state
functions (``ember.is_autocast_enabled``, ``ember.set_autocast_dtype``, ...), and the
``ember.amp`` / ``ember.cpu`` / ``ember.cuda`` / ``ember.profiler`` subpackages.
"""
from .. import amp, cpu, cuda, profiler  # noqa: F401
from .autocast_mode import (autocast, autocast_decrement_nesting,  # noqa: F401
                            autocast_increment_nesting, clear_autocast_cache,
                            get_autocast_cpu_dtype, get_autocast_dtype, get_autocast_gpu_dtype,
                            is_autocast_cache_enabled, is_autocast_cpu_enabled,
                            is_autocast_enabled, set_autocast_cache_enabled,
                            set_autocast_cpu_dtype, set_autocast_cpu_enabled, set_autocast_dtype,
                            set_autocast_enabled, set_autocast_gpu_dtype)

__all__ = ["amp", "cpu", "cuda", "profiler", "autocast", "autocast_decrement_nesting",
           "autocast_increment_nesting", "clear_autocast_cache", "get_autocast_cpu_dtype",
           "get_autocast_dtype", "get_autocast_gpu_dtype", "is_autocast_cache_enabled",
           "is_autocast_cpu_enabled", "is_autocast_enabled", "set_autocast_cache_enabled",
           "set_autocast_cpu_dtype", "set_autocast_cpu_enabled", "set_autocast_dtype",
           "set_autocast_enabled", "set_autocast_gpu_dtype"]
