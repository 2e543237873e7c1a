"""Random number generation state: ``Generator``, the default generator, ``manual_seed``,
``seed``, ``initial_seed``, ``get_rng_state``/``set_rng_state`` and ``fork_rng``.

A Generator wraps a NumPy PCG64 bit generator. Streams differ from PyTorch's (Philox/MT19937
there) but follow the same contract: the same seed gives the same values, and an explicit
``generator=`` argument never disturbs the default generator. The state is a uint8 tensor, as in
PyTorch, holding the PCG64 state, its increment, the buffered 32-bit half and the seed.

A CUDA generator also has a Philox offset, as PyTorch's CUDA generators (seed, offset): the CUDA
random kernels (``ember/_kernels/cuda/philox.py``) draw the numbers of (seed, offset) and take the
next offset (:meth:`Generator.philox_next`), so a device's random ops need no host state. Its
state tensor holds the offset after the fields above; the PCG64 part serves the random ops that
still run as CPU kernels.
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
# state layout: PCG64 state (16 bytes), increment (16), has_uint32 (1), uinteger (4), seed (8)
_STATE = struct.Struct("<16s16sBIQ")
_CUDA_STATE = struct.Struct("<16s16sBIQQ")  # ... and the Philox offset


def _seed_value(seed, who="manual_seed"):
    """A seed as PyTorch accepts it: any int in [-2**63, 2**64), negatives wrap modulo 2**64."""
    if isinstance(seed, str):
        raise RuntimeError(f"{who} expected a long, but got str")
    seed = int(seed)
    if not -(1 << 63) <= seed <= _MASK64:
        raise ValueError("Overflow when unpacking long long")
    return seed & _MASK64


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
        self._seed = DEFAULT_SEED
        self._np = np.random.Generator(np.random.PCG64(DEFAULT_SEED))
        self._offset = 0  # the next Philox offset (CUDA generators)

    def manual_seed(self, seed):
        self._seed = _seed_value(seed)
        self._np = np.random.Generator(np.random.PCG64(self._seed))
        self._offset = 0
        return self

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
        st = self._np.bit_generator.state
        fields = (st["state"]["state"].to_bytes(16, "little"),
                  st["state"]["inc"].to_bytes(16, "little"), st["has_uint32"], st["uinteger"],
                  self._seed)
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
            raise RuntimeError(f"Expected a PCG64 generator state of size {layout.size} but found "
                               f"the input RNG state size to be {new_state.numel()}")
        state, inc, has32, uint32, seed, *offset = layout.unpack(
            bytes(new_state.contiguous()._nd()))
        bitgen = np.random.PCG64()
        bitgen.state = {"bit_generator": "PCG64",
                        "state": {"state": int.from_bytes(state, "little"),
                                  "inc": int.from_bytes(inc, "little")},
                        "has_uint32": has32, "uinteger": uint32}
        self._np = np.random.Generator(bitgen)
        self._seed = seed
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
    """The NumPy generator a random kernel draws from: ``generator`` or the default one."""
    return (generator or default_generator)._np
