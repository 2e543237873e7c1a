"""``Pool``: ``multiprocessing.Pool`` over this package's :class:`~.queue.SimpleQueue`, whose
workers collect garbage after each run (``torch.multiprocessing.pool``)."""
import multiprocessing.pool
import multiprocessing.util as util

from .queue import SimpleQueue


def clean_worker(*args, **kwargs):
    import gc
    multiprocessing.pool.worker(*args, **kwargs)
    # a worker leaves objects behind; collect them so that their destructors run
    gc.collect()


class Pool(multiprocessing.pool.Pool):
    """A pool whose task and result queues pickle with the tensor reducers."""

    def _setup_queues(self):
        # (PyTorch's passes no context, which Python 3's SimpleQueue requires, and starts its
        # workers through Python 2's hooks: its Pool cannot be constructed)
        self._inqueue = SimpleQueue(ctx=self._ctx)
        self._outqueue = SimpleQueue(ctx=self._ctx)
        self._quick_put = self._inqueue._writer.send
        self._quick_get = self._outqueue._reader.recv

    @staticmethod
    def _repopulate_pool_static(ctx, Process, processes, pool, inqueue, outqueue, initializer,
                                initargs, maxtasksperchild, wrap_exception):
        """Start workers (running :func:`clean_worker`) up to the pool's size (Python's
        method, whose workers run ``multiprocessing.pool.worker``)."""
        for _ in range(processes - len(pool)):
            w = Process(ctx, target=clean_worker,
                        args=(inqueue, outqueue, initializer, initargs, maxtasksperchild,
                              wrap_exception))
            w.name = w.name.replace("Process", "PoolWorker")
            w.daemon = True
            w.start()
            pool.append(w)
            util.debug("added worker")
