"""Activation checkpointing: run part of a model without keeping its intermediate activations
and recompute them when the backward pass needs them (``torch.utils.checkpoint``).

Two variants, as in PyTorch:

* **reentrant** (``use_reentrant=True``): an ``autograd.Function`` runs the function under
  ``no_grad`` (nothing inside is recorded, so nothing is saved) and keeps only its inputs; its
  backward reruns the function with grad enabled and backpropagates through that fresh graph.
* **non-reentrant** (``use_reentrant=False``): the function runs normally, but under
  ``saved_tensors_hooks`` whose pack hook replaces every tensor autograd wants to save by a
  small ``_Holder``. The first unpack in a backward pass reruns the function under a second pair
  of hooks that hands each recomputed tensor to the holder waiting for it (stopping early once
  all are found); each is dropped as soon as it has been unpacked. ``determinism_check``
  compares the recomputed tensors' metadata with the originals.

Selective checkpointing (``context_fn=functools.partial(create_selective_checkpoint_contexts,
policy)``) keeps the outputs of the ops a policy picks and recomputes only the others.

With ``preserve_rng_state`` the CPU generator's state at forward time is restored for the
recomputation, and so are the generators of the devices the inputs are on (when that device's
runtime had started: nothing is started for it), so dropout masks match.
"""
import contextlib
import enum
import uuid
import warnings
import weakref
from collections import defaultdict

import ember as torch
from ember.autograd import engine as _engine
from ember._ops.overload import OpOverload, OpOverloadPacket
from ember.autograd.graph import SavedTensor, saved_tensors_hooks
from ember.utils._pytree import tree_map

__all__ = ["checkpoint", "checkpoint_sequential", "CheckpointError", "CheckpointFunction",
           "check_backward_validity", "detach_variable", "noop_context_fn",
           "set_checkpoint_early_stop", "set_checkpoint_debug_enabled", "CheckpointPolicy",
           "SelectiveCheckpointContext", "create_selective_checkpoint_contexts",
           "SAC_IGNORED_OPS", "get_device_states", "set_device_states"]

_DEFAULT_DETERMINISM_MODE = "default"
_checkpoint_debug_enabled = None
_enable_checkpoint_early_stop = None

# PyTorch's text, verbatim (its compile advice included) so messages match.
_debug_tip_msg = """
Tip: To see a more detailed error message, either pass `debug=True` to
`torch.utils.checkpoint.checkpoint(...)` or wrap the code block
with `with torch.utils.checkpoint.set_checkpoint_debug_enabled(True):` to
enable checkpoint‑debug mode globally.

If this error occurs under torch.compile with automatic_dynamic_shapes enabled,
it may be because the recomputation selected a different compiled graph than the
forward pass (e.g., a dynamic graph instead of the original static graph).
To fix this, either:
  - Use torch._dynamo.mark_dynamic() to explicitly mark varying dimensions as
    dynamic upfront, avoiding the static-to-dynamic transition.
  - Call torch._C._dynamo.eval_frame._set_lru_cache(False) to disable LRU cache
    reordering, which can change which graph is checked first between forward
    and recompute.
See https://github.com/pytorch/pytorch/issues/166926 for more details and
workaround examples.
"""


class CheckpointError(RuntimeError):
    pass


@contextlib.contextmanager
def set_checkpoint_debug_enabled(enabled):
    """Override every checkpoint's ``debug`` flag while active (``None``: leave it)."""
    global _checkpoint_debug_enabled
    prev, _checkpoint_debug_enabled = _checkpoint_debug_enabled, enabled
    try:
        yield
    finally:
        _checkpoint_debug_enabled = prev


@contextlib.contextmanager
def set_checkpoint_early_stop(enable):
    """Whether non-reentrant recomputation stops as soon as every needed tensor exists (read
    when the forward runs)."""
    global _enable_checkpoint_early_stop
    prev, _enable_checkpoint_early_stop = _enable_checkpoint_early_stop, enable
    try:
        yield
    finally:
        _enable_checkpoint_early_stop = prev


def detach_variable(inputs):
    if isinstance(inputs, tuple):
        out = []
        for inp in inputs:
            if not isinstance(inp, torch.Tensor):
                out.append(inp)
                continue
            x = inp.detach()
            x.requires_grad = inp.requires_grad
            out.append(x)
        return tuple(out)
    raise RuntimeError("Only tuple of tensors is supported. Got Unsupported input type: "
                       f"{type(inputs).__name__}")


def check_backward_validity(inputs):
    if not any(inp.requires_grad for inp in inputs if isinstance(inp, torch.Tensor)):
        warnings.warn("None of the inputs have requires_grad=True. Gradients will be None",
                      stacklevel=2)


def _infer_device_type(*args):
    types = {a.device.type for a in args if isinstance(a, torch.Tensor)} - {"cpu"}
    return types.pop() if types else "cpu"


def _device_module(device_type):
    return getattr(torch, device_type, None)


def _device_started(device_type):
    """Whether the device's runtime has started (its generators exist); the CPU's has not."""
    return device_type != "cpu" and getattr(_device_module(device_type), "_initialized", False)


def get_device_states(*args):
    """(device ids, their generators' states) for the devices the tensors in ``args`` are on."""
    ids = []

    def add(arg):
        if isinstance(arg, torch.Tensor) and arg.device.type not in ("cpu", "meta"):
            ids.append(arg.get_device())
    tree_map(add, args)
    module = _device_module(_infer_device_type(*args))
    states = []
    for i in ids:
        with module.device(i):
            states.append(module.get_rng_state())
    return ids, states


def set_device_states(devices, states, *, device_type=None):
    """Restore the generator state of each device of ``devices``."""
    if device_type is None:
        device_type = "cuda"
    if device_type == "meta":
        return
    module = _device_module(device_type)
    for d, state in zip(devices, states):
        with module.device(d):
            module.set_rng_state(state)


def _rng_device_type(device_type):
    """fork_rng's device type: the inputs' device, "cuda" for CPU inputs (devices=[] then)."""
    return "cuda" if device_type == "cpu" else device_type


def _get_autocast_kwargs(device_type):
    def kwargs(dev):
        return {"enabled": torch.is_autocast_enabled(dev),
                "dtype": torch.get_autocast_dtype(dev),
                "cache_enabled": torch.is_autocast_cache_enabled()}
    device_kwargs = kwargs(device_type) if torch.amp.is_autocast_available(device_type) else None
    return device_kwargs, kwargs("cpu")


def _autocast_contexts(device_type, device_kwargs, cpu_kwargs):
    """The autocast state of the forward, re-entered for the recomputation."""
    stack = contextlib.ExitStack()
    if device_kwargs is not None and device_type != "cpu":
        stack.enter_context(torch.amp.autocast(device_type=device_type, **device_kwargs))
    stack.enter_context(torch.amp.autocast("cpu", **cpu_kwargs))
    return stack


def _is_checkpoint_valid():
    """Reentrant checkpointing runs a nested ``backward`` that accumulates into ``.grad``; that
    cannot serve ``autograd.grad`` or ``backward(inputs=...)`` (a pass with capture targets)."""
    tasks = _engine._tasks.stack
    return not tasks or tasks[-1].needed is None


class CheckpointFunction(torch.autograd.Function):
    """The reentrant variant (see the module docstring)."""

    @staticmethod
    def forward(ctx, run_function, preserve_rng_state, *args):
        check_backward_validity(args)
        ctx.run_function = run_function
        ctx.preserve_rng_state = preserve_rng_state
        ctx.device_type = _infer_device_type(*args)
        ctx.device_autocast_kwargs, ctx.cpu_autocast_kwargs = _get_autocast_kwargs(
            ctx.device_type)
        if preserve_rng_state:
            ctx.fwd_cpu_state = torch.get_rng_state()
            ctx.had_device_in_fwd = _device_started(ctx.device_type)
            if ctx.had_device_in_fwd:
                ctx.fwd_devices, ctx.fwd_device_states = get_device_states(*args)
        # Tensors go through save_for_backward (version-checked); other arguments are kept.
        ctx.inputs = []
        ctx.tensor_indices = []
        tensor_inputs = []
        for i, arg in enumerate(args):
            if torch.is_tensor(arg):
                tensor_inputs.append(arg)
                ctx.tensor_indices.append(i)
                ctx.inputs.append(None)
            else:
                ctx.inputs.append(arg)
        ctx.save_for_backward(*tensor_inputs)
        with torch.no_grad():
            outputs = run_function(*args)
        return outputs

    @staticmethod
    def backward(ctx, *args):
        if not _is_checkpoint_valid():
            raise RuntimeError(
                "When use_reentrant=True, torch.utils.checkpoint is incompatible with .grad() or "
                "passing an `inputs` parameter to .backward(). To resolve this error, you can "
                "either set use_reentrant=False, or call .backward() without passing the "
                "`inputs` argument.")
        inputs = list(ctx.inputs)
        for i, idx in enumerate(ctx.tensor_indices):
            inputs[idx] = ctx.saved_tensors[i]
        rng_devices = ctx.fwd_devices if ctx.preserve_rng_state and ctx.had_device_in_fwd else []
        with torch.random.fork_rng(devices=rng_devices, enabled=ctx.preserve_rng_state,
                                   device_type=_rng_device_type(ctx.device_type)):
            if ctx.preserve_rng_state:
                torch.set_rng_state(ctx.fwd_cpu_state)
                if ctx.had_device_in_fwd:
                    set_device_states(ctx.fwd_devices, ctx.fwd_device_states,
                                      device_type=ctx.device_type)
            detached_inputs = detach_variable(tuple(inputs))
            with torch.enable_grad(), _autocast_contexts(ctx.device_type,
                                                         ctx.device_autocast_kwargs,
                                                         ctx.cpu_autocast_kwargs):
                outputs = ctx.run_function(*detached_inputs)
        if isinstance(outputs, torch.Tensor):
            outputs = (outputs,)
        outputs_with_grad, args_with_grad = [], []
        for i in range(len(outputs)):
            if torch.is_tensor(outputs[i]) and outputs[i].requires_grad:
                outputs_with_grad.append(outputs[i])
                args_with_grad.append(args[i])
        if len(outputs_with_grad) == 0:
            raise RuntimeError("none of output has requires_grad=True, this checkpoint() is not "
                               "necessary")
        torch.autograd.backward(outputs_with_grad, args_with_grad)
        grads = tuple(inp.grad if isinstance(inp, torch.Tensor) else None
                      for inp in detached_inputs)
        return (None, None) + grads


def noop_context_fn():
    return contextlib.nullcontext(), contextlib.nullcontext()


def checkpoint(function, *args, use_reentrant=None, context_fn=noop_context_fn,
               determinism_check=_DEFAULT_DETERMINISM_MODE, debug=False, early_stop=True,
               **kwargs):
    """Run ``function(*args, **kwargs)`` without keeping its activations; they are recomputed
    in the backward pass. ``use_reentrant`` picks the variant (``None`` warns and means
    ``True``, as in PyTorch 2.13); ``preserve_rng_state=True`` (default) replays the forward's
    random numbers; ``determinism_check="default"`` compares recomputed tensors' shape, dtype
    and device with the originals (``"none"`` skips it); ``context_fn`` returns the two context
    managers the forward and the recomputation run under (non-reentrant only)."""
    if use_reentrant is None:
        warnings.warn(
            "torch.utils.checkpoint: the use_reentrant parameter should be passed explicitly. "
            "Starting in PyTorch 2.9, calling checkpoint without use_reentrant will raise an "
            "exception. use_reentrant=False is recommended, but if you need to preserve the "
            "current default behavior, you can pass use_reentrant=True. Refer to docs for more "
            "details on the differences between the two variants.", stacklevel=2)
        use_reentrant = True
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs and use_reentrant:
        raise ValueError("Unexpected keyword arguments: " + ",".join(arg for arg in kwargs))
    if use_reentrant:
        if context_fn is not noop_context_fn or debug is not False:
            raise ValueError("Passing `context_fn` or `debug` is only supported when "
                             "use_reentrant=False.")
        return CheckpointFunction.apply(function, preserve, *args)
    gen = _checkpoint_without_reentrant_generator(function, preserve, context_fn,
                                                  determinism_check, debug, early_stop, *args,
                                                  **kwargs)
    next(gen)
    try:
        ret = function(*args, **kwargs)
    except BaseException as e:
        try:
            gen.throw(e)
        except StopIteration as stop:
            raise RuntimeError(
                "torch.utils.checkpoint: the forward context provided by context_fn suppressed "
                "an exception raised during the checkpointed forward. This is not supported "
                "because checkpoint cannot return a value for a failed forward.") from stop
        raise
    try:
        next(gen)
    except StopIteration:
        return ret
    raise AssertionError("torch.utils.checkpoint: expected context_fn generator to yield "
                         "exactly twice, but it yielded more than twice.")


def checkpoint_sequential(functions, segments, input, use_reentrant=None, **kwargs):
    """Split a sequence of modules/functions (or an ``nn.Sequential``) into ``segments``
    chunks and checkpoint every chunk but the last, which runs normally."""
    if use_reentrant is None:
        warnings.warn(
            "torch.utils.checkpoint.checkpoint_sequential: the use_reentrant parameter should "
            "be passed explicitly. In version 2.9 we will raise an exception if use_reentrant "
            "is not passed. use_reentrant=False is recommended, but if you need to preserve the "
            "current default behavior, you can pass use_reentrant=True. Refer to docs for more "
            "details on the differences between the two variants.", stacklevel=2)
        use_reentrant = True
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs:
        raise ValueError("Unexpected keyword arguments: " + ",".join(arg for arg in kwargs))

    def run_function(start, end, functions):
        def forward(input):
            for j in range(start, end + 1):
                input = functions[j](input)
            return input
        return forward

    if isinstance(functions, torch.nn.Sequential):
        functions = list(functions.children())
    segment_size = len(functions) // segments
    end = -1
    for start in range(0, segment_size * (segments - 1), segment_size):
        end = start + segment_size - 1
        input = checkpoint(run_function(start, end, functions), input,
                           use_reentrant=use_reentrant, preserve_rng_state=preserve)
    return run_function(end + 1, len(functions) - 1, functions)(input)


# ---------------------------------------------------------------------------------------------
# Non-reentrant checkpointing.

def _internal_assert(cond):
    if not cond:
        raise AssertionError("Something went unexpectedly wrong in activation checkpoint. "
                             "Please report this bug by filing an issue to PyTorch.")


class _Handle:
    """Key of one recomputed tensor; dropping it frees the tensor (weak-keyed dict)."""


class _Holder:
    """What autograd saves in place of a tensor: per backward pass, the handle of its
    recomputed value."""

    def __init__(self):
        self.handles = {}


class _StopRecomputationError(Exception):
    pass


def _default_meta_extractor(x):
    return {"shape": x.shape, "dtype": x.dtype, "device": x.device}


_allowed_determinism_checks_to_fns = {
    _DEFAULT_DETERMINISM_MODE: _default_meta_extractor,
    "none": lambda _: None,
}


class _CheckpointFrame:
    """One checkpointed call: its saved inputs, one weak holder per tensor autograd saved, and
    per backward pass (graph task id) the recomputed tensors."""

    def __init__(self, recompute_fn, early_stop, unpack_error_cb, metadata_fn):
        self.recompute_fn = recompute_fn
        self.saved_args = []
        self.weak_holders = []
        # Weak keys: in a partial backward the entries go when their holder does.
        self.recomputed = defaultdict(weakref.WeakKeyDictionary)
        self.recomp_counter = defaultdict(int)
        self.is_recomputed = defaultdict(bool)
        self.early_stop = early_stop
        self.metadata_fn = metadata_fn
        self.unpack_error_cb = unpack_error_cb
        self.x_metadatas = []
        self.forward_completed = False
        self.ignore_saved_mismatch = False

    def save_inputs(self, *args):
        # SavedTensor gives the inputs PyTorch's in-place modification check.
        self.saved_args = [SavedTensor(arg, is_output=False) if isinstance(arg, torch.Tensor)
                           else arg for arg in args]

    def get_inputs(self):
        return [arg.unpack() if isinstance(arg, SavedTensor) else arg for arg in self.saved_args]

    def check_recomputed_tensors_match(self, gid):
        if self.ignore_saved_mismatch:
            # A nested backward inside the forward made the counts meaningless.
            return
        if not len(self.weak_holders) == self.recomp_counter[gid]:
            raise CheckpointError(
                "torch.utils.checkpoint: A different number of tensors was saved during the "
                "original forward and recomputation.\n"
                f"Number of tensors saved during forward: {len(self.weak_holders)}\n"
                f"Number of tensors saved during recomputation: {self.recomp_counter[gid]}.\n"
                f"{_debug_tip_msg}")
        nb_meta_different = []
        for idx, weak_holder in enumerate(self.weak_holders):
            holder = weak_holder()
            if holder is None:
                continue
            _internal_assert(gid in holder.handles)
            _internal_assert(holder.handles[gid] is not None)
            _internal_assert(holder.handles[gid] in self.recomputed[gid])
            x_meta = self.x_metadatas[idx]
            recomputed_x = self.recomputed[gid][holder.handles[gid]]
            if x_meta != self.metadata_fn(recomputed_x):
                nb_meta_different.append((idx, x_meta, self.metadata_fn(recomputed_x)))
        if nb_meta_different:
            mismatched_tensors = ""
            for idx, x_meta, recomputed_meta in nb_meta_different:
                mismatched_tensors += (f"tensor at position {idx}:\nsaved metadata: {x_meta}\n"
                                       f"recomputed metadata: {recomputed_meta}\n")
            raise CheckpointError(
                "torch.utils.checkpoint: Recomputed values for the following tensors have "
                f"different metadata than during the forward pass.\n{mismatched_tensors}.\n"
                f"{_debug_tip_msg}")


class _recomputation_hook(saved_tensors_hooks):
    """Active while recomputing: the i-th saved tensor goes to the i-th holder."""

    def __init__(self, target_frame_ref, gid):
        def pack_hook(x):
            x = x.detach() if x.requires_grad else x
            target_frame = target_frame_ref()
            _internal_assert(target_frame is not None)
            recomp_idx = target_frame.recomp_counter[gid]
            target_frame.recomp_counter[gid] += 1
            if recomp_idx >= len(target_frame.weak_holders):
                _internal_assert(not target_frame.early_stop)
                if not target_frame.forward_completed:
                    # Backward inside the forward: saves can legitimately differ.
                    target_frame.ignore_saved_mismatch = True
                    return x
                raise CheckpointError(
                    "torch.utils.checkpoint: trying to save more tensors during recomputation "
                    f"than during the original forward pass.\n{_debug_tip_msg}")
            holder = target_frame.weak_holders[recomp_idx]()
            # A holder already gone belongs to a part of the graph backward has freed.
            if holder is not None:
                _internal_assert(holder.handles.get(gid, None) is None)
                holder.handles[gid] = _Handle()
                target_frame.recomputed[gid][holder.handles[gid]] = x
            if (target_frame.early_stop
                    and target_frame.recomp_counter[gid] == len(target_frame.weak_holders)):
                raise _StopRecomputationError
            return x

        super().__init__(pack_hook, lambda x: x)


class _checkpoint_hook(saved_tensors_hooks):
    """Active during the checkpointed forward: save a holder instead of each tensor."""

    def __init__(self, frame):
        def pack_hook(x):
            holder = _Holder()
            frame.weak_holders.append(weakref.ref(holder))
            if frame.metadata_fn is not None:
                with torch.no_grad():
                    frame.x_metadatas.append(frame.metadata_fn(x))
            return holder

        def unpack_hook(holder):
            gid = _engine.current_graph_task_id()
            if gid == -1:
                # Unpacked outside a backward pass (e.g. ctx.saved_tensors by hand).
                gid = int(uuid.uuid4())
            if not frame.is_recomputed[gid]:
                args = frame.get_inputs()
                try:
                    with _recomputation_hook(weakref.ref(frame), gid), torch.enable_grad():
                        frame.recompute_fn(*args)
                except _StopRecomputationError:
                    pass
                frame.is_recomputed[gid] = True
                frame.check_recomputed_tensors_match(gid)
            _internal_assert(gid in holder.handles)
            if holder.handles[gid] is None:
                raise CheckpointError(
                    "torch.utils.checkpoint: Unpack is being triggered for a tensor that was "
                    "already unpacked once. If you are calling ctx.saved_tensors in backward, "
                    "make sure to do so only once. Otherwise please open an issue with details "
                    "on your use case.")
            _internal_assert(holder.handles[gid] in frame.recomputed[gid])
            ret = frame.recomputed[gid][holder.handles[gid]]
            holder.handles[gid] = None  # the handle dies, and with it the recomputed entry
            return ret

        if frame.unpack_error_cb is not None:
            def unpack_hook_with_error_cb(holder):
                try:
                    return unpack_hook(holder)
                except CheckpointError as e:
                    frame.unpack_error_cb(e)
            super().__init__(pack_hook, unpack_hook_with_error_cb)
        else:
            super().__init__(pack_hook, unpack_hook)


def _get_debug_context_and_cb():
    """``debug=True``: log the ops of the forward and of the recomputation, and show both logs
    when the recomputation does not match."""
    from ._python_dispatch import TorchDispatchMode

    class _OpLog(TorchDispatchMode):
        def __init__(self, log):
            super().__init__()
            self.log = log

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            self.log.append(str(func))
            return func(*args, **(kwargs or {}))

    fwd_log, recompute_log = [], []

    def unpack_error_cb(e):
        raise CheckpointError(
            "torch.utils.checkpoint: Recomputed values have different metadata than during "
            "forward pass.\n\nOperations executed during the original forward:\n\n"
            + "\n".join(fwd_log) + "\n\nOperations executed during recomputation:\n\n"
            + "\n".join(recompute_log) + f"\n\n{e}") from e

    def context_fn():
        recompute_log.clear()
        return _OpLog(fwd_log), _OpLog(recompute_log)

    return context_fn, unpack_error_cb


def _checkpoint_without_reentrant_generator(fn, preserve_rng_state=True,
                                            context_fn=noop_context_fn,
                                            determinism_check=_DEFAULT_DETERMINISM_MODE,
                                            debug=False, early_stop=True, *args, **kwargs):
    """Yields once around the checkpointed forward (run by the caller) with the packing hooks
    installed."""
    unpack_error_cb = None
    if _checkpoint_debug_enabled if _checkpoint_debug_enabled is not None else debug:
        if context_fn is not noop_context_fn:
            raise ValueError("debug=True is incompatible with non-default context_fn")
        context_fn, unpack_error_cb = _get_debug_context_and_cb()
    if determinism_check in _allowed_determinism_checks_to_fns:
        metadata_fn = _allowed_determinism_checks_to_fns[determinism_check]
    else:
        raise ValueError("determinism_check should be one of "
                         f"{list(_allowed_determinism_checks_to_fns.keys())}, but got "
                         f"{determinism_check}")
    device_type = _infer_device_type(*args)
    forward_context, recompute_context = context_fn()
    device_autocast_kwargs, cpu_autocast_kwargs = _get_autocast_kwargs(device_type)
    had_device_in_fwd = False
    if preserve_rng_state:
        fwd_cpu_state = torch.get_rng_state()
        had_device_in_fwd = _device_started(device_type)
        if had_device_in_fwd:
            fwd_devices, fwd_device_states = get_device_states(*args)

    def recompute_fn(*inputs):
        rng_devices = fwd_devices if preserve_rng_state and had_device_in_fwd else []
        with torch.random.fork_rng(devices=rng_devices, enabled=preserve_rng_state,
                                   device_type=_rng_device_type(device_type)):
            if preserve_rng_state:
                torch.set_rng_state(fwd_cpu_state)
                if had_device_in_fwd:
                    set_device_states(fwd_devices, fwd_device_states, device_type=device_type)
            with _autocast_contexts(device_type, device_autocast_kwargs, cpu_autocast_kwargs), \
                    recompute_context:
                fn(*inputs, **kwargs)

    new_frame = _CheckpointFrame(
        recompute_fn,
        _enable_checkpoint_early_stop if _enable_checkpoint_early_stop is not None
        else early_stop, unpack_error_cb, metadata_fn)
    if not torch.is_grad_enabled():
        # Nothing will be saved, so there is nothing to recompute.
        yield
        return
    new_frame.save_inputs(*args)
    forward_context_suppressed_exc = False
    with _checkpoint_hook(new_frame), forward_context:
        try:
            yield
        except BaseException:
            forward_context_suppressed_exc = True
            raise
    if forward_context_suppressed_exc:
        raise RuntimeError(
            "torch.utils.checkpoint: the forward context provided by context_fn suppressed an "
            "exception raised during the checkpointed forward. This is not supported because "
            "checkpoint cannot return a value for a failed forward.")
    new_frame.forward_completed = True


# ---- selective activation checkpointing ---------------------------------------------------
#
# A policy decides op by op, in the forward, whether an op's output is saved (kept alive in a
# side storage) or recomputed. Both halves are TorchDispatchModes, so they see aten ops below
# autograd: the forward's caching mode runs each op and stores its (detached) output under
# (op, n-th call of that op) when the policy says save; the recomputation's cached mode answers
# those same calls from the storage instead of running them, and runs the rest. Autograd,
# above both, records the recomputed graph as usual.

class CheckpointPolicy(enum.Enum):
    """What selective checkpointing does with one op's output: ``{MUST,PREFER}_SAVE`` keeps it
    from the forward, ``{MUST,PREFER}_RECOMPUTE`` reruns the op in the backward pass.
    (``MUST_*`` tells compilers not to override the choice; eagerly both act the same.) The
    CPU-offload policies exist for a compiler's use; eagerly they save, as in PyTorch."""
    MUST_SAVE = 0
    PREFER_SAVE = 1
    MUST_RECOMPUTE = 2
    PREFER_RECOMPUTE = 3
    MUST_CPU_OFFLOAD = 4
    PREFER_CPU_OFFLOAD = 5


def _policy_from_bool(b):
    return CheckpointPolicy.MUST_SAVE if b else CheckpointPolicy.PREFER_RECOMPUTE


def _ignored_ops():
    """Ops the selective-checkpoint modes pass through without counting: detach (the modes'
    own) and the tensor-metadata queries PyTorch ignores, those of them ember has."""
    aten = torch.ops.aten
    names = [("detach", "default"), ("is_contiguous", "default"),
             ("is_contiguous", "memory_format"), ("is_strides_like_format", "default"),
             ("is_non_overlapping_and_dense", "default"), ("size", "default"),
             ("sym_size", "default"), ("stride", "default"), ("sym_stride", "default"),
             ("storage_offset", "default"), ("sym_storage_offset", "default"),
             ("numel", "default"), ("sym_numel", "default"), ("dim", "default")]
    found = set()
    for packet, overload in names:
        try:
            found.add(getattr(getattr(aten, packet), overload))
        except (AttributeError, RuntimeError):
            continue  # not an ember op: it can never reach the modes
    return found


SAC_IGNORED_OPS = _ignored_ops()


class SelectiveCheckpointContext:
    """What a policy function is told about the call it decides on: ``op_output`` (the op's
    result) and ``is_recompute`` (always ``False``: policies run in the forward only; the
    recomputation replays their decisions by call index)."""

    def __init__(self, *, is_recompute, op_output=None):
        self.is_recompute = is_recompute
        self.op_output = op_output


class _VersionWrapper:
    """A cached value with its version counter at caching time: reading it back after an
    in-place change is an error unless ``allow_cache_entry_mutation``."""

    def __init__(self, val):
        self.val = val
        self.version = val._version if isinstance(val, torch.Tensor) else None

    def get_val(self, allow_cache_entry_mutation):
        if self.version is not None and not allow_cache_entry_mutation:
            if self.val._version != self.version:
                raise RuntimeError("Tensor cached during selective activation checkpoint has "
                                   "been mutated")
        return self.val


def _detach_helper(x):
    # detached: the cached value must not keep the forward's graph alive (reference cycles),
    # and autograd must see a fresh tensor when it is handed back during recomputation
    return x.detach() if isinstance(x, torch.Tensor) else x


_RECOMPUTE = object()
_CONSUMED = object()

_SAC_MISMATCH_MSG = ("This can happen if the operations in the checkpointed region are "
                     "nondeterministic or depend on global state that changed between "
                     "forward and backward.")


def _dispatch_mode_base():
    from ._python_dispatch import TorchDispatchMode
    return TorchDispatchMode


class _CachingTorchDispatchMode(_dispatch_mode_base()):
    """Forward half: run every op, ask the policy, store saved outputs by call index."""

    def __init__(self, policy_fn, storage):
        super().__init__()
        self.policy_fn = policy_fn
        self.storage = storage
        self.func_counter = defaultdict(int)

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = {} if kwargs is None else kwargs
        if func in SAC_IGNORED_OPS:
            return func(*args, **kwargs)
        out = func(*args, **kwargs)
        idx = self.func_counter[func]
        self.func_counter[func] += 1
        policy = self.policy_fn(SelectiveCheckpointContext(is_recompute=False, op_output=out),
                                func, *args, **kwargs)
        if isinstance(policy, bool):
            policy = _policy_from_bool(policy)
        if policy in (CheckpointPolicy.MUST_SAVE, CheckpointPolicy.PREFER_SAVE,
                      CheckpointPolicy.MUST_CPU_OFFLOAD, CheckpointPolicy.PREFER_CPU_OFFLOAD):
            self.storage[func][idx] = tree_map(lambda x: _VersionWrapper(_detach_helper(x)),
                                               out)
        else:
            self.storage[func][idx] = _RECOMPUTE
        return out


class _CachedTorchDispatchMode(_dispatch_mode_base()):
    """Recomputation half: answer saved calls from the storage (once each), rerun the rest."""

    def __init__(self, policy_fn, storage, allow_cache_entry_mutation=False):
        super().__init__()
        self.storage = storage
        self.allow_cache_entry_mutation = allow_cache_entry_mutation
        self.func_counter = defaultdict(int)

    def __enter__(self):
        self.func_counter.clear()  # every recomputation replays the calls from the first
        return super().__enter__()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = {} if kwargs is None else kwargs
        if func in SAC_IGNORED_OPS:
            return func(*args, **kwargs)
        idx = self.func_counter[func]
        self.func_counter[func] += 1
        func_storage = self.storage.get(func)
        if func_storage is None:
            raise RuntimeError(f"{func} encountered during backward but not found in storage. "
                               f"{_SAC_MISMATCH_MSG}")
        entry = func_storage.get(idx)
        if entry is None:
            raise RuntimeError(f"{func} invocation index {idx} encountered during backward but "
                               f"not found in storage. {_SAC_MISMATCH_MSG}")
        if entry is _CONSUMED:
            raise RuntimeError("Trying to backward an extra time. You are only allowed to "
                               "backward once on any region computed under selective "
                               "activation checkpoint.")
        if entry is _RECOMPUTE:
            return func(*args, **kwargs)
        func_storage[idx] = _CONSUMED  # handed over: the storage lets go of it
        return tree_map(lambda x: x.get_val(self.allow_cache_entry_mutation), entry)


def create_selective_checkpoint_contexts(policy_fn_or_list, allow_cache_entry_mutation=False):
    """The ``(forward, recomputation)`` context pair for ``checkpoint(..., context_fn=...)``
    that saves what a policy says: ``policy_fn(ctx, op, *args, **kwargs)`` returning a
    :class:`CheckpointPolicy` (or a bool: save / recompute), or a list of ``OpOverload``s to
    save (every other op is recomputed). Use with ``functools.partial``."""
    if isinstance(policy_fn_or_list, list):
        for op in policy_fn_or_list:
            if not isinstance(op, OpOverload):
                extra = ("Please update the OpOverloadPacket to a specific OpOverload."
                         "For example, if you have `torch.ops.aten.mm`, change it to "
                         "`torch.ops.aten.mm.default`.") \
                    if isinstance(op, OpOverloadPacket) else ""
                raise ValueError(f"Expected op in `op_list` to be an OpOverload but got: {op} "
                                 f"of type {type(op)}. {extra}")

        def policy_fn(ctx, op, *args, **kwargs):
            if op in policy_fn_or_list:
                return CheckpointPolicy.MUST_SAVE
            return CheckpointPolicy.PREFER_RECOMPUTE
    elif callable(policy_fn_or_list):
        policy_fn = policy_fn_or_list
    else:
        raise TypeError("policy_fn_or_list must be either a function or a list of ops.")
    storage = defaultdict(dict)
    return (_CachingTorchDispatchMode(policy_fn, storage),
            _CachedTorchDispatchMode(None, storage, allow_cache_entry_mutation))
