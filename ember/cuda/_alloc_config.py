"""The CUDA caching allocator's settings: ``PYTORCH_CUDA_ALLOC_CONF`` parsed as PyTorch 2.13 parses it.

PyTorch parses one string twice: first the device-generic keys
(``c10/core/AllocatorConfig.cpp``: segment sizes, splitting, rounding, garbage collection,
expandable segments, pinned-memory rounding), then the CUDA keys (``CUDAAllocatorConfig.cpp``:
backend, lock release, pinned host registration, the per-process memory fraction, ...). Each pass
walks the same token list (``key``, ``:``, value or ``[`` list ``]``, ``,``) and rejects keys that
neither pass knows. The environment variables are read once, at first use, in PyTorch's order:
``PYTORCH_CUDA_ALLOC_CONF``, then ``PYTORCH_HIP_ALLOC_CONF``, then ``PYTORCH_ALLOC_CONF`` (the first
one set wins). ``ember.cuda.memory._set_allocator_settings(s)`` parses ``s`` again at run time.

The error types and messages are PyTorch's: ``ValueError`` for a bad value (``TORCH_CHECK_VALUE``,
and C++'s ``std::stoull``/``std::stod`` failures, which PyTorch surfaces as ``ValueError('stoull')``),
``RuntimeError`` for a key with its value missing (an internal assert in PyTorch's tokenizer).
"""
import os
import re

__all__ = ["AllocatorConfig", "config", "set_allocator_settings", "get_allocator_settings"]

MB = 1 << 20
K_LARGE_BUFFER = 20 * MB  # default large_segment_size
K_MIN_LARGE_ALLOC = 10 * MB
SIZE_MAX = (1 << 64) - 1  # std::numeric_limits<size_t>::max(): "unlimited"
ROUNDUP_INTERVALS = 16  # power-of-two rounding intervals: 1 MiB .. 64 GiB
PINNED_MAX_REGISTER_THREADS = 128

GENERIC_KEYS = frozenset({
    "large_segment_size_mb", "max_split_size_mb", "max_non_split_rounding_mb",
    "garbage_collection_threshold", "roundup_power2_divisions", "expandable_segments",
    "pinned_use_background_threads", "pinned_max_round_threshold_mb", "pinned_max_cached_size_mb"})
CUDA_KEYS = frozenset({
    "backend", "release_lock_on_cudamalloc", "pinned_use_cuda_host_register",
    "release_lock_on_hipmalloc", "pinned_use_hip_host_register",
    "graph_capture_record_stream_reuse", "pinned_reserve_segment_size_mb",
    "pinned_num_register_threads", "per_process_memory_fraction", "pinned_free_catch_all",
    "throw_on_cudamalloc_oom"})
ENV_VARS = ("PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_HIP_ALLOC_CONF", "PYTORCH_ALLOC_CONF")

_INDEX_ASSERT = ('i < config_.size() INTERNAL ASSERT FAILED at '
                 '"/__w/pytorch/pytorch/c10/core/AllocatorConfig.h":124, please report a bug to '
                 'PyTorch. Index out of bounds in ConfigTokenizer')


class _Tokens:
    """PyTorch's ConfigTokenizer: ``, : [ ]`` are tokens of their own, whitespace is dropped."""

    def __init__(self, env):
        self.t = []
        buf = ""
        for ch in env:
            if ch in ",:[]":
                if buf:
                    self.t.append(buf)
                    buf = ""
                self.t.append(ch)
            elif not ch.isspace():
                buf += ch
        if buf:
            self.t.append(buf)

    def __len__(self):
        return len(self.t)

    def __getitem__(self, i):
        if i >= len(self.t):
            raise RuntimeError(_INDEX_ASSERT)
        return self.t[i]

    def check(self, i, token):
        # PyTorch's checkToken only asserts that the index exists; a wrong separator is not
        # reported (its result is ignored by the parsers), so neither is it here.
        return self[i] == token

    def to_size_t(self, i):
        m = re.match(r"\s*([+-]?)(\d+)", self[i])
        if not m:
            raise ValueError("stoull")
        v = int(m.group(2))
        if v > SIZE_MAX:
            raise IndexError("stoull")  # std::out_of_range
        return (-v) % (1 << 64) if m.group(1) == "-" else v  # stoull wraps negatives

    def to_double(self, i):
        m = re.match(r"\s*[+-]?(\d+\.?\d*([eE][+-]?\d+)?|\.\d+([eE][+-]?\d+)?|inf|nan)",
                     self[i], re.IGNORECASE)
        if not m:
            raise ValueError("stod")
        return float(m.group(0))

    def to_bool(self, i):
        tok = self[i]
        if tok == "True":
            return True
        if tok == "False":
            return False
        raise ValueError(f"Expected 'True' or 'False' at index {i} in ConfigTokenizer but got "
                         f"'{tok}'")

    def skip_key(self, i):
        self.check(i + 1, ":")
        i += 2
        if self[i] != "[":
            return i
        i += 1
        while i < len(self.t) and self.t[i] != "]":
            i += 1
        if i >= len(self.t):
            raise RuntimeError("Expected closing bracket ']' in ConfigTokenizer but reached end "
                               "of config")
        return i


def _is_pow2(v):
    return v > 0 and v & (v - 1) == 0


class AllocatorConfig:
    """The settings (defaults as PyTorch's); :meth:`parse` applies a configuration string."""

    def __init__(self):
        # generic (AcceleratorAllocatorConfig)
        self.large_segment_size = K_LARGE_BUFFER
        self.max_split_size = SIZE_MAX
        self.max_non_split_rounding_size = K_LARGE_BUFFER
        self.roundup_power2_divisions = [0] * ROUNDUP_INTERVALS
        self.garbage_collection_threshold = 0.0
        self.expandable_segments = False
        self.pinned_use_background_threads = False
        self.pinned_max_round_threshold = SIZE_MAX
        self.pinned_max_cached_size = SIZE_MAX
        self.last_allocator_settings = ""
        # CUDA (CUDAAllocatorConfig)
        self.backend = "native"
        self.release_lock_on_cudamalloc = False
        self.pinned_use_cuda_host_register = False
        self.pinned_num_register_threads = 1
        self.pinned_reserve_segment_size_mb = 0
        self.graph_capture_record_stream_reuse = False
        self.per_process_memory_fraction = 1.0
        self.pinned_free_catch_all = False
        self.throw_on_cudamalloc_oom = False

    def divisions_for(self, size):
        """``roundup_power2_divisions(size)``: the divisions of the interval holding ``size``."""
        log_size = size.bit_length() - 1
        index = max(log_size - 20, 0)
        return self.roundup_power2_divisions[min(index, ROUNDUP_INTERVALS - 1)]

    # -- parsing -------------------------------------------------------------------------------
    def parse(self, env):
        self._parse_generic(env)
        self._parse_cuda(env)

    def _parse_generic(self, env):
        # Reset on every parse, as PyTorch does (the other settings keep their values).
        self.max_split_size = SIZE_MAX
        self.roundup_power2_divisions = [0] * ROUNDUP_INTERVALS
        self.garbage_collection_threshold = 0.0
        self.last_allocator_settings = env
        tok = _Tokens(env)
        # large_segment_size_mb first: the lower bounds of two other keys depend on it.
        i = 0
        while i < len(tok):
            if tok[i] == "large_segment_size_mb":
                tok.check(i + 1, ":")
                v = tok.to_size_t(i + 2)
                i += 2
                floor = K_MIN_LARGE_ALLOC // MB
                if not v > floor:
                    raise ValueError(f"CachingAllocator option large_segment_size_mb must be > "
                                     f"{floor} MB")
                self.large_segment_size = min(v, SIZE_MAX // MB) * MB
            i += 1
        self.max_non_split_rounding_size = self.large_segment_size
        i = 0
        while i < len(tok):
            key = tok[i]
            if key == "large_segment_size_mb":
                i = tok.skip_key(i)
            elif key in ("max_split_size_mb", "max_non_split_rounding_mb"):
                tok.check(i + 1, ":")
                v = tok.to_size_t(i + 2)
                i += 2
                floor = self.large_segment_size // MB
                if v < floor:
                    raise ValueError(f"CachingAllocator option {key} too small, must be >= {floor}")
                v = min(v, SIZE_MAX // MB) * MB
                if key == "max_split_size_mb":
                    self.max_split_size = v
                else:
                    self.max_non_split_rounding_size = v
            elif key == "garbage_collection_threshold":
                tok.check(i + 1, ":")
                v = tok.to_double(i + 2)
                i += 2
                if not 0 < v < 1.0:
                    raise ValueError("garbage_collect_threshold is invalid, set it in (0.0, 1.0)")
                self.garbage_collection_threshold = v
            elif key == "roundup_power2_divisions":
                i = self._parse_roundup(tok, i)
            elif key == "expandable_segments":
                tok.check(i + 1, ":")
                self.expandable_segments = tok.to_bool(i + 2)
                i += 2
            elif key == "pinned_use_background_threads":
                tok.check(i + 1, ":")
                self.pinned_use_background_threads = tok.to_bool(i + 2)
                i += 2
            elif key in ("pinned_max_round_threshold_mb", "pinned_max_cached_size_mb"):
                tok.check(i + 1, ":")
                v = min(tok.to_size_t(i + 2), SIZE_MAX // MB) * MB
                i += 2
                if key == "pinned_max_round_threshold_mb":
                    self.pinned_max_round_threshold = v
                else:
                    self.pinned_max_cached_size = v
            else:
                # With a device parser registered (CUDA's), unknown keys are refused here.
                if key not in GENERIC_KEYS | CUDA_KEYS:
                    raise ValueError(f"Unrecognized key '{key}' in Accelerator allocator config.")
                i = tok.skip_key(i)
            if i + 1 < len(tok):
                tok.check(i + 1, ",")
                i += 1
            i += 1

    def _parse_roundup(self, tok, i):
        tok.check(i + 1, ":")
        i += 2
        divs = self.roundup_power2_divisions
        if tok[i] == "[":
            first, last_index = True, 0
            i += 1
            while i < len(tok) and tok[i] != "]":
                value_index = i
                tok.check(i + 1, ":")
                value = tok.to_size_t(i + 2)
                i += 2
                if not (value == 0 or _is_pow2(value)):
                    raise ValueError("For roundups, the divisions has to be power of 2 or 0 to "
                                     "disable roundup ")
                if tok[value_index] == ">":
                    for k in range(last_index + 1, ROUNDUP_INTERVALS):
                        divs[k] = value
                else:
                    boundary = tok.to_size_t(value_index)
                    if not _is_pow2(boundary):
                        raise ValueError("For roundups, the intervals have to be power of 2 ")
                    index = min(max(boundary.bit_length() - 1, 0), ROUNDUP_INTERVALS - 1)
                    if first:  # the first entry also covers every interval below it
                        for k in range(index):
                            divs[k] = value
                        first = False
                    divs[index] = value
                    last_index = index
                if tok[i + 1] != "]":
                    tok.check(i + 1, ",")
                    i += 1
                i += 1
            if i >= len(tok):
                raise RuntimeError("Expected closing bracket ']' in ConfigTokenizer but reached "
                                   "end of config")
        else:  # a single value for every interval
            value = tok.to_size_t(i)
            if not _is_pow2(value):
                raise ValueError("For roundups, the divisions has to be power of 2 ")
            divs[:] = [value] * ROUNDUP_INTERVALS
        return i

    def _parse_cuda(self, env):
        tok = _Tokens(env)
        i = 0
        while i < len(tok):
            key = tok[i]
            if key == "backend":
                tok.check(i + 1, ":")
                v = tok[i + 2]
                i += 2
                if v not in ("native", "cudaMallocAsync"):
                    raise ValueError("Unknown allocator backend, options are native and "
                                     "cudaMallocAsync")
                if v != "native":
                    # ember has the native allocator only: PyTorch's own check for a backend
                    # that differs from the one loaded.
                    raise RuntimeError(
                        f'tokenizer[i] == get()->name() INTERNAL ASSERT FAILED at '
                        f'"/__w/pytorch/pytorch/c10/cuda/CUDAAllocatorConfig.cpp":55, please '
                        f'report a bug to PyTorch. Allocator backend parsed at runtime != '
                        f'allocator backend parsed at load time, {v} != native')
                self.backend = v
            elif key in ("release_lock_on_cudamalloc", "release_lock_on_hipmalloc"):
                tok.check(i + 1, ":")
                self.release_lock_on_cudamalloc = tok.to_bool(i + 2)
                i += 2
            elif key in ("pinned_use_cuda_host_register", "pinned_use_hip_host_register"):
                tok.check(i + 1, ":")
                self.pinned_use_cuda_host_register = tok.to_bool(i + 2)
                i += 2
            elif key == "pinned_num_register_threads":
                tok.check(i + 1, ":")
                v = tok.to_size_t(i + 2)
                i += 2
                if not _is_pow2(v):
                    raise ValueError(f"Number of register threads has to be power of 2, got {v}")
                if v > PINNED_MAX_REGISTER_THREADS:
                    raise ValueError(f"Number of register threads should be less than or equal "
                                     f"to {PINNED_MAX_REGISTER_THREADS}, got {v}")
                self.pinned_num_register_threads = v
            elif key == "pinned_reserve_segment_size_mb":
                tok.check(i + 1, ":")
                v = tok.to_size_t(i + 2)
                i += 2
                if not v > 0:
                    raise ValueError("Pinned reserve segment size has to be greater than 0")
                self.pinned_reserve_segment_size_mb = v
            elif key == "graph_capture_record_stream_reuse":
                tok.check(i + 1, ":")
                self.graph_capture_record_stream_reuse = tok.to_bool(i + 2)
                i += 2
            elif key == "per_process_memory_fraction":
                tok.check(i + 1, ":")
                v = tok.to_double(i + 2)
                i += 2
                if not 0.0 <= v <= 1.0:
                    raise ValueError("per_process_memory_fraction is invalid, set it in [0.0, 1.0]")
                self.per_process_memory_fraction = v
            elif key == "pinned_free_catch_all":
                tok.check(i + 1, ":")
                self.pinned_free_catch_all = tok.to_bool(i + 2)
                i += 2
            elif key == "throw_on_cudamalloc_oom":
                tok.check(i + 1, ":")
                self.throw_on_cudamalloc_oom = tok.to_bool(i + 2)
                i += 2
            else:
                if key not in GENERIC_KEYS | CUDA_KEYS:
                    raise ValueError(f"Unrecognized key '{key}' in CUDA allocator config.")
                i = tok.skip_key(i)
            if i + 1 < len(tok):
                tok.check(i + 1, ",")
                i += 1
            i += 1

    def metadata(self):
        """The ``allocator_settings`` of a snapshot (PyTorch's ``config_metadata``)."""
        divs = {}
        for k, d in enumerate(self.roundup_power2_divisions):
            divs[str(1 << k)] = d  # keyed by the interval's lower bound in MiB
        return {
            "PYTORCH_CUDA_ALLOC_CONF": self.last_allocator_settings,
            "max_split_size": _as_int64(self.max_split_size),
            "garbage_collection_threshold": self.garbage_collection_threshold,
            "expandable_segments": self.expandable_segments,
            "pinned_num_register_threads": self.pinned_num_register_threads,
            "release_lock_on_cudamalloc": self.release_lock_on_cudamalloc,
            "pinned_use_cuda_host_register": self.pinned_use_cuda_host_register,
            "roundup_power2_divisions": divs,
            "graph_capture_record_stream_reuse": self.graph_capture_record_stream_reuse,
        }


def _as_int64(v):
    """A size_t read as int64_t, as PyTorch's stats do (SIZE_MAX reads -1)."""
    return v - (1 << 64) if v >= 1 << 63 else v


_config = None


def config():
    """The process's settings, read from the environment the first time they are needed."""
    global _config
    if _config is None:
        c = AllocatorConfig()
        for var in ENV_VARS:
            env = os.environ.get(var)
            if env is not None:
                c.parse(env)
                break
        _config = c
    return _config


def set_allocator_settings(env):
    """Parse ``env`` over the current settings (``_set_allocator_settings``). On an error the
    settings parsed before it stay applied, as in PyTorch."""
    config().parse(env)


def get_allocator_settings():
    return config().last_allocator_settings


def _reset_for_tests(env=None):
    """Fresh default settings, then ``env`` parsed over them (tests only)."""
    global _config
    _config = AllocatorConfig()
    if env is not None:
        _config.parse(env)
    return _config
