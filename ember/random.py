"""Random number generation state: ``Generator``, the default generator, ``manual_seed``,
``seed``, ``initial_seed``, ``get_rng_state``/``set_rng_state`` and ``fork_rng``.

A Generator is PyTorch's CPU generator: an mt19937 engine seeded, as ``at::mt19937``, with the
low 32 bits of the seed (``init_with_uint32``; the whole 64-bit seed is kept as the initial seed),
plus the cached second sample of the double Box-Muller transform (``next_double_normal_sample``)
and the float one PyTorch keeps beside it. NumPy's ``MT19937`` bit generator holds that engine
exactly (its 624-word key and position), so ``random_raw`` gives the same 32-bit outputs as
``CPUGeneratorImpl::random()`` in bulk; ``random64()`` is two of them, the first the high half.
The CPU random kernels (``ember/_kernels/cpu/random.py``) turn these words into values with
ATen's transformations, so the same seed gives PyTorch's numbers, and the state tensor is
PyTorch's ``CPUGeneratorImplState`` byte for byte (5056 bytes): a state saved by either loads into
the other and continues the same stream.

A CUDA generator also has a Philox offset, as PyTorch's CUDA generators (seed, offset): the CUDA
random kernels (``ember/_kernels/cuda/philox.py``) draw the numbers of (seed, offset) and take the
next offset (:meth:`Generator.philox_next`), so a device's random ops need no host state. Its
state tensor is the CPU layout above followed by the offset (8 bytes): the mt19937 part serves the
random ops of CUDA tensors that still run as CPU kernels (the host fallback passes them the
device's generator).
"""
import contextlib
import os
import struct

import numpy as np

from ._core.device import device as _device

__all__ = ["Generator", "default_generator", "manual_seed", "seed", "initial_seed",
           "get_rng_state", "set_rng_state"]

DEFAULT_SEED = 67280421310721  # PyTorch's default CPU seed
_MASK64 = (1 << 64) - 1
_MT_N = 624
# CPUGeneratorImplState: the legacy THGeneratorState (initial seed, left, seeded, next, the 624
# words widened to uint64, normal_x, normal_y, normal_rho, normal_is_valid, padding) followed by
# next_float_normal_sample and its valid flag (and the struct's tail padding)
_STATE = struct.Struct(f"<QiiQ{_MT_N}Qdddi4xf?3x")
_CUDA_STATE = struct.Struct(_STATE.format + "Q")  # ... and the Philox offset


def _seed_value(seed, who="manual_seed"):
    """A seed as PyTorch accepts it: any int in [-2**63, 2**64), negatives wrap modulo 2**64."""
    if isinstance(seed, str):
        raise RuntimeError(f"{who} expected a long, but got str")
    seed = int(seed)
    if not -(1 << 63) <= seed <= _MASK64:
        raise ValueError("Overflow when unpacking long long")
    return seed & _MASK64


def _mt19937_key(seed):
    """mt19937's init_genrand recurrence from the low 32 bits of ``seed``: the 624-word state
    (NumPy's legacy seeding is that recurrence, in C)."""
    return np.random.RandomState(seed & 0xFFFFFFFF).get_state()[1].astype(np.uint32)


class Generator:
    """A source of random numbers for ``rand``, ``randn``, ``uniform_`` ... (``generator=``)."""

    # while a CUDA graph captures this generator's random ops: the graph's record of it
    # (ember/_kernels/cuda/random.py's GraphState)
    _graph_state = None

    def __init__(self, device="cpu"):
        dev = _device(device)
        if dev.type == "cuda":
            import ember.cuda  # a CUDA generator belongs to a device of the started runtime
            ember.cuda._lazy_init()
            dev = _device("cuda", ember.cuda._get_device_index(dev, optional=True))
        elif dev.type != "cpu":
            raise RuntimeError(f"{dev.type.upper()} device type not an accelerator.")
        self._init(dev)

    @classmethod
    def _for_device(cls, dev):
        """A generator for ``dev`` without the checks (the CUDA runtime makes its defaults)."""
        self = object.__new__(cls)
        self._init(dev)
        return self

    def _init(self, dev):
        self.device = dev
        self._engine = np.random.MT19937()
        self._offset = 0  # the next Philox offset (CUDA generators)
        self._set_seed(DEFAULT_SEED)

    def _set_seed(self, seed):
        self._seed = seed
        self._load(_mt19937_key(seed), _MT_N)
        self._next_at_twist = 0  # mt19937's ``next`` while a twist is due: 0 until the first draw
        self._next_double_normal = None
        self._next_float_normal = None

    def _load(self, key, pos):
        self._engine.state = {"bit_generator": "MT19937", "state": {"key": key, "pos": pos}}

    def manual_seed(self, seed):
        self._set_seed(_seed_value(seed))
        self._offset = 0
        return self

    # -- the engine's outputs, as CPUGeneratorImpl::random() and random64() ------------------

    def _random(self, n):
        """``n`` 32-bit outputs of the engine (uint64 array): CPUGeneratorImpl::random()."""
        if n:
            self._next_at_twist = _MT_N
        return self._engine.random_raw(n)

    def _bitgen(self):
        """The engine's C interface (NumPy's ``bitgen_t`` capsule) for a compiled kernel that
        draws its words itself; the caller draws at least one."""
        self._next_at_twist = _MT_N
        return self._engine.capsule

    def _random64(self, n):
        """``n`` 64-bit outputs (random64()): two 32-bit draws each, the first the high half."""
        w = self._random(2 * n)
        return (w[0::2] << np.uint64(32)) | w[1::2]

    def philox_next(self, increment=1):
        """(seed, offset) for one random op on a CUDA device; the next op gets the next offset
        (PyTorch's ``philox_cuda_state``). A CUDA graph's replay takes as many offsets as the
        graph has random ops (``increment``)."""
        offset = self._offset
        self._offset = (offset + increment) & _MASK64
        return self._seed, offset

    def seed(self):
        """Reseed from a non-deterministic source; returns the new seed."""
        s = int.from_bytes(os.urandom(8), "little") & ((1 << 63) - 1)
        self.manual_seed(s)
        return s

    def initial_seed(self):
        return self._seed

    def get_state(self):
        from ._tensor import wrap_array
        st = self._engine.state["state"]
        pos = int(st["pos"])
        # mt19937's (left, next): the next output is state[next] unless left == 1 (a twist first)
        left, nxt = (1, self._next_at_twist) if pos == _MT_N else (_MT_N + 1 - pos, pos)
        dn, fn = self._next_double_normal, self._next_float_normal
        fields = (self._seed, left, 1, nxt, *(int(w) for w in st["key"]), 0.0,
                  0.0 if dn is None else dn, 0.0, dn is not None,
                  0.0 if fn is None else fn, fn is not None)
        raw = (_CUDA_STATE.pack(*fields, self._offset) if self.device.type == "cuda"
               else _STATE.pack(*fields))
        return wrap_array(np.frombuffer(raw, np.uint8).copy())

    def set_state(self, new_state):
        if not hasattr(new_state, "_keyset"):
            raise TypeError(f"expected a torch.ByteTensor, but got {type(new_state).__name__}")
        if new_state.dtype.name != "uint8":
            raise TypeError("RNG state must be a torch.ByteTensor")
        layout = _CUDA_STATE if self.device.type == "cuda" else _STATE
        if new_state.numel() != layout.size:
            raise RuntimeError(f"Expected a CPUGeneratorImplState of size {layout.size} but found "
                               f"the input RNG state size to be {new_state.numel()}")
        fields = layout.unpack(bytes(new_state.contiguous()._nd()))
        seed, left, seeded, nxt = fields[:4]
        key = fields[4:4 + _MT_N]
        (_, normal_y, _, normal_valid, float_normal, float_valid,
         *offset) = fields[4 + _MT_N:]
        if not (seeded and 0 < left <= _MT_N and nxt <= _MT_N):
            raise RuntimeError("Invalid mt19937 state")
        # the legacy layout widened the words to uint64; the engine keeps their low halves
        self._load(np.array(key, np.uint64).astype(np.uint32), _MT_N if left == 1 else nxt)
        self._next_at_twist = nxt
        self._seed = seed
        self._next_double_normal = normal_y if normal_valid else None
        self._next_float_normal = float_normal if float_valid else None
        self._offset = offset[0] if offset else 0
        return self

    def __repr__(self):
        return f"<ember.Generator object at {hex(id(self))}>"


default_generator = Generator()


def manual_seed(seed):
    """Seed the default generator and every CUDA device's (queued until CUDA starts), as
    PyTorch; returns the default generator. Anything int() accepts is a seed."""
    import ember.cuda  # seeding every device is ember.cuda's job; it imports this module
    gen = default_generator.manual_seed(int(seed))
    ember.cuda.manual_seed_all(gen.initial_seed())
    return gen


def seed():
    return default_generator.seed()


def initial_seed():
    return default_generator.initial_seed()


def get_rng_state():
    return default_generator.get_state()


def set_rng_state(new_state):
    default_generator.set_state(new_state)


_fork_rng_warned_already = False


@contextlib.contextmanager
def fork_rng(devices=None, enabled=True, _caller="fork_rng", _devices_kw="devices",
             device_type="cuda"):
    """Restore the default generator's state, and those of ``devices`` (by default every device
    of ``device_type``), on exit."""
    global _fork_rng_warned_already
    import ember
    device_mod = getattr(ember, device_type, None)
    if device_mod is None:
        raise RuntimeError(f"torch has no module of `{device_type}`, you should register a module "
                           f"by `torch._register_device_module`.")
    if not enabled:
        yield
        return
    if devices is None:
        num_devices = device_mod.device_count()
        if num_devices > 1 and not _fork_rng_warned_already:
            up = device_type.upper()
            import warnings
            warnings.warn(
                f"{up} reports that you have {num_devices} available devices, and you have used "
                f"{_caller} without explicitly specifying which devices are being used. For "
                f"safety, we initialize *every* {up} device by default, which can be quite slow "
                f"if you have a lot of {up}s. If you know that you are only making use of a few "
                f"{up} devices, set the environment variable {up}_VISIBLE_DEVICES or the "
                f"'{_devices_kw}' keyword argument of {_caller} with the set of devices you are "
                f"actually using. For example, if you are using CPU only, set "
                f"device.upper()_VISIBLE_DEVICES= or devices=[]; if you are using device 0 only, "
                f"set {up}_VISIBLE_DEVICES=0 or devices=[0].  To initialize all devices and "
                f"suppress this warning, set the '{_devices_kw}' keyword argument to "
                f"`range(torch.{device_type}.device_count())`.", stacklevel=3)
            _fork_rng_warned_already = True
        devices = list(range(num_devices))
    else:
        devices = list(devices)
    cpu_state = get_rng_state()
    device_states = [device_mod.get_rng_state(d) for d in devices]
    try:
        yield
    finally:
        set_rng_state(cpu_state)
        for d, st in zip(devices, device_states):
            device_mod.set_rng_state(st, d)


def generator_of(generator):
    """The generator a random kernel draws from: ``generator`` or the default one."""
    return generator or default_generator
