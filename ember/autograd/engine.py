"""The backward engine: runs a recorded graph in reverse (PyTorch's ``Engine::execute``).

``run_backward`` is one ``GraphTask``: ``prepare`` (steps 1-3), ``run`` (4-5), ``finish``.

1. Roots: each output's gradient edge, seeded with its gradient.
2. ``compute_dependencies``: count incoming edges of every node reachable from the roots.
3. With ``inputs`` (``autograd.grad`` or ``backward(inputs=...)``) mark which nodes lead to
   an input (``exec_info``); the others are skipped, and the gradients reaching the inputs are
   captured instead of (or besides) being accumulated.
4. Ready nodes run highest ``sequence_nr`` first (the most recently recorded); each node's
   incoming gradients are summed in its input buffer. Per node, in order: tensor pre-hooks,
   retains_grad hooks, Node pre-hooks, ``apply``, Node post-hooks, then (without
   ``retain_graph``) its saved tensors are released.
5. Each produced gradient is checked against the forward input it belongs to: summed down to
   its shape (broadcasting) and cast to its dtype, as PyTorch's ``validate_outputs`` does.

The calling thread runs the CPU nodes. Once the CUDA runtime has started, a node whose gradients
are on a CUDA device runs on that device's worker thread instead (``run_with_device_threads``),
with the caller's thread-local state and on the stream its forward op ran on; a backward called
from a device thread runs entirely there (reentrant), and so does a backward called while
``set_multithreading_enabled(False)`` is in force: every node on the calling thread, each CUDA
node still on its forward op's stream (``run``). Gradients are ember tensors computed with
ember ops, so with ``create_graph=True`` (grad mode on while nodes run) the backward pass is itself
recorded.
"""
import functools
import heapq
import itertools
import queue
import sys
import threading

import ember  # attributes resolve at call time; the package is initializing when this loads

from .._core import thread_local_state
from .._core.tensor_impl import empty_tensor
from .._dispatch import tls as _tls
from .._dispatch.keys import SPARSE_BITS, SPARSE_CSR_BITS
from .._kernels.generic import copy_into
from .._tensor import Tensor
from . import anomaly_mode
from .grad_mode import engine_modes
from .graph import CUDA_STREAMS, AccumulateGrad, gradient_edge

__all__ = ["run_backward", "accumulate_grad", "current_graph_task_id", "will_engine_execute_node"]

_state = _tls.state


def _shape_str(shape):
    return f"torch.Size([{', '.join(map(str, shape))}])"


# ---------------------------------------------------------------------------------------------
# Gradient arithmetic, all through ember ops.

def sum_to(grad, shape):
    """Reduce ``grad`` to ``shape`` by summing broadcast dimensions (``sum_to_size``)."""
    shape = tuple(shape)
    gshape = tuple(grad._size)
    if gshape == shape:
        return grad
    lead = len(gshape) - len(shape)
    dims = list(range(lead))
    for i, s in enumerate(shape):
        if s == 1 and gshape[lead + i] != 1:
            dims.append(lead + i)
    if dims:
        grad = ember.sum(grad, dims, keepdim=True)
    if lead:
        grad = grad.view(shape)
    elif tuple(grad._size) != shape:
        grad = grad.view(shape)
    return grad


def _is_expandable(small, big):
    if len(small) > len(big):
        return False
    for s, b in zip(reversed(small), reversed(big)):
        if s != b and s != 1:
            return False
    return True


def _validate(node, grads):
    """PyTorch's ``validate_outputs``: one grad per edge, shaped and typed like its input."""
    nxt = node._next
    if len(grads) != len(nxt):
        raise RuntimeError(f"function {node.name()} returned an incorrect number of gradients "
                           f"(expected {len(nxt)}, got {len(grads)})")
    out = list(grads)
    for i, g in enumerate(out):
        if g is None or nxt[i][0] is None:
            continue
        meta = node._edge_meta[i] if i < len(node._edge_meta) else None
        if meta is None:
            continue
        shape, dtype = meta
        if tuple(g._size) != tuple(shape):
            if not _is_expandable(tuple(shape), tuple(g._size)):
                raise RuntimeError(
                    f"Function {node.name()} returned an invalid gradient at index {i} - got "
                    f"[{', '.join(map(str, g._size))}] but expected shape compatible with "
                    f"[{', '.join(map(str, shape))}]")
            g = sum_to(g, shape)
        if g._dtype is not dtype:
            g = g.to(dtype)
        out[i] = g
    return out


_ANY_SPARSE = SPARSE_BITS | SPARSE_CSR_BITS


def _sum_grads(old, new):
    """Two gradients of one input summed (PyTorch's ``InputBuffer::accumulate``): a dense one
    is added to a sparse one, not the other way round (add(sparse, dense) is refused)."""
    if old._keyset & _ANY_SPARSE and not new._keyset & _ANY_SPARSE:
        return new + old
    return old + new


def accumulate_grad(var, new):
    """AccumulateGrad's table (``torch/csrc/autograd/functions/accumulate_grad.h``)."""
    old = var._grad
    if old is None:
        if new._keyset & _ANY_SPARSE:  # a sparse gradient is kept as it is, or copied
            steal = not _state.grad_enabled and sys.getrefcount(new) <= _STEAL_REFS
            var._grad = new if steal else new.clone()
            return
        # PyTorch's rule: grad mode off, nobody else holds the gradient, and its strides obey
        # the parameter's layout
        if (not _state.grad_enabled and new._grad_fn is None
                and sys.getrefcount(new) <= _STEAL_REFS
                and tuple(new._stride) == tuple(var._stride)):
            # steal: nobody else holds it. PyTorch stores ``new.detach()``, which is no view:
            # a view (an mm's transposed product) must not become .grad, whose detach_() fastai's
            # zero_grad calls
            var._grad = new if new._base_ is None else new.detach()
        else:
            g = new.clone() if _state.grad_enabled else _detached_clone(new, var)
            var._grad = g
    elif not _state.grad_enabled and not (old._keyset & _ANY_SPARSE and
                                          not new._keyset & _ANY_SPARSE):
        old.add_(new)
    else:
        var._grad = _sum_grads(old, new)


def _detached_clone(new, var):
    if type(new) is not Tensor:  # a subclass (__torch_dispatch__) copies itself through the ops
        return new.clone()
    out = empty_tensor(var._size, new._dtype, new._device,
                       stride=var._stride if var.is_non_overlapping_and_dense() else None)
    copy_into(out, new)
    return out


# References to a stealable gradient: AccumulateGrad.apply's local, accumulate_grad's argument,
# and getrefcount's own argument (apply has taken it out of its grads list; measured on CPython).
# A larger count means someone else holds it, and it is copied instead.
_STEAL_REFS = 3


# ---------------------------------------------------------------------------------------------
# The backward pass. Its skeleton is micrograd's ``backward``: order the graph so that a node runs
# after every node that feeds it a gradient, then call each node's backward in that order.

def run_backward(tensors, grad_tensors, keep_graph, create_graph, inputs=None,
                 allow_unused=True, accumulate_grad=True):
    """Run the graph behind ``tensors``. Returns the captured gradients of ``inputs`` when
    ``accumulate_grad`` is False (``autograd.grad``), else None."""
    task = GraphTask(keep_graph, create_graph, accumulate_grad)
    task.prepare(tensors, grad_tensors, inputs)
    if CUDA_STREAMS and _tasks.device is None and engine_modes.multithreading_enabled:
        task.run_with_device_threads()
    else:  # no CUDA tensor can exist, a backward called from a device thread (reentrant), or
        task.run()  # device threads switched off: this thread runs every node
    return task.finish(inputs, allow_unused)


class GraphTask:
    """One backward pass (PyTorch's ``GraphTask``): the nodes it reaches, the gradients in flight
    and the gradients it captures.

    ``prepare``: seed the roots, count each node's incoming edges (the topological order, found
    as Kahn's algorithm does) and, with ``inputs``, mark the nodes on a path to one.
    ``run``: take the ready node recorded last, run it, send its gradients to the next nodes; a
    node whose last incoming gradient arrived is ready. ``finish``: hand the captured gradients
    back (``autograd.grad``) or to the inputs' ``.grad`` (``backward(inputs=...)``).

    While it runs, it is the top of this thread's task stack (``current_graph_task_id``,
    ``queue_callback``, ``will_engine_execute_node``).
    """
    __slots__ = ("id", "keep_graph", "create_graph", "accumulate", "nodes", "needed", "callbacks",
                 "deps", "buffers", "ready", "order", "captures", "captured", "cond", "pending",
                 "error", "streams", "device_ready", "draining")
    _ids = itertools.count()

    def __init__(self, keep_graph, create_graph, accumulate_grad):
        self.id = next(self._ids)
        self.keep_graph = keep_graph
        self.create_graph = create_graph
        self.accumulate = accumulate_grad  # False: autograd.grad, which never writes .grad
        self.nodes = None  # every node reachable from the roots
        self.needed = None  # with inputs=: the nodes on a path to an input, else None
        self.callbacks = []  # run once the graph is done (DistributedDataParallel's reducer)
        self.deps = None  # node -> incoming edges whose gradient has not arrived yet
        self.buffers = {}  # node -> its input buffer: the gradients summed so far, per input
        self.ready = []  # heap of (-sequence_nr, order, node): the last recorded runs first
        self.order = itertools.count()  # ties on sequence_nr: first pushed, first run
        self.captures = None  # with inputs=: (node, input_nr) -> indices into inputs
        self.captured = []  # with inputs=: the gradient that reached each input

    # -- prepare ----------------------------------------------------------------------------
    def prepare(self, tensors, grad_tensors, inputs):
        root_edges, root_grads = _roots(tensors, grad_tensors)
        input_edges = None if inputs is None else _input_edges(inputs)
        root_nodes = list(dict.fromkeys(n for n, _ in root_edges))
        self.deps, self.nodes = _compute_dependencies(root_nodes)
        if input_edges is not None:
            self.needed = _exec_needed(self.nodes, [n for n, _ in input_edges])
            self.captures = {}
            for i, edge in enumerate(input_edges):
                self.captures.setdefault(edge, []).append(i)
            self.captured = [None] * len(input_edges)
        for edge, g in zip(root_edges, root_grads):
            self._add_to_buffer(edge, g)
        for n in root_nodes:
            if self.deps.get(n, 0) == 0:
                self._push_ready(n)

    def _add_to_buffer(self, edge, g):
        node, nr = edge
        buf = self.buffers.get(node)
        if buf is None:
            buf = self.buffers[node] = [None] * _num_inputs(node)
        old = buf[nr]
        buf[nr] = g if old is None else _sum_grads(old, g)

    def _push_ready(self, node):
        heapq.heappush(self.ready, (-node._seq_nr, next(self.order), node))

    # -- run --------------------------------------------------------------------------------
    def run(self):
        prev_grad = _state.grad_enabled
        _state.grad_enabled = bool(self.create_graph)  # create_graph: record the backward too
        _tasks.stack.append(self)
        try:
            ready, buffers = self.ready, self.buffers
            # with CUDA started, a node whose gradients are on a device runs on its forward
            # op's stream here too (PyTorch's engine guards each node's stream on any thread)
            streams = self.streams = set() if CUDA_STREAMS else None
            while ready:
                node = heapq.heappop(ready)[2]
                grads = buffers.pop(node, None) or [None] * _num_inputs(node)
                index = None if streams is None else _cuda_index(grads)
                if index is not None:
                    self._run_on_stream(node, grads, index, functools.partial(
                        self._send_on_this_thread, node))
                    continue
                if node_observers:
                    outputs = self._run_observed(node, grads)
                else:
                    outputs = self._run_node(node, grads)
                if outputs is not None:
                    self._send(node, outputs)
                # the buffers now own the gradients: dropping this list lets AccumulateGrad see
                # a gradient nobody else holds and steal it instead of copying
                outputs = None
            if streams:
                self._wait_for_device_streams()
            self._run_callbacks()
        finally:
            _tasks.stack.pop()
            _state.grad_enabled = prev_grad

    def _send_on_this_thread(self, node, outputs):
        self.streams.add(node._stream)
        self._send(node, outputs)

    def run_with_device_threads(self):
        """``run`` when CUDA tensors may be in the graph (PyTorch's device threads): a node whose
        gradients are on a CUDA device runs on that device's worker thread, on the stream its
        forward op used; the others run here. This thread schedules: it pops ready nodes, hands
        device nodes to their worker and runs CPU nodes, until no node is ready or running.
        Workers send their outputs under ``cond``, so both threads may add to a buffer."""
        self.cond = threading.Condition()
        self.pending = 0  # device queues a worker is draining
        self.error = None  # the first exception a worker raised
        self.streams = set()  # streams device nodes ran on (the caller waits for them)
        self.device_ready = {}  # device index -> heap of ready nodes whose gradients are there
        self.draining = set()  # device indices whose worker is running this task's nodes
        prev_grad = _state.grad_enabled
        _state.grad_enabled = bool(self.create_graph)
        _tasks.stack.append(self)
        cond, ready, buffers = self.cond, self.ready, self.buffers
        try:
            snapshot = thread_local_state.capture()
            while True:
                with cond:
                    while not ready and self.pending and self.error is None:
                        cond.wait()
                    if self.error is not None:
                        while self.pending:  # workers skip the task's queued nodes now
                            cond.wait()
                        raise self.error
                    if not ready:
                        break
                    entry = heapq.heappop(ready)
                    node = entry[2]
                    index = _cuda_index(buffers.get(node, ()))
                    if index is not None:
                        self._hand_to_device(index, entry, snapshot)
                        continue
                    grads = buffers.pop(node, None) or [None] * _num_inputs(node)
                outputs = (self._run_observed(node, grads) if node_observers
                           else self._run_node(node, grads))
                if outputs is not None:
                    with cond:
                        self._send(node, outputs)
                outputs = None
            self._wait_for_device_streams()
            self._run_callbacks()
        except BaseException as e:
            # whoever failed, the workers stop taking this task's nodes before the caller sees
            # the error (nothing of an abandoned backward may still write .grad afterwards)
            with cond:
                if self.error is None:
                    self.error = e
                while self.pending:
                    cond.wait()
            raise
        finally:
            _tasks.stack.pop()
            _state.grad_enabled = prev_grad

    def _hand_to_device(self, index, entry, snapshot):
        """Queue a ready node for device ``index``'s worker (under ``cond``), waking the worker
        for this task unless it is already draining the queue."""
        heapq.heappush(self.device_ready.setdefault(index, []), entry)
        if index not in self.draining:
            self.draining.add(index)
            self.pending += 1
            _device_worker(index).submit((self, index, snapshot))

    def _drain_device(self, index, snapshot):
        """A device worker's part (PyTorch's per-device ready queue): run this task's ready
        nodes of device ``index``, most recently recorded first, until none is left. A node it
        makes ready on the same device joins the queue here; any other goes to the caller."""
        heap, cond, buffers = self.device_ready[index], self.cond, self.buffers
        while True:
            with cond:
                if not heap or self.error is not None:
                    self.draining.discard(index)
                    return
                node = heapq.heappop(heap)[2]
                grads = buffers.pop(node, None) or [None] * _num_inputs(node)
            self._run_on_device(node, grads, (index, snapshot))
            grads = None

    def _run_on_device(self, node, grads, device):
        """A device worker runs ``node`` on its forward stream and sends its gradients.
        ``device``: ``(index, snapshot)``."""
        def send(outputs):
            with self.cond:
                self.streams.add(node._stream)
                self._send(node, outputs, device)
        self._run_on_stream(node, grads, device[0], send)

    def _run_on_stream(self, node, grads, index, send):
        """``_run_node`` with device ``index`` and the stream ``node`` was recorded on current;
        the streams of the nodes its gradients go to wait for that stream before they use them.
        ``send(outputs)`` runs while that stream is still current: accumulating the gradients
        into the buffers is kernels, which must land on it (and in a CUDA graph captured
        there)."""
        streams = CUDA_STREAMS[0]
        saved_device, saved_stream = streams.device, streams.streams.get(index)
        streams.device = index
        if node._stream is not None:
            streams.streams[index] = node._stream
        else:
            streams.streams.pop(index, None)
        try:
            outputs = (self._run_observed(node, grads) if node_observers
                       else self._run_node(node, grads))
            if outputs is not None:
                _sync_consumer_streams(node, outputs)
                send(outputs)
        finally:
            streams.device = saved_device
            if saved_stream is None:
                streams.streams.pop(index, None)
            else:
                streams.streams[index] = saved_stream

    def _wait_for_device_streams(self):
        """The caller's current stream waits for every stream the device nodes ran on, so the
        gradients are ready for work it queues next (PyTorch syncs the leaf streams so)."""
        from ..cuda.streams import current_stream, default_stream
        for s in self.streams:
            stream = s if s is not None else default_stream(0)
            mine = current_stream(stream.device_index)
            if mine != stream:
                mine.wait_stream(stream)

    def _run_node(self, node, grads):
        """Pre-hooks, capture, apply, validation, post-hooks, release. Returns the gradients for
        ``node._next``, or None when the node is skipped."""
        grads = _call_pre_hooks(node, grads)
        if self.captures is not None and not self._capture(node, grads):
            return None
        outputs = _apply(node, grads)
        if node._post_hooks:
            outputs = _call_post_hooks(node, outputs, grads)
        if not self.keep_graph:
            node.release_variables()
        return outputs

    def _run_observed(self, node, grads):
        """``_run_node``, told to the observers (the profiler)."""
        tokens = [o.enter(node) for o in node_observers]
        try:
            return self._run_node(node, grads)
        finally:
            for o, tok in zip(reversed(node_observers), reversed(tokens)):
                o.exit(tok)

    def _capture(self, node, grads):
        """With ``inputs``: keep the gradients arriving at an input; say whether ``node`` runs."""
        captures = self.captures
        for i in range(len(grads)):
            idx = captures.get((node, i))
            if idx is not None:
                for k in idx:
                    self.captured[k] = grads[i]
        if isinstance(node, AccumulateGrad):
            # autograd.grad never writes .grad; backward(inputs=) only for the inputs
            return self.accumulate and (node, 0) in captures
        needed = self.needed
        return any(nx is not None and nx in needed for nx, _ in node._next)

    def _send(self, node, outputs, device=None):
        """Add each gradient to its next node's buffer; a node with no edge left to wait for is
        ready (or, off every path to ``inputs``, dropped). Hot: ``_add_to_buffer`` and
        ``_push_ready`` are inlined. ``device``: ``(index, snapshot)`` when a device worker sends
        — a node made ready with its gradients on that device stays in the worker's queue."""
        deps, buffers, needed = self.deps, self.buffers, self.needed
        for (nxt, nr), g in zip(node._next, outputs):
            if nxt is None:
                continue
            if g is not None:
                buf = buffers.get(nxt)
                if buf is None:
                    buf = buffers[nxt] = [None] * _num_inputs(nxt)
                old = buf[nr]
                buf[nr] = g if old is None else _sum_grads(old, g)
                del g
            d = deps[nxt] - 1
            deps[nxt] = d
            if d == 0:
                if needed is not None and nxt not in needed:
                    buffers.pop(nxt, None)
                    continue
                entry = (-nxt._seq_nr, next(self.order), nxt)
                if device is not None and _cuda_index(buffers.get(nxt, ())) == device[0]:
                    self._hand_to_device(device[0], entry, device[1])
                else:
                    heapq.heappush(self.ready, entry)
                    if device is not None:
                        self.cond.notify_all()

    def _run_callbacks(self):
        # final callbacks (queue_callback), in order; one may queue more
        while self.callbacks:
            self.callbacks.pop(0)()

    # -- finish -----------------------------------------------------------------------------
    def finish(self, inputs, allow_unused):
        if inputs is None:
            return None
        if self.accumulate:
            # backward(inputs=...): non-leaf inputs get their captured gradient in .grad.
            for t, g in zip(inputs, self.captured):
                if g is not None and t._grad_fn is not None:
                    _accumulate_non_leaf(t, g, self.create_graph)
            return None
        for i, g in enumerate(self.captured):
            if g is None and not allow_unused:
                raise RuntimeError(f"The differentiated Tensor at index {i} appears to not have "
                                   f"been used in the graph. Set allow_unused=True if this is the "
                                   f"desired behavior.")
        return self.captured


def _roots(tensors, grad_tensors):
    """Each output's gradient edge and the gradient it starts with (ones for a scalar)."""
    edges, grads = [], []
    for i, (t, g) in enumerate(zip(tensors, grad_tensors)):
        edge = gradient_edge(t)
        if edge[0] is None:
            raise RuntimeError(f"element {i} of tensors does not require grad and does not have "
                               f"a grad_fn")
        if g is None:
            if t.numel() != 1:
                raise RuntimeError("grad can be implicitly created only for scalar outputs")
            if not (t._dtype.is_floating_point or t._dtype.is_complex):
                raise RuntimeError(f"grad can be implicitly created only for real scalar outputs "
                                   f"but got {t._dtype}")
            g = ember.ones_like(t)
        else:
            if tuple(g._size) != tuple(t._size):
                raise RuntimeError(f"Mismatch in shape: grad_output[{i}] has a shape of "
                                   f"{_shape_str(g._size)} and output[{i}] has a shape of "
                                   f"{_shape_str(t._size)}.")
        edges.append(edge)
        grads.append(g)
    return edges, grads


def _input_edges(inputs):
    """Where the gradients of ``inputs`` arrive: the edges whose gradients are captured."""
    edges = []
    for t in inputs:
        edge = gradient_edge(t)
        if edge[0] is None:
            raise RuntimeError("One of the differentiated Tensors does not require grad")
        edges.append(edge)
    return edges


def _compute_dependencies(root_nodes):
    """Incoming edges of every node reachable from the roots, and the set of those nodes."""
    deps = {}
    seen = set(root_nodes)
    stack = list(root_nodes)
    while stack:
        n = stack.pop()
        for nxt, _ in n._next:
            if nxt is None:
                continue
            deps[nxt] = deps.get(nxt, 0) + 1
            if nxt not in seen:
                seen.add(nxt)
                stack.append(nxt)
    return deps, seen


def _exec_needed(all_nodes, target_nodes):
    """Nodes on some path to a target (PyTorch's exec_info), computed bottom-up."""
    needed = set(target_nodes)
    # Iterate to a fixed point in reverse topological-ish order: a node is needed if any
    # successor is. Sorting by sequence_nr (creation order) makes one pass nearly enough.
    order = sorted(all_nodes, key=lambda n: n._seq_nr if not isinstance(n, AccumulateGrad)
                   else -1)
    changed = True
    while changed:
        changed = False
        for n in order:
            if n in needed:
                continue
            if any(nx is not None and nx in needed for nx, _ in n._next):
                needed.add(n)
                changed = True
    return needed


def _call_pre_hooks(node, grads):
    """Tensor pre-hooks, then retains_grad hooks, then Node pre-hooks; returns the grads."""
    if node._tensor_pre_hooks is None and node._retains_grad_hooks is None and \
            node._pre_hooks is None and not isinstance(node, AccumulateGrad):
        return grads  # no hook anywhere (a leaf's AccumulateGrad finds its hooks on the leaf)
    for i in range(len(grads)):
        for h in node._tensor_hooks_for(i):
            if grads[i] is None:
                continue
            r = h(grads[i])
            if r is not None:
                grads[i] = r
    if node._retains_grad_hooks:
        for i, h in list(node._retains_grad_hooks.items()):
            if grads[i] is not None:
                h(grads[i])
    if node._pre_hooks:
        for h in tuple(node._pre_hooks.values()):
            r = h(tuple(grads))
            if r is not None:
                grads = list(r)
    return grads


def _apply(node, grads):
    """The node's backward on its input buffer, validated; a node with no gradient to work on
    (other than AccumulateGrad) sends None on every edge without running."""
    is_acc = isinstance(node, AccumulateGrad)
    if not is_acc:
        for g in grads:  # (a loop: a generator costs more than most nodes' bookkeeping)
            if g is not None:
                break
        else:
            return [None] * len(node._next)
    if anomaly_mode._state.enabled:
        outputs = anomaly_mode.run_with_anomaly(node, grads)
    else:
        outputs = node.apply(grads)
    if is_acc:
        return ()
    outputs = _validate(node, outputs)
    if anomaly_mode._state.enabled and anomaly_mode._state.check_nan:
        anomaly_mode.check_nan(node, outputs)
    return outputs


def _call_post_hooks(node, outputs, grads):
    """Node post-hooks ``hook(grad_inputs, grad_outputs)``; a non-None return replaces the
    gradients sent on."""
    for h in tuple(node._post_hooks.values()):
        r = h(tuple(outputs), tuple(grads))
        if r is not None:
            outputs = list(r)
    return outputs


def _accumulate_non_leaf(t, g, create_graph):
    prev = _state.grad_enabled
    _state.grad_enabled = bool(create_graph)
    try:
        t._grad = g if t._grad is None else _sum_grads(t._grad, g)
    finally:
        _state.grad_enabled = prev


# ---------------------------------------------------------------------------------------------
# The running graph task, for hooks that need to know about the whole backward pass
# (register_multi_grad_hook): PyTorch's _current_graph_task_id / _will_engine_execute_node.

class _TaskStack(threading.local):
    def __init__(self):
        self.stack = []  # a backward run from a hook nests
        self.device = None  # on a device worker thread: its CUDA device index


_tasks = _TaskStack()


# ---------------------------------------------------------------------------------------------
# Device threads (PyTorch's engine has one per CUDA device): each takes (task, node, grads,
# thread state) items from its queue and runs them with the calling thread's state.

def _cuda_index(grads):
    """The CUDA device index of a node's first CUDA gradient, or None (PyTorch's
    ``InputBuffer::device``: the first non-CPU tensor decides)."""
    for g in grads:
        if g is not None and g._device.type == "cuda":
            return g._device.index or 0
    return None


def _sync_consumer_streams(node, outputs):
    """Before a CUDA gradient reaches a node recorded on another stream, that stream waits for
    the one it was computed on (PyTorch's ``InputBuffer::add`` stream rule)."""
    produced_on = node._stream
    for (nxt, _), g in zip(node._next, outputs):
        if nxt is None or g is None or g._device.type != "cuda":
            continue
        consumer = nxt._stream
        if consumer != produced_on:
            index = g._device.index or 0
            from ..cuda.streams import default_stream  # (ember.cuda imports ember)
            (consumer or default_stream(index)).wait_stream(produced_on or default_stream(index))


class _DeviceWorker:
    def __init__(self, index):
        self.index = index
        self.queue = queue.SimpleQueue()
        self.thread = threading.Thread(target=self._main, name=f"ember autograd cuda:{index}",
                                       daemon=True)
        self.thread.start()

    def submit(self, item):
        self.queue.put(item)

    def _main(self):
        _tasks.device = self.index
        while True:
            task, index, snapshot = self.queue.get()
            try:
                with thread_local_state.restored(snapshot):
                    _tasks.stack.append(task)
                    try:
                        task._drain_device(index, snapshot)
                    finally:
                        _tasks.stack.pop()
            except BaseException as e:  # handed to the calling thread, which raises it
                with task.cond:
                    if task.error is None:
                        task.error = e
            finally:
                with task.cond:
                    task.pending -= 1
                    task.cond.notify_all()
                # nothing of the task may stay alive here until the next item arrives
                task = snapshot = None


_workers = {}
_workers_lock = threading.Lock()


def _device_worker(index):
    w = _workers.get(index)
    if w is None:
        with _workers_lock:
            w = _workers.get(index)
            if w is None:
                w = _workers[index] = _DeviceWorker(index)
    return w


def current_graph_task_id():
    """Id of the backward pass running in this thread, or -1 outside one."""
    return _tasks.stack[-1].id if _tasks.stack else -1


def queue_callback(callback):
    """Run ``callback()`` when the running backward pass has finished its graph
    (``Variable._execution_engine.queue_callback``)."""
    if not _tasks.stack:
        raise RuntimeError("Final callbacks can only be installed during backward pass.")
    _tasks.stack[-1].callbacks.append(callback)


def will_engine_execute_node(node):
    """Whether the running backward pass will reach ``node`` (a grad_fn or AccumulateGrad)."""
    if not _tasks.stack:
        raise RuntimeError("_will_engine_execute_node should only be called during the backward "
                           "pass")
    task = _tasks.stack[-1]
    if task.needed is not None and isinstance(node, AccumulateGrad):
        raise RuntimeError("A leaf node was passed to _will_engine_execute_node but we are "
                           "currently running autograd.grad(). This is currently not supported.")
    return node in (task.needed if task.needed is not None else task.nodes)


def _num_inputs(node):
    return max(len(node._out_meta), 1)


# Objects told about each backward node the engine runs (the profiler): ``enter(node) ->
# token`` before the node's hooks and apply, ``exit(token)`` after. Empty: one branch per node.
node_observers = []

