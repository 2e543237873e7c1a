"""``shuffle`` of a MapDataPipe: an IterDataPipe over a random permutation of its indices (an
iterable, since order is what a shuffle produces), seeded like the iterable Shuffler."""
import random
from collections.abc import Iterator
from typing import TypeVar

from ..... import empty, int64
from ..datapipe import IterDataPipe, MapDataPipe

__all__ = ["ShufflerIterDataPipe"]

_T_co = TypeVar("_T_co", covariant=True)


class ShufflerIterDataPipe(IterDataPipe[_T_co]):
    """Yields ``datapipe[i]`` for ``indices`` (default ``range(len(datapipe))``) in an order
    drawn with ``random.Random.sample`` at each new iterator (functional name: ``shuffle``)."""

    datapipe: MapDataPipe[_T_co]
    _enabled: bool
    _seed: int | None
    _rng: random.Random

    def __init__(self, datapipe: MapDataPipe[_T_co], *, indices: list | None = None):
        super().__init__()
        self.datapipe = datapipe
        self.indices = list(range(len(datapipe))) if indices is None else indices
        self._enabled = True
        self._seed = None
        self._rng = random.Random()
        self._shuffled_indices: list = self.indices

    def set_shuffle(self, shuffle=True):
        self._enabled = shuffle
        return self

    def set_seed(self, seed: int):
        self._seed = seed
        return self

    def __iter__(self) -> Iterator[_T_co]:
        if not self._enabled:
            for idx in self.indices:
                yield self.datapipe[idx]
        else:
            while self._shuffled_indices:
                idx = self._shuffled_indices.pop()  # from the end of the sample
                yield self.datapipe[idx]

    def reset(self):
        if self._enabled and self._seed is None:
            self._seed = int(empty((), dtype=int64).random_().item())
        # (with shuffling off and no seed this seeds from the OS, as PyTorch does)
        self._rng.seed(self._seed)
        self._seed = None
        self._shuffled_indices = self._rng.sample(self.indices, len(self.indices))

    def __len__(self) -> int:
        return len(self.datapipe)

    def __getstate__(self):
        state = (self.datapipe, self.indices, self._enabled, self._seed, self._rng.getstate(),
                 self._shuffled_indices, self._valid_iterator_id,
                 self._number_of_samples_yielded)
        if IterDataPipe.getstate_hook is not None:
            return IterDataPipe.getstate_hook(state)
        return state

    def __setstate__(self, state):
        (self.datapipe, self.indices, self._enabled, self._seed, rng_state,
         self._shuffled_indices, self._valid_iterator_id, self._number_of_samples_yielded) = state
        self._rng = random.Random()
        self._rng.setstate(rng_state)


MapDataPipe.register_datapipe_as_function("shuffle", ShufflerIterDataPipe)
