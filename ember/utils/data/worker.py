"""What runs inside a DataLoader worker process, and ``get_worker_info``."""
import queue
import random

__all__ = ["get_worker_info", "WorkerInfo"]

_worker_info = None


class WorkerInfo:
    """``id``, ``num_workers``, ``seed`` and ``dataset`` (this worker's copy)."""

    def __init__(self, **kwargs):
        for k, v in kwargs.items():
            setattr(self, k, v)
        self.__keys = tuple(kwargs.keys())
        self.__initialized = True

    def __setattr__(self, key, val):
        if self.__dict__.get("_WorkerInfo__initialized", False):
            raise RuntimeError(f"Cannot assign attributes to {self.__class__.__name__} objects")
        return super().__setattr__(key, val)

    def __repr__(self):
        items = [f"{k}={getattr(self, k)}" for k in self.__keys]
        return f"{self.__class__.__name__}({', '.join(items)})"


def get_worker_info():
    """In a worker process: its ``WorkerInfo``; in the main process: ``None``."""
    return _worker_info


class _IterableDatasetStopIteration:
    """Sent by a worker whose iterable-dataset copy is exhausted."""

    def __init__(self, worker_id):
        self.worker_id = worker_id


class _ResumeIteration:
    """Sent to persistent workers at the start of a new epoch (with the epoch's shared seed
    for a DataPipe dataset)."""

    def __init__(self, seed=None):
        self.seed = seed


class _ExceptionWrapper:
    """An exception raised in a worker, re-raised in the main process with its traceback."""

    def __init__(self, exc_info, where):
        import traceback
        self.exc_type = exc_info[0]
        self.exc_msg = "".join(traceback.format_exception(*exc_info))
        self.where = where

    def reraise(self):
        msg = f"Caught {self.exc_type.__name__} {self.where}.\nOriginal {self.exc_msg}"
        try:
            exception = self.exc_type(msg)
        except Exception:
            raise RuntimeError(msg) from None
        raise exception


def _fetch(dataset, auto_collation, collate_fn, drop_last, dataset_iter, index):
    if dataset_iter is not None:  # iterable-style
        if auto_collation:
            data = []
            for _ in index:
                try:
                    data.append(next(dataset_iter))
                except StopIteration:
                    break
            if len(data) == 0 or (drop_last and len(data) < len(index)):
                raise StopIteration
        else:
            data = next(dataset_iter)
        return collate_fn(data)
    if auto_collation:
        if hasattr(dataset, "__getitems__") and dataset.__getitems__:
            data = dataset.__getitems__(index)
        else:
            data = [dataset[idx] for idx in index]
    else:
        data = dataset[index]
    return collate_fn(data)


def _generate_state(base_seed, worker_id):
    """NumPy's seed for worker ``worker_id``: four 32-bit words from a SeedSequence of the
    worker id and the base seed's halves (PyTorch's words, its algorithm being SeedSequence's).
    Forked workers would otherwise share the parent's NumPy stream, and a plain
    ``base_seed + worker_id`` would repeat Python's ``random`` stream, which seeds the same
    Mersenne Twister from the same number."""
    import numpy as np
    entropy = [worker_id, base_seed & 0xFFFFFFFF, base_seed >> 32, 0]
    return np.random.SeedSequence(entropy).generate_state(4).tolist()


def _worker_loop(dataset_kind_iterable, dataset, index_queue, data_queue, done_event,
                 auto_collation, collate_fn, drop_last, base_seed, init_fn, worker_id,
                 num_workers, shared_seed=None):
    """Fetch the batches whose indices arrive on ``index_queue``; put ``(idx, data)`` on
    ``data_queue``. Seeds ember's and Python's generators with ``base_seed + worker_id``, and
    NumPy's global one from :func:`_generate_state`. A DataPipe's random datapipes are seeded
    from ``shared_seed`` (the same in every worker, so all shuffle alike before sharding)."""
    global _worker_info
    import sys

    import numpy as np

    from ... import manual_seed
    seed = base_seed + worker_id
    random.seed(seed)
    manual_seed(seed)
    np.random.seed(_generate_state(base_seed, worker_id))
    from ...random import Generator
    from .datapipes.datapipe import IterDataPipe
    from .graph_settings import apply_random_seed
    shared_rng = Generator()
    if isinstance(dataset, IterDataPipe):
        if shared_seed is None:
            raise AssertionError("shared_seed must be provided for IterDataPipe workers")
        shared_rng.manual_seed(shared_seed)
        dataset = apply_random_seed(dataset, shared_rng)
    _worker_info = WorkerInfo(id=worker_id, num_workers=num_workers, seed=seed,
                              dataset=dataset)
    init_exception = None
    dataset_iter = None
    try:
        if init_fn is not None:
            init_fn(worker_id)
        dataset_iter = iter(dataset) if dataset_kind_iterable else None
    except Exception:
        init_exception = _ExceptionWrapper(sys.exc_info(), f"in DataLoader worker process "
                                                           f"{worker_id}")
    iteration_end = False
    while not done_event.is_set():
        try:
            r = index_queue.get(timeout=0.1)
        except queue.Empty:
            continue
        if isinstance(r, _ResumeIteration):
            data_queue.put((r, None))
            iteration_end = False
            if isinstance(dataset, IterDataPipe):
                if r.seed is None:
                    raise AssertionError("resume iteration seed is None for IterDataPipe")
                shared_rng.manual_seed(r.seed)
                dataset = apply_random_seed(dataset, shared_rng)
            if dataset_kind_iterable:
                dataset_iter = iter(dataset)
            continue
        if r is None:  # shutdown
            break
        if iteration_end:
            continue
        idx, index = r
        if init_exception is not None:
            data, init_exception = init_exception, None
        else:
            try:
                data = _fetch(dataset, auto_collation, collate_fn, drop_last, dataset_iter,
                              index)
            except StopIteration:
                if not dataset_kind_iterable:
                    raise
                data = _IterableDatasetStopIteration(worker_id)
                iteration_end = True
            except Exception:
                data = _ExceptionWrapper(sys.exc_info(), f"in DataLoader worker process "
                                                         f"{worker_id}")
        data_queue.put((idx, data))
    data_queue.cancel_join_thread()
