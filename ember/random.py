"""Random number generation state: ``Generator``, the default generator, ``manual_seed``,
``seed``, ``initial_seed``, ``get_rng_state``/``set_rng_state`` and ``fork_rng``.

A Generator wraps a NumPy PCG64 bit generator. Streams differ from PyTorch's (Philox/MT19937
there) but follow the same contract: the same seed gives the same values, and an explicit
``generator=`` argument never disturbs the default generator. The state is a uint8 tensor, as in
PyTorch, holding the PCG64 state, its increment, the buffered 32-bit half and the seed.
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

    def manual_seed(self, seed):
        self._seed = _seed_value(seed)
        self._np = np.random.Generator(np.random.PCG64(self._seed))
        return self

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
        raw = _STATE.pack(st["state"]["state"].to_bytes(16, "little"),
                          st["state"]["inc"].to_bytes(16, "little"),
                          st["has_uint32"], st["uinteger"], self._seed)
        return wrap_array(np.frombuffer(raw, np.uint8).copy())

    def set_state(self, new_state):
        if not hasattr(new_state, "_keyset"):
            raise TypeError(f"expected a torch.ByteTensor, but got {type(new_state).__name__}")
        if new_state.dtype.name != "uint8":
            raise TypeError("RNG state must be a torch.ByteTensor")
        if new_state.numel() != _STATE.size:
            raise RuntimeError(f"Expected a PCG64 generator state of size {_STATE.size} but found "
                               f"the input RNG state size to be {new_state.numel()}")
        state, inc, has32, uint32, seed = _STATE.unpack(bytes(new_state.contiguous()._nd()))
        bitgen = np.random.PCG64()
        bitgen.state = {"bit_generator": "PCG64",
                        "state": {"state": int.from_bytes(state, "little"),
                                  "inc": int.from_bytes(inc, "little")},
                        "has_uint32": has32, "uinteger": uint32}
        self._np = np.random.Generator(bitgen)
        self._seed = seed
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


@contextlib.contextmanager
def fork_rng(devices=None, enabled=True, _caller="fork_rng", _devices_kw="devices",
             device_type="cuda"):
    """Restore the default generator's state on exit."""
    if not enabled:
        yield
        return
    state = get_rng_state()
    try:
        yield
    finally:
        set_rng_state(state)


def generator_of(generator):
    """The NumPy generator a random kernel draws from: ``generator`` or the default one."""
    return (generator or default_generator)._np
