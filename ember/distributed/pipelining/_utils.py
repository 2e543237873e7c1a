"""The tensor metadata a pipeline stage keeps for what crosses its boundaries (PyTorch's
``torch.distributed.pipelining._utils``): shape, stride, dtype and requires_grad of the
activations it receives and sends and of their gradients, from which receive buffers are
allocated; the checks that tuples of stage arguments are tensors; and the inference mode all
stages agree on (static: every stage was given its shapes; dynamic: a first microbatch is run
to infer them)."""
import dataclasses
import enum
import warnings

import ember
from ember.distributed.tensor import DTensor
from ember.fx.node import map_aggregate
from ember.utils._pytree import tree_flatten


class PipeliningMetadataError(RuntimeError):
    """Raised on metadata mismatches during pipeline communication."""


@dataclasses.dataclass(frozen=True, slots=True)
class _TensorMeta:
    """What a receiver needs to allocate a tensor's buffer, and what validation compares."""

    shape: ember.Size
    stride: tuple
    dtype: ember.dtype
    requires_grad: bool

    @staticmethod
    def from_tensor(tensor):
        if isinstance(tensor, DTensor):
            # PyTorch sends a DTensor's local shard with its placements (_DTensorMeta); ember's
            # pipelining moves plain tensors only
            raise PipeliningMetadataError(
                "DTensor activations between pipeline stages are not supported by ember's "
                "pipelining: pass the local tensor (DTensor.to_local()) across stages.")
        return _TensorMeta(tensor.shape, tensor.stride(), tensor.dtype, tensor.requires_grad)

    def to_tensor(self, device):
        t = _make_tensor_from_meta(self, device)
        if t.is_floating_point():
            t.requires_grad_(self.requires_grad)
        return t

    def get_diff(self, other):
        if self == other:
            return []
        diffs = []
        if self.shape != other.shape:
            diffs.append(f"shape mismatch: {self.shape} vs {other.shape}")
        if self.stride != other.stride:
            diffs.append(f"stride mismatch: {self.stride} vs {other.stride}")
        if self.dtype != other.dtype:
            diffs.append(f"dtype mismatch: {self.dtype} vs {other.dtype}")
        # requires_grad is left out: the schedule's backward and grad mode decide it at run time
        return diffs


@dataclasses.dataclass(slots=True)
class _StageMeta:
    """A stage's metadata, filled in by the user's example tensors or by inference."""

    inputs: tuple | None = None
    outputs: tuple | None = None
    input_grads: tuple | None = None
    output_grads: tuple | None = None

    def is_complete_for_forward(self):
        return self.inputs is not None and self.outputs is not None


@dataclasses.dataclass(frozen=True, slots=True)
class _StageForwardMeta:
    """Sent from stage i to stage i+1 during inference: stage i's output metadata."""

    forward_metas: tuple


@dataclasses.dataclass(frozen=True, slots=True)
class _StageBackwardMeta:
    """Sent from stage i to stage i-1 during inference: stage i's input-gradient metadata."""

    backward_metas: tuple


def _make_tensor_from_meta(meta, device):
    return ember.empty_strided(meta.shape, meta.stride, dtype=meta.dtype, device=device)


def _derive_grad_metas(tensor_metas):
    """A gradient's metadata is its tensor's, without requires_grad; None where the tensor
    takes no gradient."""
    return tuple(None if not m.requires_grad
                 else _TensorMeta(m.shape, m.stride, m.dtype, False) for m in tensor_metas)


class InferenceMode(enum.Enum):
    """Whether the stages' metadata is given (STATIC) or inferred from a microbatch (DYNAMIC);
    all stages take the same mode, or their sends and receives would not pair."""

    STATIC = "static"
    DYNAMIC = "dynamic"

    @classmethod
    def needs_dynamic(cls, meta, stage_has_backward):
        # with plain tensors only, gradient metadata follows from the forward metadata
        return not meta.is_complete_for_forward()


def flatten_args(args):
    """The leaves of ``args``."""
    return tree_flatten(args)[0]


def extract_tensor_meta(tensor):
    return _TensorMeta.from_tensor(tensor)


def extract_tensor_metas(tensors, *, allow_none=False):
    if tensors is None:
        return None
    metas = tuple(extract_tensor_meta(t) if isinstance(t, ember.Tensor) else None
                  for t in tensors)
    if not allow_none and any(m is None for m in metas):
        raise PipeliningMetadataError("None values are not allowed in tensor metadata tuples. "
                                      "Use allow_none=True for optional values.")
    return metas


def validate_and_normalize_to_tuple(args, allow_none=False):
    """``args`` (a tensor, or a tuple or list of them) as a tuple; None stays None."""
    if args is None:
        return None
    if isinstance(args, ember.Tensor):
        return (args,)
    if isinstance(args, (tuple, list)):
        for i, arg in enumerate(args):
            if arg is None:
                if not allow_none:
                    raise PipeliningMetadataError(
                        f"Stage arg[{i}] is None. Stage args must be tensors. Use kwargs for "
                        f"optional values.")
                continue
            if not isinstance(arg, ember.Tensor):
                raise PipeliningMetadataError(
                    f"Stage arg[{i}] has type {type(arg).__name__}. All stage args must be "
                    f"tensors. Use kwargs for non-tensor inputs.")
        return tuple(args)
    raise PipeliningMetadataError("Stage args must be a tensor, tuple, or list of tensors, "
                                  f"got {type(args).__name__}.")


def _report(msg, raise_on_mismatch, warn_on_mismatch):
    if raise_on_mismatch:
        raise PipeliningMetadataError(msg)
    if warn_on_mismatch:
        warnings.warn(msg, UserWarning, stacklevel=3)


def validate_tensors_metadata(desc, expected, actual, *, raise_on_mismatch=True,
                              warn_on_mismatch=False):
    """The differences between ``expected`` metadata and ``actual`` tensors or metadata,
    element by element; raised (or warned) as PyTorch does."""
    if len(expected) != len(actual):
        msg = f"{desc}: expected {len(expected)} tensors, got {len(actual)}"
        _report(msg, raise_on_mismatch, warn_on_mismatch)
        return [msg]
    all_diffs = []
    for i, (exp, act) in enumerate(zip(expected, actual, strict=True)):
        if exp is None and act is None:
            continue
        if exp is None or act is None:
            msg = (f"{desc}[{i}]: expected {'None' if exp is None else 'metadata'}, "
                   f"got {'None' if act is None else 'metadata'}")
            _report(msg, raise_on_mismatch, warn_on_mismatch)
            all_diffs.append(msg)
            continue
        act = extract_tensor_meta(act) if isinstance(act, ember.Tensor) else act
        diffs = exp.get_diff(act)
        if diffs:
            _report(f"{desc}[{i}]: " + ("; ".join(diffs) if raise_on_mismatch else
                                        f"Metadata mismatch. {'; '.join(diffs)}. Using "
                                        f"dynamically inferred metadata instead."),
                    raise_on_mismatch, warn_on_mismatch)
        all_diffs.extend(diffs)
    return all_diffs


def map_debug_info(a):
    """``a`` with its tensors shown by shape, grad and dtype, for error messages."""
    return map_aggregate(a, lambda v: f"Tensor({v.shape}, grad={v.requires_grad}, "
                                      f"dtype={v.dtype})" if isinstance(v, ember.Tensor)
                         else str(v))
