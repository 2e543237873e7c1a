"""``DataLoader``: batches from a dataset, in the main process or in worker processes.

With ``num_workers > 0`` each worker is a separate process (``multiprocessing``, fork where
available) with its own index queue; the main process hands out up to
``prefetch_factor * num_workers`` batches of indices round-robin and yields results in order.
Worker ``i`` is seeded with ``base_seed + i`` (``base_seed`` drawn from the loader's generator),
as in PyTorch, and ``worker_init_fn(i)`` runs first in it.

A DataPipe dataset is wrapped for pickling (dill where pickle fails), its shufflers follow
``shuffle``, and, as in PyTorch, each iterator seeds its random datapipes from a shared seed
drawn from the loader's generator (broadcast from rank 0 under torch.distributed) and shards
its ``sharding_filter``s over ranks and workers.

A worker's batches reach the main process in shared memory, as PyTorch's: importing
``ember.multiprocessing`` registers its tensor reducers with ``multiprocessing``'s pickler.
"""
import functools
import itertools
import multiprocessing
import queue
import warnings
from typing import Any, Callable, Generic, TypeVar

from ... import multiprocessing as _multiprocessing  # noqa: F401  (the reducers)
from . import _pin_memory, graph_settings
from . import worker as _worker
from .collate import default_collate, default_convert
from .dataset import IterableDataset
from .datapipes.datapipe import (IterDataPipe, MapDataPipe, _IterDataPipeSerializationWrapper,
                                 _MapDataPipeSerializationWrapper)
from .sampler import BatchSampler, RandomSampler, SequentialSampler, _T_co

# PyTorch's type aliases, which libraries annotate with (opacus's DPDataLoader)
T = TypeVar("T")
_worker_init_fn_t = Callable[[int], None]
_collate_fn_t = Callable[[list[T]], Any]

__all__ = ["DataLoader", "get_worker_info", "default_collate", "default_convert"]

get_worker_info = _worker.get_worker_info


class _DatasetKind:
    """Map-style or iterable-style; ``create_fetcher`` makes the object that turns (batches
    of) indices into collated samples."""

    Map = 0
    Iterable = 1

    @staticmethod
    def create_fetcher(kind, dataset, auto_collation, collate_fn, drop_last):
        return _DatasetFetcher(dataset, auto_collation, collate_fn, drop_last,
                               iter(dataset) if kind == _DatasetKind.Iterable else None)


class _DatasetFetcher:
    """``fetch(index)``: the collated sample(s) at ``index`` (map-style), or the next
    ``len(index)`` of the stream (iterable-style; ``StopIteration`` once it ran dry)."""

    def __init__(self, dataset, auto_collation, collate_fn, drop_last, dataset_iter=None):
        self.dataset = dataset
        self.auto_collation = auto_collation
        self.collate_fn = collate_fn
        self.drop_last = drop_last
        self.dataset_iter = dataset_iter
        self.ended = False

    def fetch(self, possibly_batched_index):
        if self.ended:
            raise StopIteration
        try:
            return _worker._fetch(self.dataset, self.auto_collation, self.collate_fn,
                                  self.drop_last, self.dataset_iter, possibly_batched_index)
        except StopIteration:
            if self.dataset_iter is not None:
                self.ended = True
            raise


def _get_distributed_settings():
    """``(world_size, rank)`` of the default process group, ``(1, 0)`` without one."""
    from ... import distributed as dist
    if dist.is_available() and dist.is_initialized():
        return dist.get_world_size(), dist.get_rank()
    return 1, 0


def _sharding_worker_init_fn(worker_init_fn, world_size, rank_id, worker_id):
    """A DataPipe's workers' init: shard over ranks first, then workers (so every rank gets
    an even share), then the user's ``worker_init_fn``."""
    info = get_worker_info()
    if info is None:
        raise AssertionError("Worker info is None in sharding worker init function")
    datapipe = info.dataset
    if not isinstance(datapipe, (IterDataPipe, MapDataPipe)):
        raise AssertionError("datapipe must be an instance of IterDataPipe or MapDataPipe")
    total_workers = info.num_workers * world_size
    global_worker_id = worker_id * world_size + rank_id
    graph_settings.apply_sharding(datapipe, total_workers, global_worker_id)
    if worker_init_fn is not None:
        worker_init_fn(worker_id)


def _draw_seed(generator):
    """A seed drawn from ``generator`` (or the default generator): the workers' base seed."""
    from ... import empty, int64
    return empty((), dtype=int64).random_(generator=generator)


def _share_dist_seed(generator, pg):
    """A seed drawn from ``generator``; under torch.distributed rank 0's, so that every rank
    shuffles its datapipes alike."""
    from ... import distributed as dist
    _shared_seed = _draw_seed(generator)
    if isinstance(pg, dist.ProcessGroup):
        dist.broadcast(_shared_seed, src=0, group=pg)
    return _shared_seed.item()


def _seed_datapipe(iterator, loader):
    """A new shared seed for ``iterator``'s DataPipe, and its random datapipes reseeded from
    it (PyTorch does this at each iterator and epoch, before anything else is drawn)."""
    from ...random import Generator
    iterator._shared_seed = _share_dist_seed(loader.generator, iterator._pg)
    shared_rng = Generator()
    shared_rng.manual_seed(iterator._shared_seed)
    iterator._dataset = graph_settings.apply_random_seed(iterator._dataset, shared_rng)


class _InfiniteConstantSampler:
    """The 'sampler' of an iterable dataset: ``None`` forever."""

    def __iter__(self):
        while True:
            yield None


class DataLoader(Generic[_T_co]):
    """Iterates over ``dataset`` in batches; PyTorch's arguments and rules."""

    def __init__(self, dataset, batch_size=1, shuffle=None, sampler=None, batch_sampler=None,
                 num_workers=0, collate_fn=None, pin_memory=False, drop_last=False, timeout=0,
                 worker_init_fn=None, multiprocessing_context=None, generator=None, *,
                 prefetch_factor=None, persistent_workers=False, pin_memory_device="",
                 in_order=True):
        if num_workers < 0:
            raise ValueError("num_workers option should be non-negative; use num_workers=0 to "
                             "disable multiprocessing.")
        if timeout < 0:
            raise ValueError("timeout option should be non-negative")
        if num_workers == 0 and prefetch_factor is not None:
            raise ValueError("prefetch_factor option could only be specified in multiprocessing."
                             "let num_workers > 0 to enable multiprocessing, otherwise set "
                             "prefetch_factor to None.")
        if num_workers > 0 and prefetch_factor is None:
            prefetch_factor = 2
        elif prefetch_factor is not None and prefetch_factor < 0:
            raise ValueError("prefetch_factor option should be non-negative")
        if persistent_workers and num_workers == 0:
            raise ValueError("persistent_workers option needs num_workers > 0")

        self.dataset = dataset
        self.num_workers = num_workers
        self.prefetch_factor = prefetch_factor
        self.pin_memory = pin_memory
        self.pin_memory_device = pin_memory_device
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self.multiprocessing_context = multiprocessing_context
        self.in_order = in_order

        # the worker processes get a DataPipe pickled by its wrapper (with dill if need be)
        if isinstance(self.dataset, IterDataPipe):
            self.dataset = _IterDataPipeSerializationWrapper(self.dataset)
        elif isinstance(self.dataset, MapDataPipe):
            self.dataset = _MapDataPipeSerializationWrapper(self.dataset)

        if isinstance(dataset, IterableDataset):
            self._dataset_kind_iterable = True
            if isinstance(dataset, IterDataPipe):
                # (a Shuffler appended here does not reach self.dataset: PyTorch's behaviour)
                if shuffle is not None:
                    dataset = graph_settings.apply_shuffle_settings(dataset, shuffle=shuffle)
            elif shuffle not in {False, None}:
                raise ValueError("DataLoader with IterableDataset: expected unspecified shuffle "
                                 f"option, but got shuffle={shuffle}")
            if sampler is not None:
                raise ValueError("DataLoader with IterableDataset: expected unspecified sampler "
                                 f"option, but got sampler={sampler}")
            if batch_sampler is not None:
                raise ValueError("DataLoader with IterableDataset: expected unspecified "
                                 f"batch_sampler option, but got batch_sampler={batch_sampler}")
        else:
            self._dataset_kind_iterable = False
            shuffle = bool(shuffle)

        if sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError("batch_sampler option is mutually exclusive with batch_size, "
                                 "shuffle, sampler, and drop_last")
            batch_size = None
            drop_last = False
        elif batch_size is None and drop_last:
            raise ValueError("batch_size=None option disables auto-batching and is mutually "
                             "exclusive with drop_last")

        if sampler is None:
            if self._dataset_kind_iterable:
                sampler = _InfiniteConstantSampler()
            elif shuffle:
                sampler = RandomSampler(dataset, generator=generator)
            else:
                sampler = SequentialSampler(dataset)
        if batch_size is not None and batch_sampler is None:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)

        self.batch_size = batch_size
        self.drop_last = drop_last
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        self.generator = generator
        if collate_fn is None:
            collate_fn = default_collate if self._auto_collation else default_convert
        self.collate_fn = collate_fn
        self.persistent_workers = persistent_workers
        self._iterator = None

    @property
    def _dataset_kind(self):
        return _DatasetKind.Iterable if self._dataset_kind_iterable else _DatasetKind.Map

    @property
    def _auto_collation(self):
        return self.batch_sampler is not None

    @property
    def _index_sampler(self):
        return self.batch_sampler if self._auto_collation else self.sampler

    def __iter__(self):
        if self.persistent_workers and self.num_workers > 0:
            if self._iterator is None:
                self._iterator = _MultiProcessingDataLoaderIter(self)
            else:
                self._iterator._reset(self)
            return self._iterator
        if self.num_workers == 0:
            return _SingleProcessDataLoaderIter(self)
        return _MultiProcessingDataLoaderIter(self)

    def __len__(self):
        if self._dataset_kind_iterable:
            length = len(self.dataset)
            if self.batch_size is not None:
                from math import ceil
                length = length // self.batch_size if self.drop_last else \
                    ceil(length / self.batch_size)
            return length
        return len(self._index_sampler)


def _pin_memory_enabled(loader):
    """PyTorch's rule: pin batches when asked and an accelerator is there; warn otherwise."""
    from ... import accelerator
    if loader.pin_memory and loader.pin_memory_device:
        warnings.warn("pin_memory_device is deprecated, the current accelerator will be used as "
                      f"the device,ignore pin_memory_device='{loader.pin_memory_device}'.",
                      stacklevel=5)
    if loader.pin_memory and not accelerator.is_available():
        warnings.warn("'pin_memory' argument is set as true but no accelerator is found, then "
                      "device pinned memory won't be used.", stacklevel=5)
        return False
    return bool(loader.pin_memory)


class _BaseDataLoaderIter:
    def __init__(self, loader):
        self._dataset = loader.dataset
        self._shared_seed = None
        self._pg = None
        if isinstance(self._dataset, IterDataPipe):
            from ... import distributed as dist
            if dist.is_available() and dist.is_initialized():
                self._pg = dist.new_group(backend="gloo")
            _seed_datapipe(self, loader)
        self._world_size, self._rank = _get_distributed_settings()
        # (only what PyTorch's iterator reads from its loader: fastai hands in a stand-in with
        # those attributes alone)
        self._iterable = loader._dataset_kind == _DatasetKind.Iterable
        self._auto_collation = loader._auto_collation
        self._drop_last = loader.drop_last
        self._index_sampler = loader._index_sampler
        self._collate_fn = loader.collate_fn
        self._num_yielded = 0
        self._sampler_iter = iter(self._index_sampler)
        self._base_seed = _draw_seed(loader.generator).item()
        self._pin_memory = _pin_memory_enabled(loader)

    def _reset(self, loader):
        self._sampler_iter = iter(self._index_sampler)
        self._num_yielded = 0
        if isinstance(self._dataset, IterDataPipe):
            _seed_datapipe(self, loader)

    def __iter__(self):
        return self

    def _next_index(self):
        return next(self._sampler_iter)

    def __len__(self):
        return len(self._index_sampler)


class _SingleProcessDataLoaderIter(_BaseDataLoaderIter):
    def __init__(self, loader):
        super().__init__(loader)
        if isinstance(self._dataset, (IterDataPipe, MapDataPipe)):
            # shard over the distributed ranks (workers do their own share)
            graph_settings.apply_sharding(self._dataset, self._world_size, self._rank)
        self._dataset_iter = iter(self._dataset) if self._iterable else None

    def __next__(self):
        index = self._next_index()
        data = _worker._fetch(self._dataset, self._auto_collation, self._collate_fn,
                              self._drop_last, self._dataset_iter, index)
        if self._pin_memory:
            data = _pin_memory.pin_memory(data)
        self._num_yielded += 1
        return data


class _MultiProcessingDataLoaderIter(_BaseDataLoaderIter):
    def __init__(self, loader):
        super().__init__(loader)
        self._num_workers = loader.num_workers
        self._prefetch_factor = loader.prefetch_factor
        self._timeout = loader.timeout if loader.timeout > 0 else None
        self._persistent = loader.persistent_workers
        self._in_order = loader.in_order
        ctx = loader.multiprocessing_context
        if ctx is None:
            methods = multiprocessing.get_all_start_methods()
            ctx = multiprocessing.get_context("fork" if "fork" in methods else None)
        elif isinstance(ctx, str):
            ctx = multiprocessing.get_context(ctx)
        worker_init_fn = loader.worker_init_fn
        if isinstance(self._dataset, (IterDataPipe, MapDataPipe)):
            worker_init_fn = functools.partial(_sharding_worker_init_fn, worker_init_fn,
                                               self._world_size, self._rank)
        self._worker_result_queue = ctx.Queue()
        self._workers_done_event = ctx.Event()
        self._index_queues = []
        self._workers = []
        for i in range(self._num_workers):
            index_queue = ctx.Queue()
            index_queue.cancel_join_thread()
            w = ctx.Process(target=_worker._worker_loop,
                            args=(self._iterable, self._dataset, index_queue,
                                  self._worker_result_queue, self._workers_done_event,
                                  self._auto_collation, self._collate_fn, self._drop_last,
                                  self._base_seed, worker_init_fn, i, self._num_workers,
                                  self._shared_seed))
            w.daemon = True
            w.start()
            self._index_queues.append(index_queue)
            self._workers.append(w)
        self._shutdown = False
        if isinstance(self._dataset, IterDataPipe):
            # PyTorch's first reset draws a second shared seed (the workers have the first)
            _seed_datapipe(self, loader)
        self._start_epoch(first=True)

    def _start_epoch(self, first=False):
        self._send_idx = 0  # next task id to send
        self._rcvd_idx = 0  # next task id to yield
        self._task_info = {}  # task id -> (worker id,) pending, or (worker id, data) done
        self._tasks_outstanding = 0
        self._workers_status = [True] * self._num_workers
        self._worker_queue_idx_cycle = itertools.cycle(range(self._num_workers))
        if not first:
            # Persistent workers: wait for each to acknowledge the new epoch.
            resume = _worker._ResumeIteration(self._shared_seed)
            for q in self._index_queues:
                q.put(resume)
            pending = self._num_workers
            while pending > 0:
                r, _ = self._get_data()
                if isinstance(r, _worker._ResumeIteration):
                    pending -= 1
        for _ in range(self._prefetch_factor * self._num_workers):
            self._try_put_index()

    def _reset(self, loader):
        super()._reset(loader)
        self._start_epoch()

    def _try_put_index(self):
        try:
            index = self._next_index()
        except StopIteration:
            return
        for _ in range(self._num_workers):  # find the next active worker
            worker_queue_idx = next(self._worker_queue_idx_cycle)
            if self._workers_status[worker_queue_idx]:
                break
        else:
            return
        self._index_queues[worker_queue_idx].put((self._send_idx, index))
        self._task_info[self._send_idx] = (worker_queue_idx,)
        self._tasks_outstanding += 1
        self._send_idx += 1

    def _get_data(self):
        try:
            return self._worker_result_queue.get(timeout=self._timeout)
        except queue.Empty:
            failed = [w.pid for w in self._workers if not w.is_alive()]
            if failed:
                raise RuntimeError(f"DataLoader worker (pid(s) {', '.join(map(str, failed))}) "
                                   "exited unexpectedly") from None
            raise RuntimeError(f"DataLoader timed out after {self._timeout} seconds") from None

    def __next__(self):
        while True:
            # Skip tasks of workers that ran out of data (iterable datasets).
            # (and tasks already yielded out of order)
            while self._rcvd_idx < self._send_idx:
                info = self._task_info.get(self._rcvd_idx)
                if info is not None:
                    if len(info) == 2 or self._workers_status[info[0]]:
                        break
                    del self._task_info[self._rcvd_idx]
                self._rcvd_idx += 1
            else:
                if not self._persistent:
                    self._shutdown_workers()
                raise StopIteration
            if len(self._task_info[self._rcvd_idx]) == 2:
                data = self._task_info.pop(self._rcvd_idx)[1]
                self._rcvd_idx += 1
                return self._process_data(data)
            idx, data = self._get_data()
            self._tasks_outstanding -= 1
            if isinstance(data, _worker._IterableDatasetStopIteration):
                self._workers_status[data.worker_id] = False
                self._try_put_index()
                continue
            if idx != self._rcvd_idx:
                if not self._in_order:  # in_order=False: a batch is yielded as it arrives
                    del self._task_info[idx]
                    return self._process_data(data)
                self._task_info[idx] += (data,)  # arrived early: keep until its turn
            else:
                del self._task_info[idx]
                self._rcvd_idx += 1
                return self._process_data(data)

    def _process_data(self, data):
        self._try_put_index()
        self._num_yielded += 1
        if isinstance(data, _worker._ExceptionWrapper):
            self._shutdown_workers()
            data.reraise()
        if self._pin_memory:  # in the main process (PyTorch uses a thread for this)
            data = _pin_memory.pin_memory(data)
        return data

    def _shutdown_workers(self):
        if self._shutdown:
            return
        self._shutdown = True
        self._workers_done_event.set()
        for q in self._index_queues:
            q.put(None)
        for w in self._workers:
            w.join(timeout=5)
            if w.is_alive():
                w.terminate()
        for q in self._index_queues:
            q.cancel_join_thread()
            q.close()
        self._worker_result_queue.cancel_join_thread()
        self._worker_result_queue.close()

    def __del__(self):
        self._shutdown_workers()


