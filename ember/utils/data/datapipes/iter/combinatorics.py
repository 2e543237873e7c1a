"""``Sampler`` (indices or elements from a ``Sampler`` class over a sized datapipe) and
``Shuffler`` (``shuffle``): a buffer shuffle driven by a ``random.Random`` seeded, at each new
iterator, from ember's default generator unless ``set_seed`` gave a seed — so the DataLoader
and ``graph_settings.apply_random_seed`` control it, and a seed gives PyTorch's order."""
import random
from collections.abc import Iterator, Sized
from typing import TypeVar

from ..... import empty, int64
from ...sampler import Sampler, SequentialSampler
from .._decorator import functional_datapipe
from ..datapipe import IterDataPipe

__all__ = ["SamplerIterDataPipe", "ShufflerIterDataPipe"]

_T_co = TypeVar("_T_co", covariant=True)


class SamplerIterDataPipe(IterDataPipe[_T_co]):
    """Yields what ``sampler(*sampler_args, data_source=datapipe, **sampler_kwargs)`` yields
    (``SequentialSampler`` by default)."""

    datapipe: IterDataPipe
    sampler: Sampler

    def __init__(self, datapipe: IterDataPipe, sampler: type[Sampler] = SequentialSampler,
                 sampler_args: tuple | None = None, sampler_kwargs: dict | None = None):
        if not isinstance(datapipe, Sized):
            raise AssertionError("Sampler class requires input datapipe implemented `__len__`")
        super().__init__()
        self.datapipe = datapipe
        self.sampler_args = () if sampler_args is None else sampler_args
        self.sampler_kwargs = {} if sampler_kwargs is None else sampler_kwargs
        self.sampler_kwargs["data_source"] = self.datapipe
        self.sampler = sampler(*self.sampler_args, **self.sampler_kwargs)

    def __iter__(self) -> Iterator[_T_co]:
        return iter(self.sampler)

    def __len__(self) -> int:
        if isinstance(self.sampler, Sized):
            return len(self.sampler)
        raise TypeError(f"{type(self).__name__} instance doesn't have valid length")


@functional_datapipe("shuffle")
class ShufflerIterDataPipe(IterDataPipe[_T_co]):
    """Shuffles with a buffer of ``buffer_size`` elements (functional name: ``shuffle``):
    once the buffer is full each new element replaces a random one, which is yielded; the
    rest leaves in random order at the end. ``buffer_size >= len`` shuffles fully, ``1`` not
    at all. ``unbatch_level`` unbatches the source first."""

    datapipe: IterDataPipe[_T_co]
    buffer_size: int
    _buffer: list
    _enabled: bool
    _seed: int | None
    _rng: random.Random

    def __init__(self, datapipe: IterDataPipe[_T_co], *, buffer_size: int = 10000,
                 unbatch_level: int = 0):
        super().__init__()
        self._buffer = []
        if buffer_size <= 0:
            raise AssertionError("buffer_size should be larger than 0")
        self.datapipe = (datapipe if unbatch_level == 0
                         else datapipe.unbatch(unbatch_level=unbatch_level))
        self.buffer_size = buffer_size
        self._enabled = True
        self._seed = None
        self._rng = random.Random()

    def set_shuffle(self, shuffle=True):
        self._enabled = shuffle
        return self

    def set_seed(self, seed: int):
        self._seed = seed
        return self

    def __iter__(self) -> Iterator[_T_co]:
        if not self._enabled:
            yield from self.datapipe
            return
        for x in self.datapipe:
            if len(self._buffer) == self.buffer_size:
                idx = self._rng.randint(0, len(self._buffer) - 1)
                val, self._buffer[idx] = self._buffer[idx], x
                yield val
            else:
                self._buffer.append(x)
        while self._buffer:
            idx = self._rng.randint(0, len(self._buffer) - 1)
            yield self._buffer.pop(idx)

    def __len__(self) -> int:
        if isinstance(self.datapipe, Sized):
            return len(self.datapipe)
        raise TypeError(f"{type(self).__name__} instance doesn't have valid length")

    def reset(self):
        self._buffer = []
        if self._enabled:
            if self._seed is None:  # a fresh seed from the default generator
                self._seed = int(empty((), dtype=int64).random_().item())
            self._rng.seed(self._seed)
            self._seed = None  # used once: the next iterator draws again

    def __getstate__(self):
        state = (self.datapipe, self.buffer_size, self._enabled, self._seed, self._buffer,
                 self._rng.getstate(), self._valid_iterator_id,
                 self._number_of_samples_yielded)
        if IterDataPipe.getstate_hook is not None:
            return IterDataPipe.getstate_hook(state)
        return state

    def __setstate__(self, state):
        (self.datapipe, self.buffer_size, self._enabled, self._seed, self._buffer, rng_state,
         self._valid_iterator_id, self._number_of_samples_yielded) = state
        self._rng = random.Random()
        self._rng.setstate(rng_state)

    def __del__(self):
        self._buffer.clear()
