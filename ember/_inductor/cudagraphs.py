"""CUDA graphs for compiled graphs: ``mode="reduce-overhead"`` (``config.triton.cudagraphs``).

PyTorch's ``cudagraphify`` (``torch/_inductor/compile_fx.py``, the path without cudagraph
trees). A compiled graph whose tensors are all on one CUDA device runs once as compiled (the
warm-up: lazy initialisation, library handles, the allocator's blocks), is then captured into a
CUDA graph over *static* inputs, and from then on each call copies its inputs into the static
ones and replays the graph: one launch where eager CUDA pays the host time of every op. A graph
given other sizes (a dynamic graph's integer inputs) is captured once per set of sizes.

**Inputs.** The *fixed* inputs — the forward's parameters and buffers, and the backward's values
saved by the forward, which the forward's replays leave at the same addresses — are read where
they lie; a call that brings one at another address runs the graph as compiled instead (PyTorch
asserts there; its cudagraph trees record again). The other inputs (user inputs, the backward's
tangents) are copied into buffers the graph owns, unless they already are those buffers.

**Outputs.** A replay writes its outputs into the graph's memory pool at the addresses captured.
PyTorch hands that same memory out at every call, so an output kept across calls changes under
its holder at the next replay (cudagraph trees make reading it an error). ember hands out each
call's outputs over storage objects of their own and, before the next replay, moves any that are
still alive into memory of their own (``UntypedStorage.resize_`` to their size: a device copy).
A kept output (the last step's loss, a logged activation) keeps its values; an output let go —
the usual case: the values saved for backward are freed by it — costs nothing.

**Random ops** draw new numbers at each replay (``CUDAGraph``'s generator state), the numbers
eager would draw: the warm-up and the capture leave the device's generator as they found it.

**Not captured** (the graph runs as compiled; the reason goes to the ``perf_hints`` log, as
PyTorch's "skipping cudagraphs due to ..."): a tensor off the CUDA device or on two devices,
an op writing one of its inputs.
"""
import collections
import weakref

from .. import _logging
from .._core.tensor_impl import make_tensor
from .._tensor import Tensor

__all__ = ["CUDAGraphed", "skip_reason", "log_skip", "counters"]

perf_hint_log = _logging.getArtifactLogger(__name__, "perf_hints")
# "skips": graphs left uncaptured; "recordings": captures; "replays"; "eager": calls of a
# captured graph that ran as compiled (a fixed input had moved)
counters = collections.Counter()


def log_skip(reason):
    """Say why a graph is not captured (PyTorch's words) and count it."""
    counters["skips"] += 1
    perf_hint_log.info("skipping cudagraphs due to %s", reason)


def skip_reason(gm):
    """Why graph ``gm`` cannot run as a CUDA graph, in PyTorch's words where it has them; None
    when it can."""
    from .._functorch.aot_autograd import _is_mutating
    from ..utils import _pytree as pytree
    devices = set()
    out = next(n for n in gm.graph.nodes if n.op == "output")
    nodes = [n for n in gm.graph.nodes if n.op == "placeholder"]
    nodes += [a for a in pytree.tree_flatten(out.args[0])[0] if hasattr(a, "meta")]
    for n in nodes:
        v = n.meta.get("val")
        if isinstance(v, Tensor):
            if v.device.type != "cuda":
                return f"cpu device ({n.name})"
            devices.add(v.device.index or 0)
    if len(devices) > 1:
        return "multiple devices"
    if not devices:
        return "no CUDA tensors"
    if _is_mutating(gm):
        return "mutated inputs"
    return None


def _call(compiled, args):
    if getattr(compiled, "_boxed_call", False):
        return compiled(args)
    out = compiled(*args)
    args.clear()
    return out


class CUDAGraphed:
    """One compiled graph run through CUDA graphs, boxed as compiled graphs are: ``call(args)``
    takes the argument list and clears it."""

    _boxed_call = True

    def __init__(self, compiled, fixed):
        self.compiled = compiled
        self.fixed = frozenset(fixed)
        self.recordings = {}  # the integer inputs (a dynamic graph's sizes) -> _Recording
        self.warned_moved = False

    def __call__(self, args):
        key = tuple(x for x in args if not isinstance(x, Tensor))
        rec = self.recordings.get(key)
        if rec is None:
            try:
                rec = _Recording(self, args)
            except RuntimeError as e:
                # an op the capture refuses (one that waits for the device, say): this graph
                # runs as compiled from now on, as an uncapturable one would
                log_skip(f"a failed capture: {e}")
                rec = _Compiled(self.compiled)
            self.recordings[key] = rec
        return rec.run(args)


class _Compiled:
    """The graph of a set of sizes that could not be captured: it runs as compiled."""

    def __init__(self, compiled):
        self.compiled = compiled

    def run(self, args):
        return _call(self.compiled, args)


class _Recording:
    """The CUDA graph of one set of sizes: its static inputs, captured outputs and how each
    output is handed out."""

    def __init__(self, owner, args):
        from .. import cuda, empty_strided, no_grad
        self.owner = owner
        fixed = owner.fixed
        device = next(x.device for x in args if isinstance(x, Tensor))
        self.owned = []  # (index, buffer, the slice that copies it) of the copied inputs
        static = list(args)
        with no_grad():
            for i, x in enumerate(args):
                if isinstance(x, Tensor) and i not in fixed:
                    buf = empty_strided(tuple(x.shape), tuple(x.stride()), dtype=x.dtype,
                                        device=x.device)
                    idx = _unexpanded(x)
                    buf[idx].copy_(x[idx])
                    static[i] = buf
                    self.owned.append((i, buf, idx))
        self.addresses = [(i, x.data_ptr()) for i, x in enumerate(static)
                          if isinstance(x, Tensor) and i in fixed]  # of the fixed inputs
        stream = cuda.Stream(device)  # the warm-up's and the capture's
        gen = cuda.default_generators[device.index or 0]
        rng = gen.get_state()
        with no_grad():
            cuda.synchronize()
            with cuda.stream(stream):
                _call(owner.compiled, list(static))  # the warm-up
            cuda.synchronize()
            gen.set_state(rng)  # the first replay draws what this call would have
            self.graph = cuda.CUDAGraph()
            with cuda.graph(self.graph, stream=stream):
                outs = _call(owner.compiled, list(static))
        counters["recordings"] += 1
        self.outputs = outs  # they hold the captured memory
        self.handed = []  # weak references to the storages the last replay handed out
        # how each output is handed out: ("value", v) a non-tensor; ("input", i) the caller's
        # i-th input (a fixed input returned as it is); ("view", t) a tensor over a fixed
        # input's memory, made again each call; ("pool", k, t) a tensor over the k-th storage
        # of the graph's own memory (its pool, or an owned input buffer)
        fixed_inputs = {id(static[i]): i for i, _ in self.addresses}
        fixed_storages = {id(static[i]._storage) for i, _ in self.addresses}
        pool = {}  # id(storage) -> its place in pool_storages
        self.pool_storages = []
        self.plan = []
        for o in outs:
            if not isinstance(o, Tensor):
                self.plan.append(("value", o))
            elif id(o) in fixed_inputs:
                self.plan.append(("input", fixed_inputs[id(o)]))
            elif id(o._storage) in fixed_storages:
                self.plan.append(("view", o))
            else:
                if id(o._storage) not in pool:
                    pool[id(o._storage)] = len(self.pool_storages)
                    self.pool_storages.append(o._storage)
                self.plan.append(("pool", pool[id(o._storage)], o))

    def run(self, args):
        for i, ptr in self.addresses:
            if args[i].data_ptr() != ptr:
                return self._run_compiled(args, i)
        for ref in self.handed:
            s = ref()
            if s is not None:
                s.resize_(s._nbytes)  # still held: its values move to memory of their own
        from .. import no_grad
        with no_grad():
            for i, buf, idx in self.owned:
                x = args[i]
                if x.data_ptr() != buf.data_ptr():
                    buf[idx].copy_(x[idx])
        inputs = list(args)
        args.clear()
        self.graph.replay()
        counters["replays"] += 1
        storages = [_alias_storage(s) for s in self.pool_storages]
        self.handed = [weakref.ref(s) for s in storages]
        result = []
        for step in self.plan:
            kind = step[0]
            if kind == "value":
                result.append(step[1])
            elif kind == "input":
                result.append(inputs[step[1]])
            else:
                t = step[-1]
                storage = t._storage if kind == "view" else storages[step[1]]
                result.append(make_tensor(storage, t._size, t._stride, t._offset, t._dtype,
                                          t._device))
        return result

    def _run_compiled(self, args, i):
        counters["eager"] += 1
        if not self.owner.warned_moved:
            self.owner.warned_moved = True
            perf_hint_log.info("cudagraphs: input %d is not where the graph was captured to "
                               "read it; running the graph as compiled", i)
        return _call(self.owner.compiled, args)


def _alias_storage(s):
    """A new storage object over storage ``s``'s memory (the caching allocator's block stays
    owned by ``s``'s data pointer, which both hold)."""
    a = type(s).__new__(type(s))
    a._buf, a._bytes, a._nbytes, a.device = s._buf, None, s._nbytes, s.device
    a._resizable, a._allocator = True, s._allocator
    return a


def _unexpanded(x):
    """The index that takes one element along each expanded (stride 0) dimension of ``x``:
    copying through it writes each memory location once."""
    return tuple(slice(0, 1) if st == 0 and n > 1 else slice(None)
                 for n, st in zip(x.shape, x.stride()))
