"""CUDA graphs: record a stream's work once, replay it with one launch (``ember.cuda.CUDAGraph``,
``ember.cuda.graph``, ``graph_pool_handle``, ``make_graphed_callables``).

While a graph captures, the capturing stream's kernels are recorded instead of run, and the
memory they allocate comes from the graph's private pool of the caching allocator, so replays find
their inputs and outputs at the addresses captured. Operations that synchronise with the host
(``.item()``, device → host copies, ``synchronize``) are errors during capture, as on a GPU.
"""
import warnings

from .. import autograd
from .._tensor import Tensor
from ..overrides import DisableTorchFunctionSubclass
from . import _caching_allocator, _device_assert
from .streams import Stream, _rt, current_stream, stream as _stream_ctx

__all__ = ["CUDAGraph", "graph", "graph_pool_handle", "is_current_stream_capturing",
           "make_graphed_callables"]

def graph_pool_handle():
    """An opaque id for a memory pool that several graphs may share (``pool=``)."""
    return _caching_allocator.next_user_pool_id()


_capturing = {}  # stream handle -> the CUDAGraph capturing it (begun by capture_begin)


def capturing_graph(stream):
    """The CUDAGraph capturing the stream with handle ``stream``, or None."""
    return _capturing.get(stream)


def is_current_stream_capturing():
    """Whether the current stream of the current device is capturing a graph."""
    return _rt().stream_is_capturing(current_stream().cuda_stream)


class CUDAGraph:
    """A captured CUDA graph (``capture_begin``/``capture_end``, then ``replay``)."""

    def __init__(self, keep_graph=False):
        self.keep_graph = keep_graph
        self._exec = None
        self._checks = False
        self._pool = None
        self._stream = None
        self._device = None
        self._generators = []  # registered before the capture began
        self._rng = []  # a GraphState per generator whose random ops the graph holds
        self._keep = []  # host memory its captured copies read (keep_alive)

    def register_generator_state(self, generator):
        """Let the graph hold random ops of ``generator`` (the capturing device's default
        generator needs no registering): each replay draws new numbers from it."""
        if self._stream is None:
            self._generators.append(generator)
        else:
            self._rng.append(_graph_state(generator, self._device))

    def capture_begin(self, pool=None, capture_error_mode="global"):
        if capture_error_mode not in ("global", "thread_local", "relaxed"):
            raise RuntimeError(f"Unknown capture_error_mode {capture_error_mode!r}; expected "
                               f"'global', 'thread_local' or 'relaxed'")
        if self._exec is not None:
            raise RuntimeError("This CUDAGraph instance was already captured; call reset() "
                               "before capturing it again.")
        rt = _rt()
        s = current_stream()
        if s.cuda_stream == 0:
            raise RuntimeError("CUDA graphs must be captured on a non-default stream. (However, "
                               "after capture, it's ok to replay them on the default stream.)")
        self._stream, self._device = s, s.device_index
        from . import default_generators
        gens = [default_generators[self._device]] + self._generators
        self._rng = [_graph_state(g, self._device) for g in dict.fromkeys(gens)]
        self._pool = _caching_allocator.next_capture_pool_id() if pool is None else tuple(pool)
        handle = s.cuda_stream
        _caching_allocator.get_allocator(self._device).begin_allocate_to_pool(
            self._pool, lambda stream: stream == handle)
        self._checks_before = _device_assert.launched
        rt.stream_begin_capture(handle, capture_error_mode)
        _capturing[handle] = self

    def capture_end(self):
        rt = _rt()
        _capturing.pop(self._stream.cuda_stream, None)
        try:
            self._exec = rt.stream_end_capture(self._stream.cuda_stream)
            # device-side index checks captured: each replay leaves their flag to be read
            self._checks = _device_assert.launched != self._checks_before
        finally:
            _caching_allocator.get_allocator(self._device).end_allocate_to_pool(self._pool)
            for st in self._rng:
                st.generator._graph_state = None
            # only generators the graph drew from need their words written at each replay
            self._rng = [st for st in self._rng if st.increment]

    def keep_alive(self, obj):
        """Keep ``obj`` — host memory a captured copy reads at each replay — while the graph
        lives (until reset)."""
        self._keep.append(obj)

    def instantiate(self):
        """Graphs are instantiated at capture_end; kept for PyTorch's API."""

    def replay(self):
        if self._exec is None:
            raise RuntimeError("Called CUDAGraph::replay without a preceding successful capture.")
        for st in self._rng:
            st.prologue()
        _rt().graph_launch(self._exec, current_stream(self._device).cuda_stream)
        if self._checks:
            _device_assert.arm(self._device)

    def reset(self):
        """Free the graph; its private pool's memory returns to the allocator once no graph
        uses it."""
        if self._exec is not None:
            _rt().graph_destroy(self._exec)
            self._exec = None
            self._rng = []
            self._keep = []
            _caching_allocator.get_allocator(self._device).release_pool(self._pool)

    def pool(self):
        """The id of this graph's memory pool (pass it as ``pool=`` to share it)."""
        return self._pool

    def enable_debug_mode(self):
        pass

    def debug_dump(self, debug_path):
        raise NotImplementedError("ember.cuda.CUDAGraph.debug_dump: no graph dump format")

    def __del__(self):
        try:
            self.reset()
        except Exception:  # interpreter shutdown
            pass


class graph:
    """``with ember.cuda.graph(g):`` — capture the block into ``g``. On entry: synchronize,
    empty the cache, switch to ``stream`` (a shared side stream by default) and begin capture;
    on exit: end capture and restore the stream."""

    default_capture_stream = None

    def __init__(self, cuda_graph, pool=None, stream=None, capture_error_mode="global"):
        if self.__class__.default_capture_stream is None:
            self.__class__.default_capture_stream = Stream()
        self.pool = () if pool is None else (pool,)
        self.capture_stream = stream if stream is not None else \
            self.__class__.default_capture_stream
        self.stream_ctx = _stream_ctx(self.capture_stream)
        self.cuda_graph = cuda_graph
        self.capture_error_mode = capture_error_mode

    def __enter__(self):
        from . import empty_cache, synchronize
        synchronize()
        empty_cache()
        self.stream_ctx.__enter__()
        self.cuda_graph.capture_begin(*self.pool, capture_error_mode=self.capture_error_mode)

    def __exit__(self, *exc):
        try:
            self.cuda_graph.capture_end()
        finally:
            self.stream_ctx.__exit__(*exc)


def _graph_state(generator, device):
    """``generator``'s record in a capture on ``device``, which its random ops now find."""
    from .._core.device import device as _device
    from .._kernels.cuda.random import GraphState
    st = generator._graph_state = GraphState(generator, _device("cuda", device))
    return st


def make_graphed_callables(callables, sample_args, num_warmup_iters=3, allow_unused_input=False,
                           pool=None):
    """Graphed versions of ``callables`` (functions or modules): each call copies its inputs into
    the captured static inputs and replays the forward graph; backward replays the backward
    graph. All graphs share one memory pool."""
    from ..nn import Module
    just_one = not isinstance(callables, tuple)
    if just_one:
        callables, sample_args = (callables,), (sample_args,)
    for c, args in zip(callables, sample_args):
        if isinstance(c, Module):
            if c._forward_hooks or c._forward_pre_hooks or c._backward_hooks:
                raise AssertionError("Modules must not have hooks registered at the time they "
                                     "are passed. However, registering hooks on modules after "
                                     "passing them through make_graphed_callables is allowed.")
            if any(b.requires_grad for b in c.buffers()):
                raise AssertionError("In any :class:`~torch.nn.Module` passed to "
                                     ":func:`~make_graphed_callables`, only parameters may be "
                                     "trainable. All buffers must have ``requires_grad=False``.")
        if not all(isinstance(a, Tensor) for a in args):
            raise TypeError("In the beta API, sample_args for each callable must contain only "
                            "Tensors. Other types are not allowed.")
    params = [tuple(c.parameters()) if isinstance(c, Module) else () for c in callables]
    static_inputs = [tuple(args) + p for args, p in zip(sample_args, params)]
    mempool = graph_pool_handle() if pool is None else pool

    def grad_inputs_of(inputs):
        return tuple(i for i in inputs if i.requires_grad)

    # Warm up on a side stream (the allocator and lazy initialisations settle outside capture).
    from . import synchronize
    synchronize()
    with _stream_ctx(Stream()):
        for c, args, inputs in zip(callables, sample_args, static_inputs):
            for _ in range(num_warmup_iters):
                outs = _as_tuple(c(*args))
                need = tuple(o for o in outs if o.requires_grad)
                if need:
                    autograd.grad(need, grad_inputs_of(inputs),
                                  grad_outputs=tuple(o.new_ones(o.shape) for o in need),
                                  allow_unused=allow_unused_input)
    synchronize()

    fwd_graphs = [CUDAGraph() for _ in callables]
    bwd_graphs = [CUDAGraph() for _ in callables]
    static_outputs = []
    for c, args, g in zip(callables, sample_args, fwd_graphs):
        with graph(g, pool=mempool):
            static_outputs.append(_as_tuple(c(*args)))
    static_grad_outputs, static_grad_inputs = [], []
    for inputs, outs, g in reversed(list(zip(static_inputs, static_outputs, bwd_graphs))):
        need = tuple(o for o in outs if o.requires_grad)
        grad_outs = tuple(o.new_empty(o.shape) for o in need)
        with graph(g, pool=mempool):
            grads = autograd.grad(need, grad_inputs_of(inputs), grad_outputs=grad_outs,
                                  allow_unused=allow_unused_input) if need else ()
        it = iter(grads)
        static_grad_inputs.append(tuple(next(it) if i.requires_grad else None for i in inputs))
        static_grad_outputs.append(grad_outs)
    static_grad_inputs.reverse()
    static_grad_outputs.reverse()

    results = []
    for i, c in enumerate(callables):
        fn = _graphed(fwd_graphs[i], bwd_graphs[i], static_inputs[i], static_outputs[i],
                      static_grad_outputs[i], static_grad_inputs[i])
        if isinstance(c, Module):
            def forward(*args, _fn=fn, _params=params[i], _module=c, _orig=c.forward):
                if _module.training:
                    return _fn(*args, *_params)
                return _orig(*args)
            c.forward = forward
            results.append(c)
        else:
            results.append(lambda *args, _fn=fn: _fn(*args))
    return results[0] if just_one else tuple(results)


def _as_tuple(x):
    return x if isinstance(x, tuple) else (x,)


class _ReplayOutput(Tensor):
    """An output handed out by a graphed callable. Its memory is the graph's static output, so
    the callable's next replay overwrites it; PyTorch then silently shows the new values, and
    users keep losing results that way (a list of per-step losses that all read the last one).
    Using such an output after a later replay warns, once per output."""

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        for t in _tensors(args, kwargs):
            replay = getattr(t, "_replay", None)
            if replay is not None and replay[0].count != replay[1]:
                t._replay = None
                warnings.warn("ember.cuda: this output of a graphed callable was overwritten "
                              "by a later replay of its CUDA graph; it now holds the later "
                              "call's values. Clone it (out.clone()) before calling the graphed "
                              "callable again to keep them.", UserWarning, stacklevel=4)
        with DisableTorchFunctionSubclass():
            return func(*args, **(kwargs or {}))


def _tensors(args, kwargs):
    for v in list(args) + list((kwargs or {}).values()):
        if isinstance(v, (list, tuple)):
            yield from _tensors(v, None)
        elif isinstance(v, Tensor):
            yield v


class _ReplayCounter:
    __slots__ = ("count",)

    def __init__(self):
        self.count = 0


def _graphed(fwd_graph, bwd_graph, static_inputs, static_outputs, static_grad_outputs,
             static_grad_inputs):
    """The autograd.Function that replays one callable's graphs."""
    single = len(static_outputs) == 1
    replays = _ReplayCounter()

    class Graphed(autograd.Function):
        @staticmethod
        def forward(ctx, *inputs):
            for dst, src in zip(static_inputs, inputs):
                if dst.data_ptr() != src.data_ptr():
                    dst.copy_(src)
            fwd_graph.replay()
            return tuple(o.detach() for o in static_outputs)

        @staticmethod
        def backward(ctx, *grads):
            needed = [g for o, g in zip(static_outputs, grads) if o.requires_grad]
            for dst, g in zip(static_grad_outputs, needed):
                if g is None:
                    dst.zero_()
                elif dst.data_ptr() != g.data_ptr():
                    dst.copy_(g)
            bwd_graph.replay()
            return tuple(g.detach() if g is not None else None for g in static_grad_inputs)

    def fn(*args):
        out = Graphed.apply(*args)
        replays.count += 1
        out = tuple(_mark(o, replays) for o in out)
        return out[0] if single else out
    return fn


def _mark(t, replays):
    r = t.as_subclass(_ReplayOutput)
    r._replay = (replays, replays.count)
    return r
