"""The communication engine: MPI through mpi4py (imported lazily, so that ember imports
without it). Joins the processes into one MPI communicator and runs every collective as a
non-blocking MPI request wrapped in a ``Work``.

Rendezvous. With ``mpiexec -n N`` the MPI world already holds all ranks and is used directly.
Otherwise each process (or each ``mpiexec`` job, e.g. one per machine) is a *piece*; the pieces
meet through a store (``MASTER_ADDR``/``MASTER_PORT``, ``tcp://``, ``file://``): the piece
holding rank 0 opens an MPI port and accepts the others one by one (``MPI_Comm_accept`` /
``MPI_Comm_connect``, merged into one intracommunicator), and ranks are finally ordered by
``RANK``. ``python -m ember.distributed.run`` starts every rank under its own ``mpiexec -n 1`` so
that it has a process manager: MPICH 5.0's singleton processes cannot connect to each other
(pmodels/mpich#7805).
"""
import time

import numpy as np

from ._errors import DistBackendError, DistNetworkError

_MPI = None


def mpi():
    """The mpi4py ``MPI`` module, imported on first use."""
    global _MPI
    if _MPI is None:
        try:
            from mpi4py import MPI
        except ImportError as e:
            raise RuntimeError("ember.distributed runs on MPI through mpi4py, which is not "
                               "installed: pip install 'ember[distributed]' (mpi4py and the mpich "
                               "wheel)") from e
        _MPI = MPI
    return _MPI


def available():
    if _MPI is not None:
        return True
    import importlib.util
    return importlib.util.find_spec("mpi4py") is not None


def _missing_message(store, world_size, global_ranks=None):
    if store is None:
        return "the ranks that have not reached it are unknown (no store to ask)"
    missing = store.missing_ranks(world_size)
    if missing is None:
        return "rank 0's process (the store host) has exited"
    if global_ranks is not None:
        missing = [r for r in missing if r in global_ranks]
    if not missing:
        return "every rank's process is still alive (some rank has not reached this collective)"
    return f"ranks {missing} have exited"


class Work:
    """PyTorch's ``Work``: one asynchronous collective. It owns its buffers until it completes
    (MPI writes into them until then: freeing them earlier crashes the process), then runs
    ``finish`` (copy back, average) once."""

    def __init__(self, reqs, pg, op_name, finish=None, keep=(), result=None):
        self._reqs = reqs
        self._pg = pg
        self._op_name = op_name
        self._finish = finish
        self._keep = keep
        self._result = result if result is not None else []
        self._completed = False
        self._exc = None
        self._future = None

    def _complete(self):
        self._completed = True
        self._reqs = None
        try:
            if self._finish is not None:
                self._finish()
        except Exception as e:
            self._exc = e
        self._keep = None
        if self._future is not None and not self._future._done:
            if self._exc is not None:
                self._future.set_exception(self._exc)
            else:
                self._future.set_result(self._result)

    def is_completed(self):
        if not self._completed and mpi().Request.Testall(self._reqs):
            self._complete()
        return self._completed

    def is_success(self):
        return self.is_completed() and self._exc is None

    def exception(self):
        return self._exc

    def wait(self, timeout=None):
        """Progress the requests until they complete; past the timeout raise an error naming
        the ranks that are gone (PyTorch's watchdog aborts instead)."""
        if not self._completed:
            MPI = mpi()
            reqs = self._reqs
            if timeout is None:
                timeout = self._pg.timeout_s
            elif hasattr(timeout, "total_seconds"):
                timeout = timeout.total_seconds()
            # MPI requests advance only when tested: poll (as MPI_Wait does) with a deadline
            deadline = time.monotonic() + timeout
            test = MPI.Request.Testall
            n = 0
            while not test(reqs):
                n += 1
                if n & 255 == 0:
                    now = time.monotonic()
                    if now > deadline:
                        raise DistBackendError(
                            f"[Rank {self._pg.global_rank}] {self._op_name} timed out after "
                            f"{timeout * 1000:.0f} ms: "
                            f"{_missing_message(self._pg.store, self._pg.world_size, self._pg.global_ranks)}")
                    if n > 100000:
                        time.sleep(0.0002)  # a long wait: stop burning a core the peers need
            self._complete()
        if self._exc is not None:
            raise self._exc
        return True

    def result(self):
        self.wait()
        return self._result

    def get_future(self):
        from ..futures import Future
        if self._future is None:
            fut = Future()
            fut._driver = lambda block: self.wait() if block else self.is_completed()
            self._future = fut
            if self._completed:
                if self._exc is not None:
                    fut.set_exception(self._exc)
                else:
                    fut.set_result(self._result)
        return self._future

    def synchronize(self):
        self.wait()


class CompletedWork(Work):
    def __init__(self, pg, op_name, result=None):
        super().__init__([], pg, op_name, result=result)
        self._completed = True


# --- rendezvous

def connect(store, rank, world_size, timeout_s):
    """One intracommunicator over all ranks, ordered by ``rank``."""
    MPI = mpi()
    world = MPI.COMM_WORLD
    if world.Get_size() == world_size:
        if rank is None or rank == world.Get_rank():
            return world.Dup()
        return world.Split(0, rank)
    if rank is None:
        raise ValueError("RANK is needed when the MPI world does not hold every rank")
    if world_size == 1:
        return MPI.COMM_SELF.Dup()
    if store is None:
        raise RuntimeError(f"the MPI world has {world.Get_size()} processes but world_size is "
                           f"{world_size}: start every rank with mpiexec, or give a store "
                           f"(MASTER_ADDR/MASTER_PORT, tcp:// or file://) to join them")
    # Everyone announces itself first, so that a missing rank is named here instead of an MPI
    # connect blocking forever.
    store.set(f"ember/arrived/{rank}", b"1")
    keys = [f"ember/arrived/{r}" for r in range(world_size)]
    try:
        store.wait(keys, timeout=timeout_s)
    except DistNetworkError:
        raise
    except RuntimeError:  # a timeout: DistStoreError, or FileStore's plain RuntimeError
        missing = [r for r in range(world_size) if not store.check([f"ember/arrived/{r}"])]
        raise DistBackendError(f"[Rank {rank}] init_process_group timed out after "
                               f"{timeout_s:g}s: ranks {missing} of {world_size} did not "
                               f"join") from None
    # Pieces connect one at a time (MPICH crashes when two connect to a port at once): each
    # takes a ticket and waits for its turn, given by rank 0 after each merge.
    has_zero = world.allreduce(1 if rank == 0 else 0) > 0
    if has_zero:
        port = None
        if world.Get_rank() == 0:
            port = MPI.Open_port()
            store.set("ember/mpi_port", port.encode())
        comm, turn = world, 1
        while comm.Get_size() < world_size:
            if world.Get_rank() == 0:
                store.set(f"ember/turn/{turn}", b"1")
            inter = comm.Accept(port, root=0)
            comm = inter.Merge(False)
            inter.Free()
            turn += 1
        if world.Get_rank() == 0:
            MPI.Close_port(port)
    else:
        port = None
        if world.Get_rank() == 0:
            ticket = store.add("ember/ticket", 1)
            store.wait([f"ember/turn/{ticket}"], timeout=timeout_s)
            port = store.get("ember/mpi_port").decode()
        inter = world.Connect(port, root=0)
        comm = inter.Merge(True)
        inter.Free()
        while comm.Get_size() < world_size:  # later pieces join through all of us
            inter = comm.Accept(None, root=0)
            comm = inter.Merge(False)
            inter.Free()
    return comm.Split(0, rank)


# --- dtypes and reduce ops

def reduce_op(op, dtype):
    """The MPI operation for a ``ReduceOp`` name on arrays of ``dtype`` (bool: logical ops, as
    PyTorch reduces bool tensors)."""
    MPI = mpi()
    if dtype == np.bool_:
        return {"SUM": MPI.LOR, "AVG": MPI.LOR, "MAX": MPI.LOR, "BOR": MPI.LOR,
                "PRODUCT": MPI.LAND, "MIN": MPI.LAND, "BAND": MPI.LAND,
                "BXOR": MPI.LXOR}[op]
    return {"SUM": MPI.SUM, "AVG": MPI.SUM, "PRODUCT": MPI.PROD, "MIN": MPI.MIN, "MAX": MPI.MAX,
            "BAND": MPI.BAND, "BOR": MPI.BOR, "BXOR": MPI.BXOR}[op]


def mpi_array(a):
    """``a`` as something MPI can move: dtypes MPI does not know (bfloat16) travel as bytes."""
    if a.dtype.kind in "biufc" and a.dtype.char != "E" and a.dtype.name != "bfloat16":
        return a
    return a.view(np.uint8)
