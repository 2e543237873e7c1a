"""The autograd graph: :class:`Node`, :class:`AccumulateGrad`, saved tensors and hooks.

A ``Node`` is one recorded backward function. ``_next`` holds its edges, ``(node, input_nr)`` per
differentiable forward input (``None`` where that input needs no gradient); Python shows them as
``next_functions``. Nodes get a per-thread ``sequence_nr`` so that the engine runs the most
recently recorded ready node first, as PyTorch's does. A leaf that requires grad is reached
through its ``AccumulateGrad`` node, which the leaf holds weakly (a fresh one is made when the
old one was collected), and which writes ``.grad``.

Saved tensors (:class:`SavedTensor`) record the version counter at save time; unpacking after an
in-place change, or after backward freed them, raises PyTorch's errors. ``saved_tensors_hooks``
(and ``save_on_cpu``) let user code pack and unpack them. ``register_multi_grad_hook`` watches
the gradients of several tensors within one backward pass. ``increment_version`` bumps version
counters for writes autograd cannot see.
"""
import collections
import itertools
import re
import threading
import weakref

from .._dispatch import tls as _tls
from .._dispatch.keys import DispatchKey as _DispatchKey, bit as _bit

__all__ = ["Node", "AccumulateGrad", "SavedTensor", "RemovableHandle", "get_gradient_edge",
           "GradientEdge", "saved_tensors_hooks", "save_on_cpu", "disable_saved_tensors_hooks",
           "register_multi_grad_hook", "increment_version"]

_state = _tls.state
_PYTHON_KEY = _bit(_DispatchKey.Python)
# PyTorch 2.13's messages name a node's forward op: MulBackward0 -> Mul, TransposeBackward1 ->
# Transpose1, MyFnBackward -> MyFn; other names (CopyBackwards) stay whole
_BACKWARD_SUFFIX = re.compile(r"Backward(?:0|(\d+))?$")


# [ember.cuda.streams' per-thread state] once the CUDA runtime has started, else empty
CUDA_STREAMS = []


class _SeqCounter(threading.local):
    def __init__(self):
        self.next = itertools.count()


_seq = _SeqCounter()
_handle_ids = itertools.count()


class RemovableHandle:
    """What ``register_hook`` returns: ``handle.remove()`` unregisters the hook."""

    def __init__(self, hooks_dict):
        self.hooks_dict_ref = weakref.ref(hooks_dict) if hooks_dict is not None else None
        self.id = next(_handle_ids)

    def remove(self):
        d = self.hooks_dict_ref() if self.hooks_dict_ref is not None else None
        if d is not None:
            d.pop(self.id, None)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()


# The hooks' dict: weakly referenceable (handles point at it weakly), and an OrderedDict as
# PyTorch's are, since Tensor._backward_hooks hands it out
_HookDict = collections.OrderedDict


def _add_hook(d, fn):
    h = RemovableHandle(d)
    d[h.id] = fn
    return h


class Node:
    """Base class of every backward function (generated ``XxxBackward0`` nodes, AccumulateGrad,
    custom Function nodes). Subclasses implement ``apply(grads) -> grads per next edge``."""

    _saved_names = ()
    # Per-node state starts as these class-level defaults (immutable values: assigning one makes
    # an instance attribute), so creating a node, once per recorded op, sets one attribute.
    _next = ()  # ((node or None, input_nr), ...)
    _edge_meta = ()  # per edge: (shape, dtype) of the forward input, for validation
    _out_meta = ()  # per forward output: (shape, dtype, device), to materialize zeros
    _pre_hooks = None
    _post_hooks = None
    _tensor_pre_hooks = None  # output_nr -> _HookDict of fn(grad)
    _retains_grad_hooks = None  # output_nr -> fn(grad)
    _metadata = None
    _released = False
    _anomaly_trace = None

    _stream = None  # the CUDA stream current when the node was recorded (None: the default)

    def __init__(self):
        self._seq_nr = next(_seq.next)
        if CUDA_STREAMS:
            # PyTorch runs a CUDA node's backward on the stream of its forward op
            st = CUDA_STREAMS[0]
            self._stream = st.streams.get(st.device)

    # -- Python API ------------------------------------------------------------------------------
    def name(self):
        return type(self).__name__

    @property
    def next_functions(self):
        return tuple((n, i) if n is not None else (None, 0) for n, i in self._next)

    @property
    def metadata(self):
        if self._metadata is None:
            self._metadata = {}
        return self._metadata

    @property
    def requires_grad(self):
        return True

    def register_hook(self, fn):
        """Post-hook ``fn(grad_inputs, grad_outputs)``; a non-None return replaces grad_inputs."""
        if self._post_hooks is None:
            self._post_hooks = _HookDict()
        return _add_hook(self._post_hooks, fn)

    def register_prehook(self, fn):
        """Pre-hook ``fn(grad_outputs)``; a non-None return replaces grad_outputs."""
        if self._pre_hooks is None:
            self._pre_hooks = _HookDict()
        return _add_hook(self._pre_hooks, fn)

    def _register_tensor_pre_hook(self, output_nr, fn):
        if self._tensor_pre_hooks is None:
            self._tensor_pre_hooks = {}
        d = self._tensor_pre_hooks.get(output_nr)
        if d is None:
            d = self._tensor_pre_hooks[output_nr] = _HookDict()
        return _add_hook(d, fn)

    def __call__(self, *grads):
        return self.apply(list(grads))

    def _sequence_nr(self):
        """The node's place in the order nodes were recorded in this thread (PyTorch's
        ``sequence_nr``): the backward runs the highest ready number first."""
        return self._seq_nr

    def _set_sequence_nr(self, n):
        self._seq_nr = n

    def __repr__(self):
        # the Python class's name, as PyTorch's: AccumulateGrad, not torch::autograd::...
        return f"<{self.name().rsplit('::', 1)[-1]} object at {hex(id(self))}>"

    # -- engine interface -----------------------------------------------------------------------
    def apply(self, grads):
        raise NotImplementedError

    def release_variables(self):
        self._released = True

    def _tensor_hooks_for(self, output_nr):
        """Tensor pre-hooks registered on this node's output ``output_nr`` (in order)."""
        if self._tensor_pre_hooks is None:
            return ()
        d = self._tensor_pre_hooks.get(output_nr)
        return tuple(d.values()) if d else ()


# ---------------------------------------------------------------------------------------------
# Per-tensor autograd state kept outside the hot slots (PyTorch's AutogradMeta extras).

class AutogradMeta:
    __slots__ = ("grad_accumulator", "leaf_hooks", "retains_grad", "post_acc_hooks", "name",
                 "view_version", "creation_meta", "views")

    def __init__(self):
        self.grad_accumulator = None  # weakref to AccumulateGrad
        self.leaf_hooks = None  # _HookDict of tensor hooks on a leaf
        self.retains_grad = False
        self.post_acc_hooks = None
        self.name = None
        # differentiable views (ember/autograd/views.py): the version counter when grad_fn was
        # set (a later in-place write to the base regenerates grad_fn), and how the view was
        # made when in-place writes to it are forbidden (PyTorch's CreationMeta)
        self.view_version = None
        self.creation_meta = None
        # of a base that requires no grad: {id: weak reference} of its views made with grad mode
        # on, which start requiring grad with it (views.py: note_view, views_follow_base)
        self.views = None


def autograd_meta(t):
    m = t._autograd
    if m is None:
        m = t._autograd = AutogradMeta()
    return m


def grad_accumulator(t):
    """The (unique, weakly held) AccumulateGrad node of a leaf that requires grad."""
    m = t._autograd
    if m is None:
        m = t._autograd = AutogradMeta()
    ref = m.grad_accumulator
    acc = ref() if ref is not None else None
    if acc is None:
        acc = AccumulateGrad(t)
        m.grad_accumulator = weakref.ref(acc)
    return acc


def gradient_edge(t):
    """The edge a gradient for tensor ``t`` flows into: (grad_fn, output_nr), the leaf's
    AccumulateGrad, or (None, 0) when it needs no gradient."""
    fn = t._grad_fn
    if fn is not None:
        m = t._autograd
        if m is not None and m.view_version is not None and m.view_version != t._vc[0]:
            from .views import regenerate_grad_fn
            fn = regenerate_grad_fn(t, m)
        return (fn, t._output_nr)
    if t._requires_grad:
        return (grad_accumulator(t), 0)
    return (None, 0)


def current_grad_fn(t):
    """``t.grad_fn``: for a view whose base was written in place since, the regenerated one."""
    return gradient_edge(t)[0] if t._grad_fn is not None else None


class GradientEdge(tuple):
    """``torch.autograd.graph.GradientEdge(node, output_nr)``."""

    def __new__(cls, node, output_nr):
        return super().__new__(cls, (node, output_nr))

    node = property(lambda self: self[0])
    output_nr = property(lambda self: self[1])


def get_gradient_edge(t):
    node, nr = gradient_edge(t)
    return GradientEdge(node, nr)


class AccumulateGrad(Node):
    """Sink node of a leaf: adds the incoming gradient into ``variable.grad`` following PyTorch's
    table (steal when possible, in-place ``+=`` without create_graph, new tensor with it)."""

    # PyTorch's Node(UINT64_MAX): runs as soon as it is ready, and takes no number from the
    # thread's sequence (the nodes recorded after it are numbered as in PyTorch)
    _seq_nr = 2 ** 64 - 1

    def __init__(self, variable):
        if CUDA_STREAMS:
            st = CUDA_STREAMS[0]
            self._stream = st.streams.get(st.device)
        self.variable = variable
        self._out_meta = ((variable._size, variable._dtype, variable._device),)

    def name(self):
        return "torch::autograd::AccumulateGrad"

    def _tensor_hooks_for(self, output_nr):
        m = self.variable._autograd
        if m is None or not m.leaf_hooks:
            return ()
        return tuple(m.leaf_hooks.values())

    def apply(self, grads):
        from . import engine  # engine imports this module: a true cycle
        new = grads[0]
        var = self.variable
        if new is None:
            return ()
        grads[0] = None  # so that accumulate_grad can tell whether anyone else holds it
        engine.accumulate_grad(var, new)
        m = var._autograd
        if m is not None and m.post_acc_hooks:
            for h in tuple(m.post_acc_hooks.values()):
                h(var)
        return ()


# ---------------------------------------------------------------------------------------------
# Saved tensors.

_FREED = ("Trying to backward through the graph a second time (or directly access saved tensors "
          "after they have already been freed). Saved intermediate values of the graph are freed "
          "when you call .backward() or autograd.grad(). Specify retain_graph=True if you need to "
          "backward through the graph a second time or if you need to access saved tensors after "
          "calling backward.")

_INFERENCE_SAVE = ("Inference tensors cannot be saved for backward. Please do not use Tensors "
                   "created in inference mode in computation tracked by autograd. To work around "
                   "this, you can make a clone to get a normal tensor and use it in autograd, or "
                   "use `torch.no_grad()` instead of `torch.inference_mode()`.")


class SavedTensor:
    """PyTorch's SavedVariable. An output of the node that saves it is stored without its
    grad_fn (the node would otherwise own itself in a cycle) and rebuilt on unpack.

    Under :class:`saved_tensors_hooks` the innermost pack hook replaces the tensor by whatever it
    returns (``packed``) and the matching unpack hook turns that back into a tensor when the
    backward needs it; the version check is then skipped, as in PyTorch (the hooks own the
    data)."""

    __slots__ = ("data", "version", "is_output", "output_nr", "grad_fn_name", "released",
                 "requires_grad", "packed", "unpack_hook")

    def __init__(self, t, is_output, node_name=None):
        if t._vc is None:
            raise RuntimeError(_INFERENCE_SAVE)
        self.version = t._vc[0]
        self.is_output = is_output
        self.output_nr = t._output_nr
        self.released = False
        self.requires_grad = t._requires_grad
        # an output's node, named for the message of a failed version check (the message names
        # an input's grad_fn at the time of the error, as PyTorch's SavedVariable does)
        self.grad_fn_name = node_name if is_output else None
        self.unpack_hook = None
        if _hooks.stack:
            self.data = None
            self._pack(t)
        elif is_output and _state.included & ~_state.excluded & _PYTHON_KEY:
            # PyTorch's shallow copy of a saved output goes through Python's detach while a
            # TorchDispatchMode is active (Python key included): the mode sees aten.detach
            from .._ops.overload import ops
            self.data = ops.aten.detach.default._call(t)
        elif is_output:
            self.data = _shallow(t)
        else:
            self.data = t

    def _pack(self, t):
        pack_hook, self.unpack_hook = _hooks.stack[-1]
        prev = _state.grad_enabled
        _state.grad_enabled = False  # PyTorch runs pack hooks with grad mode off
        try:
            self.packed = pack_hook(t)
        finally:
            _state.grad_enabled = prev
        if t._vc[0] != self.version:
            raise RuntimeError(
                "A saved tensor pack hook is modifying its input in place. Tensors provided as "
                "input to pack hook cannot be modified by in-place operations as this can lead "
                "to unexpected side-effects. Please open an issue if you need to perform "
                "in-place operations on the input to a pack hook.")

    def unpack(self, node=None):
        if self.released:
            raise RuntimeError(_FREED)
        if self.unpack_hook is not None:
            d = self.unpack_hook(self.packed)
            if not hasattr(d, "_keyset"):
                raise TypeError(f"Output of saved tensor unpack_hook expected to be a Tensor but "
                                f"got result of type {type(d).__name__}")
        else:
            d = self.data
            if d._vc[0] != self.version:
                raise RuntimeError(self._version_error(d))
        if not self.is_output:
            return d
        t = _shallow(d)
        if self.requires_grad and node is not None:
            t._grad_fn = node
            t._output_nr = self.output_nr
            t._requires_grad = True
        return t

    def _version_error(self, d):
        from . import anomaly_mode
        what = f"[{d.type()} [{', '.join(map(str, d._size))}]]"
        # an input's grad_fn as ``d.grad_fn`` reads now: a view whose base was written since
        # has its regenerated AsStridedBackward0 (or, of a multi-output view, raises)
        fn = None if self.is_output else current_grad_fn(d)
        creator = self.grad_fn_name if self.is_output else fn.name() if fn is not None else None
        # PyTorch 2.13 names the forward op: "output 0 of Sigmoid" for SigmoidBackward0
        name = _BACKWARD_SUFFIX.sub(r"\1", creator or "")
        out = f", which is output {self.output_nr} of {name}," if name else ""
        hint = ("Hint: the backtrace further above shows the operation that failed to compute its "
                "gradient. The variable in question was changed in there or anywhere later. Good "
                "luck!") if anomaly_mode.is_anomaly_enabled() else (
                "Hint: enable anomaly detection to find the operation that failed to compute its "
                "gradient, with torch.autograd.set_detect_anomaly(True, check_nan=False).")
        return (f"one of the variables needed for gradient computation has been modified by an "
                f"inplace operation: {what}{out} is at version {d._vc[0]}; expected version "
                f"{self.version} instead. {hint}")

    def release(self):
        self.released = True
        self.data = None
        if self.unpack_hook is not None:
            self.packed = None


from . import forward_ad as _fw  # noqa: E402


def _shallow(t):
    """A new Tensor object over the same storage, geometry and version counter, with no
    autograd history (what SavedVariable keeps for outputs)."""
    from .._tensor import Tensor, _alias, _rewrap
    s = _alias(t, t._size, t._stride, t._offset)
    s._base_ = t._base_
    if t._storage_ is None:  # a sparse tensor: the same parts (PyTorch shares the impl)
        s._sparse = t._sparse
    # forward AD: the copy shares the tangents (PyTorch's SavedVariable keeps fw_grad), also
    # those the kernel sets after saving, so double backward and jvp-of-vjp see them
    fw = getattr(t, "_fw_grad", None)
    if fw is None and _fw.visible:
        fw = t._fw_grad = {}
    if fw is not None:
        s._fw_grad = fw
    if type(t) is not Tensor:  # a subclass (FakeTensor, wrapper subclasses) stays one
        s = _rewrap(s, type(t))
        s.__dict__.update(t.__dict__)
    return s


# ---------------------------------------------------------------------------------------------
# Saved-tensor hooks (torch.autograd.graph.saved_tensors_hooks and friends).

class _SavedTensorsHooksState(threading.local):
    def __init__(self):
        self.stack = []  # (pack_hook, unpack_hook), innermost last
        self.disabled_error = None  # message while disable_saved_tensors_hooks is active


_hooks = _SavedTensorsHooksState()


class saved_tensors_hooks:
    """Context manager: tensors saved for backward inside it go through ``pack_hook(tensor) ->
    anything`` when saved and ``unpack_hook(anything) -> tensor`` when the backward needs them.
    Nested managers: the innermost pair applies. Thread-local, like PyTorch's."""

    def __init__(self, pack_hook, unpack_hook):
        self.pack_hook = pack_hook
        self.unpack_hook = unpack_hook

    def __enter__(self):
        if _hooks.disabled_error is not None:
            raise RuntimeError(_hooks.disabled_error)
        _hooks.stack.append((self.pack_hook, self.unpack_hook))
        return self

    def __exit__(self, *exc):
        _hooks.stack.pop()
        return False


class save_on_cpu(saved_tensors_hooks):
    """Saved tensors live on the CPU until the backward needs them, then go back to their
    device (``pin_memory``: pack into page-locked memory, so the copy back can be async)."""

    def __init__(self, pin_memory=False, device_type="cuda"):
        def pack_to_cpu(tensor):
            if not pin_memory:
                return (tensor.device, tensor.cpu())
            import ember
            packed = ember.empty(tuple(tensor.size()), dtype=tensor.dtype,
                                 pin_memory=ember.cuda.is_available())
            packed.copy_(tensor)
            return (tensor.device, packed)

        def unpack_from_cpu(packed):
            device, tensor = packed
            return tensor.to(device, non_blocking=pin_memory)

        super().__init__(pack_to_cpu, unpack_from_cpu)


class disable_saved_tensors_hooks:
    """Inside it, entering :class:`saved_tensors_hooks` raises ``RuntimeError(error_message)``
    (for features that cannot work with them)."""

    def __init__(self, error_message):
        self.error_message = error_message

    def __enter__(self):
        self.prev = _hooks.disabled_error
        _hooks.disabled_error = self.error_message
        return self

    def __exit__(self, *exc):
        _hooks.disabled_error = self.prev
        return False


# ---------------------------------------------------------------------------------------------
# Tensor-level hooks (Tensor.register_hook, retain_grad, register_post_accumulate_grad_hook).

def register_tensor_hook(t, hook):
    """On a non-leaf: a tensor pre-hook on its grad_fn's output slot; on a leaf: a hook its
    AccumulateGrad runs before accumulating (kept on the tensor, as PyTorch keeps it)."""
    if not t._requires_grad:
        raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
    if t._grad_fn is not None:
        return t._grad_fn._register_tensor_pre_hook(t._output_nr, hook)
    m = autograd_meta(t)
    if m.leaf_hooks is None:
        m.leaf_hooks = _HookDict()
    return _add_hook(m.leaf_hooks, hook)


def tensor_hooks(t):
    """The hooks ``register_hook`` gave ``t`` (PyTorch's ``Tensor._backward_hooks``), by handle
    id; None when it never had one."""
    if t._grad_fn is not None:
        hooks = t._grad_fn._tensor_pre_hooks
        return None if hooks is None else hooks.get(t._output_nr)
    return None if t._autograd is None else t._autograd.leaf_hooks


def register_post_accumulate_grad_hook(t, hook):
    if not t._requires_grad:
        raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
    if t._grad_fn is not None:
        raise RuntimeError("post accumulate grad hooks cannot be registered on non-leaf tensors")
    m = autograd_meta(t)
    if m.post_acc_hooks is None:
        m.post_acc_hooks = _HookDict()
    return _add_hook(m.post_acc_hooks, hook)


def retain_grad(t):
    if not t._requires_grad:
        raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
    if t._grad_fn is None:
        return  # leaves always keep .grad
    m = autograd_meta(t)
    if m.retains_grad:
        return
    m.retains_grad = True
    ref = weakref.ref(t)

    def retains_grad_hook(grad):
        var = ref()
        if var is None:
            return
        var._grad = grad.clone() if var._grad is None else var._grad + grad

    fn = t._grad_fn
    if fn._retains_grad_hooks is None:
        fn._retains_grad_hooks = {}
    fn._retains_grad_hooks[t._output_nr] = retains_grad_hook


def move_retains_grad_hook(t, old_fn, old_nr):
    """``t``'s history was rebased (an in-place op, or a view's grad_fn regenerated after one)
    from output ``old_nr`` of ``old_fn``: its retains_grad hook moves to the new grad_fn, so
    ``.grad`` is the gradient of its current value (PyTorch's
    update_tensor_hooks_on_new_gradfn). Other hooks stay with the version they were registered
    on."""
    if old_fn is None or t._autograd is None or not t._autograd.retains_grad:
        return
    hook = old_fn._retains_grad_hooks.pop(old_nr, None) if old_fn._retains_grad_hooks else None
    if hook is None:
        return
    fn = t._grad_fn
    if fn._retains_grad_hooks is None:
        fn._retains_grad_hooks = {}
    fn._retains_grad_hooks[t._output_nr] = hook


def increment_version(tensor):
    """Mark ``tensor`` (or each tensor of an iterable) as modified in place, for writes autograd
    cannot see (a kernel writing through ``data_ptr``): tensors saved for backward before then
    refuse to unpack. Inference tensors have no version counter and are skipped."""
    if hasattr(tensor, "_keyset"):
        tensor = (tensor,)
    try:
        tensors = iter(tensor)
    except TypeError:
        raise RuntimeError("increment_version expect a Iterable[Tensor] as input") from None
    for t in tensors:
        if not hasattr(t, "_keyset"):
            raise RuntimeError("increment_version expects each element of the iterable to be a "
                               "tensor")
        if t._vc is not None:
            t._vc[0] += 1


# ---------------------------------------------------------------------------------------------
# Hooks over several tensors.

class _MultiHandle:
    """Removes every per-tensor hook of one ``register_multi_grad_hook`` call."""

    def __init__(self, handles):
        self.handles = handles

    def remove(self):
        for h in self.handles:
            h.remove()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()


def _grad_fn_of(t):
    return t._grad_fn if t._grad_fn is not None else grad_accumulator(t)


def register_multi_grad_hook(tensors, fn, *, mode="all"):
    """``mode="all"``: ``fn(grads)`` runs once per backward pass, after the gradients of every
    one of ``tensors`` that this pass reaches are computed (``None`` for the others).
    ``mode="any"``: ``fn(grad)`` runs once per pass, on the first of their gradients."""
    from . import engine  # engine imports this module: a true cycle
    supported_modes = ("all", "any")
    if mode not in supported_modes:
        raise ValueError(f"Expects mode to be one of {supported_modes} but got {mode}")
    tensors = tuple(tensors)
    lock = threading.Lock()
    if mode == "any":
        ran = set()  # ids of the graph tasks whose hook already ran

        def wrapped_fn(grad):
            task = engine.current_graph_task_id()
            with lock:
                if task in ran:
                    return
                ran.add(task)
            fn(grad)
        return _MultiHandle(tuple(t.register_hook(wrapped_fn) for t in tensors
                                  if t.requires_grad))

    count = {}  # graph task id -> gradients seen so far
    buffer = {}  # graph task id -> the gradients, by tensor
    expected = {}  # graph task id -> how many of the tensors this pass reaches
    grad_fns = [_grad_fn_of(t) if t.requires_grad else None for t in tensors]

    def inner_hook(idx):
        def hook(grad):
            task = engine.current_graph_task_id()
            with lock:
                if task not in buffer:
                    buffer[task] = [None] * len(tensors)
                    expected[task] = sum(engine.will_engine_execute_node(g) for g in grad_fns
                                         if g is not None)
                buffer[task][idx] = grad
                seen = count[task] = count.get(task, 0) + 1
                if seen < expected[task]:
                    return
                grads = buffer.pop(task)
                del count[task], expected[task]
            fn(grads)
        return hook

    return _MultiHandle(tuple(t.register_hook(inner_hook(i)) for i, t in enumerate(tensors)
                              if t.requires_grad))
