"""The ``nccl`` backend: collectives on CUDA tensors through NVIDIA's NCCL, as CuPy exposes it
(``cupy.cuda.nccl``), run the way PyTorch's ``ProcessGroupNCCL`` runs them.

One NCCL communicator per process group and device, made at the group's first collective on that
device (PyTorch makes it lazily too): rank 0 draws the unique id and the group's MPI communicator
hands it to the others (MPI also carries the host-side checks of every collective and the object
collectives). Each collective runs on the communicator's own stream (PyTorch's NCCL stream):

1. the NCCL stream waits for the caller's current stream, so the inputs are ready;
2. the tensors are marked used on the NCCL stream for the caching allocator (``record_stream``),
   so their memory is not handed out again while NCCL still reads or writes it;
3. the NCCL call (several inside ``groupStart``/``groupEnd`` for point-to-point patterns), then
   any copy-back on the same stream, then an event: the ``Work``. ``wait()`` makes the caller's
   current stream wait for that event — the host does not block, as in PyTorch —
   ``is_completed()`` queries it, and its future completes once the event has.

Reductions take NCCL's data types (bool as uint8 with MAX for SUM and MIN for PRODUCT, complex as
pairs of reals for SUM and AVG, as PyTorch does); everything else travels as bytes. Tensors must
be contiguous CUDA tensors (PyTorch's ``ValueError`` otherwise).
"""
import ember

_MODULE = []


def _nccl():
    if not _MODULE:
        from cupy.cuda import nccl
        _MODULE.append(nccl)
    return _MODULE[0]


def available():
    """Whether CuPy's NCCL can be loaded (PyTorch's ``is_nccl_available``: built with NCCL)."""
    try:
        return bool(_nccl().available)
    except Exception:  # noqa: BLE001  (no CuPy, or CuPy without its NCCL library)
        return False


def check_usable():
    """Raise PyTorch's errors when this process cannot run the nccl backend."""
    if not available():
        raise RuntimeError("Distributed package doesn't have NCCL built in: ember's nccl backend "
                           "runs on CuPy's NCCL (pip install 'ember[cuda]' and "
                           "nvidia-nccl-cu13); use gloo")
    from ..cuda import _runtime
    if _runtime.simulated() or ember.cuda.device_count() == 0:
        raise RuntimeError("ProcessGroupNCCL is only supported with GPUs, no GPUs found! (the "
                           "simulated CUDA device runs no NCCL: use gloo)")


class _Communicator:
    """An NCCL communicator over a group's ranks on one device, and its stream."""

    def __init__(self, pg, index):
        import cupy
        nccl = _nccl()
        uid = nccl.get_unique_id() if pg.rank() == 0 else None
        uid = pg._comm.bcast(uid, root=0)
        with cupy.cuda.Device(index):
            self.nccl = nccl.NcclCommunicator(pg.size(), uid, pg.rank())
        self.index = index
        self.stream = ember.cuda.Stream(index)

    def destroy(self):
        self.nccl.destroy()


def destroy(pg):
    for comm in pg._nccl.values():
        comm.destroy()
    pg._nccl.clear()


class NcclWork:
    """PyTorch's ``Work`` of an NCCL collective: an event on the NCCL stream after the call."""

    def __init__(self, pg, op_name, comm, event, result):
        self._pg, self._op_name, self._comm = pg, op_name, comm
        self._event, self._result = event, result
        self._future = None

    def is_completed(self):
        return self._event.query()

    def is_success(self):
        return self.is_completed()

    def exception(self):
        return None

    def wait(self, timeout=None):
        """The caller's current stream waits for the collective (the host goes on); an
        asynchronous NCCL error of the communicator is raised here."""
        ember.cuda.current_stream(self._comm.index).wait_event(self._event)
        self._comm.nccl.check_async_error()
        return True

    def synchronize(self):
        self.wait()

    def result(self):
        self.wait()
        return self._result

    def get_future(self):
        """A future completed with the result list once the collective has run on the device."""
        from ..futures import Future
        if self._future is None:
            fut = self._future = Future()

            def drive(block):
                if block:
                    self._event.synchronize()
                if not fut._done and self._event.query():
                    fut.set_result(self._result)
            fut._driver = drive
        return self._future


# --- data types and reduce ops

_REDUCE_TYPES = {"float32": "NCCL_FLOAT32", "float64": "NCCL_FLOAT64", "float16": "NCCL_FLOAT16",
                 "bfloat16": "NCCL_BFLOAT16", "int8": "NCCL_INT8", "uint8": "NCCL_UINT8",
                 "int32": "NCCL_INT32", "int64": "NCCL_INT64", "uint32": "NCCL_UINT32",
                 "uint64": "NCCL_UINT64", "bool": "NCCL_UINT8"}
_COMPLEX_PARTS = {"complex64": "NCCL_FLOAT32", "complex128": "NCCL_FLOAT64"}
_OPS = {"SUM": "NCCL_SUM", "AVG": "NCCL_AVG", "PRODUCT": "NCCL_PROD", "MIN": "NCCL_MIN",
        "MAX": "NCCL_MAX"}


def _reduction(t, opn):
    """``(count, nccl data type, nccl op)`` for reducing tensor ``t`` with ``opn``."""
    nccl = _nccl()
    name = t._dtype.name
    if opn not in _OPS:
        raise ValueError(f"Cannot use ReduceOp.{opn} with NCCL")
    count = t.numel()
    if name in _COMPLEX_PARTS:  # a complex sum is the sum of its real and imaginary parts
        if opn not in ("SUM", "AVG"):
            raise ValueError(f"all_reduce does not support ReduceOp.{opn} on complex tensors")
        return count * 2, getattr(nccl, _COMPLEX_PARTS[name]), getattr(nccl, _OPS[opn])
    if name not in _REDUCE_TYPES:
        raise RuntimeError(f"Unsupported data type for NCCL process group: {t._dtype}")
    if name == "bool":
        if opn == "AVG":
            raise RuntimeError("Cannot use ReduceOp.AVG with boolean inputs")
        opn = {"SUM": "MAX", "PRODUCT": "MIN"}.get(opn, opn)
    return count, getattr(nccl, _REDUCE_TYPES[name]), getattr(nccl, _OPS[opn])


def _bytes(t):
    return t.numel() * t._dtype.itemsize


# --- running a collective

def _check(tensors):
    for t in tensors:
        if t._device.type != "cuda":
            raise ValueError("Tensors must be CUDA and dense")
        if not t.is_contiguous():
            raise ValueError("Tensors must be contiguous")
    index = tensors[0]._device.index or 0
    for t in tensors:
        if (t._device.index or 0) != index:
            raise ValueError(f"Tensors must be on the same device: cuda:{index} and {t._device}")
    return index


def _communicator(pg, index):
    comm = pg._nccl.get(index)
    if comm is None:
        comm = pg._nccl[index] = _Communicator(pg, index)
    return comm


def _launch(pg, name, tensors, calls, result, finish=None):
    """Run ``calls(nccl_comm, stream_handle)`` on the NCCL stream of the tensors' device, after
    the caller's current stream; ``finish()`` (copies back) follows on that stream."""
    import cupy
    index = _check(tensors)
    comm = _communicator(pg, index)
    stream = comm.stream
    stream.wait_stream(ember.cuda.current_stream(index))
    for t in tensors:
        t.record_stream(stream)
    with cupy.cuda.Device(index):
        calls(comm.nccl, stream.cuda_stream)
    if finish is not None:
        with ember.cuda.stream(stream), ember.no_grad():
            finish()
    return NcclWork(pg, name, comm, stream.record_event(), result)


def _grouped(calls):
    """Several NCCL calls as one operation (point-to-point patterns must be grouped)."""
    def run(comm, s):
        nccl = _nccl()
        nccl.groupStart()
        try:
            calls(comm, s)
        finally:
            nccl.groupEnd()
    return run


def _ptr(t, elements=0):
    return t.data_ptr() + elements * t._dtype.itemsize


# --- the collectives (arguments checked by distributed_c10d first)

def all_reduce(pg, tensor, opn):
    count, dt, op = _reduction(tensor, opn)
    p = _ptr(tensor)
    return _launch(pg, "all_reduce", [tensor],
                   lambda c, s: c.allReduce(p, p, count, dt, op, s), [tensor])


def broadcast(pg, tensor, root):
    p, n = _ptr(tensor), _bytes(tensor)
    return _launch(pg, "broadcast", [tensor],
                   lambda c, s: c.broadcast(p, p, n, _nccl().NCCL_UINT8, root, s), [tensor])


def reduce(pg, tensor, root, opn):
    count, dt, op = _reduction(tensor, opn)
    p = _ptr(tensor)
    return _launch(pg, "reduce", [tensor],
                   lambda c, s: c.reduce(p, p, count, dt, op, root, s), [tensor])


def all_gather_into_tensor(pg, output, input):  # noqa: A002
    src, dst, n = _ptr(input), _ptr(output), _bytes(input)
    return _launch(pg, "all_gather_into_tensor", [output, input],
                   lambda c, s: c.allGather(src, dst, n, _nccl().NCCL_UINT8, s), [output])


def all_gather(pg, outputs, input):  # noqa: A002
    """Into one flat buffer, then each rank's part copied to its output on the NCCL stream."""
    k = input.numel()
    flat = ember.empty(k * pg.size(), dtype=input.dtype, device=input.device)
    src, dst, n = _ptr(input), _ptr(flat), _bytes(input)

    def finish():
        for i, o in enumerate(outputs):
            o.copy_(flat[i * k:(i + 1) * k].view(o.shape))
    return _launch(pg, "all_gather", [flat, input, *outputs],
                   lambda c, s: c.allGather(src, dst, n, _nccl().NCCL_UINT8, s),
                   [list(outputs)], finish)


def reduce_scatter_tensor(pg, output, input, opn, name="reduce_scatter_tensor"):  # noqa: A002
    count, dt, op = _reduction(output, opn)
    src, dst = _ptr(input), _ptr(output)
    return _launch(pg, name, [output, input],
                   lambda c, s: c.reduceScatter(src, dst, count, dt, op, s), [output])


def reduce_scatter(pg, output, inputs, opn):
    flat = ember.cat([t.reshape(-1) for t in inputs])  # on the caller's stream, waited for
    return reduce_scatter_tensor(pg, output, flat, opn, "reduce_scatter")


def _exchange(pg, name, sends, recvs, result, tensors):
    """Point-to-point in one group: ``sends``/``recvs`` are ``(tensor, element offset, count,
    peer)``; byte counts, so any dtype travels."""
    u8 = _nccl().NCCL_UINT8

    def calls(c, s):
        for t, off, count, peer in sends:
            c.send(_ptr(t, off), count * t._dtype.itemsize, u8, peer, s)
        for t, off, count, peer in recvs:
            c.recv(_ptr(t, off), count * t._dtype.itemsize, u8, peer, s)
    return _launch(pg, name, tensors, _grouped(calls), result)


def all_to_all_single(pg, output, input, send_counts, recv_counts):  # noqa: A002
    so = ro = 0
    sends, recvs = [], []
    for r in range(pg.size()):
        sends.append((input, so, send_counts[r], r))
        recvs.append((output, ro, recv_counts[r], r))
        so += send_counts[r]
        ro += recv_counts[r]
    return _exchange(pg, "all_to_all_single", sends, recvs, [output], [output, input])


def all_to_all(pg, outputs, inputs):
    sends = [(t, 0, t.numel(), r) for r, t in enumerate(inputs)]
    recvs = [(t, 0, t.numel(), r) for r, t in enumerate(outputs)]
    return _exchange(pg, "all_to_all", sends, recvs, [list(outputs)], [*outputs, *inputs])


def gather(pg, tensor, gather_list, root):
    sends = [(tensor, 0, tensor.numel(), root)]
    if pg.rank() == root:
        recvs = [(t, 0, t.numel(), r) for r, t in enumerate(gather_list)]
        return _exchange(pg, "gather", sends, recvs, [list(gather_list)], [tensor, *gather_list])
    return _exchange(pg, "gather", sends, [], [], [tensor])


def scatter(pg, tensor, scatter_list, root):
    recvs = [(tensor, 0, tensor.numel(), root)]
    if pg.rank() == root:
        sends = [(t, 0, t.numel(), r) for r, t in enumerate(scatter_list)]
        return _exchange(pg, "scatter", sends, recvs, [tensor], [tensor, *scatter_list])
    return _exchange(pg, "scatter", [], recvs, [tensor], [tensor])


def send(pg, tensor, peer):
    return _exchange(pg, "send", [(tensor, 0, tensor.numel(), peer)], [], [tensor], [tensor])


def recv(pg, tensor, peer):
    return _exchange(pg, "recv", [], [(tensor, 0, tensor.numel(), peer)], [tensor], [tensor])


def barrier(pg, index):
    """PyTorch's NCCL barrier: an all-reduce of one element on the device, then the host waits
    for it."""
    token = ember.zeros(1, dtype=ember.uint8, device=f"cuda:{index}")
    work = all_reduce(pg, token, "SUM")
    work._event.synchronize()
    return work
