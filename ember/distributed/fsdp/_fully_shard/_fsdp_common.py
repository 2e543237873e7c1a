"""What the FSDP modules share: the data-parallel mesh descriptions (``FSDPMeshInfo`` for a
1-D mesh, ``HSDPMeshInfo`` for a replicate x shard mesh), the training states, the shapes of
dim-0 shards with their padding, the dtype casts, and the walks over nested forward inputs
and outputs."""
import dataclasses
import math
from dataclasses import dataclass
from enum import Enum, auto

import ember

from ...tensor import DTensor
from ..._composable.contract import _get_registry
from ....autograd import engine as _engine
from ....nn.parallel.scatter_gather import _is_namedtuple
from ...utils import _apply_to_tensors  # noqa: F401 (the FSDP modules' name)


@dataclass
class DataParallelMeshInfo:
    mesh: object
    shard_mesh_dim: int = None
    replicate_mesh_dim: int = None

    def __post_init__(self):
        if self.shard_mesh_dim is None and self.replicate_mesh_dim is None:
            raise AssertionError("At least one of shard_mesh_dim and replicate_mesh_dim must not "
                                 "be None")


@dataclass
class FSDPMeshInfo(DataParallelMeshInfo):
    def __post_init__(self):
        super().__post_init__()
        if self.shard_mesh_dim is None:
            raise AssertionError("Expects non-None shard_mesh_dim")
        self.shard_mesh_size = self.mesh.size(self.shard_mesh_dim)
        self.shard_process_group = self.mesh.get_group(self.shard_mesh_dim)
        self.shard_mesh_rank = self.shard_process_group.rank()


@dataclass
class DDPMeshInfo(DataParallelMeshInfo):
    def __post_init__(self):
        super().__post_init__()
        if self.replicate_mesh_dim is None:
            raise AssertionError("Expects non-None replicate_mesh_dim")
        self.replicate_mesh_size = self.mesh.size(self.replicate_mesh_dim)
        self.replicate_process_group = self.mesh.get_group(self.replicate_mesh_dim)
        self.replicate_mesh_rank = self.replicate_process_group.rank()


@dataclass
class HSDPMeshInfo(FSDPMeshInfo, DDPMeshInfo):
    def __post_init__(self):
        super().__post_init__()  # FSDPMeshInfo -> DDPMeshInfo -> DataParallelMeshInfo


class TrainingState(Enum):
    """The training state of an FSDP state or parameter group."""

    FORWARD = auto()  # from pre-forward to post-forward
    PRE_BACKWARD = auto()  # unsharding in backward
    POST_BACKWARD = auto()  # resharding and reducing gradients
    IDLE = auto()


def _is_composable_with_fsdp(module):
    registry = _get_registry(module)
    return registry is None or "replicate" not in registry


def _get_dim0_padded_size(tensor_size, dim0_factor):
    padded_dim0 = math.ceil(tensor_size[0] / dim0_factor) * dim0_factor
    return ember.Size([padded_dim0]) + tensor_size[1:]


def _chunk_with_empty(tensor, num_chunks, dim):
    chunks = list(ember.chunk(tensor, num_chunks, dim=dim))
    while len(chunks) < num_chunks:
        chunks.append(chunks[0].new_empty(0))
    return chunks


def _get_dim_chunked_size(chunk, unchunked_size, dim):
    if chunk.numel() > 0:
        return chunk.size()
    # an empty shard keeps the other dims' sizes, for the DTensor APIs
    return unchunked_size[:dim] + ember.Size([0]) + unchunked_size[dim + 1:]


def _contiguous_strides(size):
    return tuple(math.prod(size[i + 1:]) for i in range(len(size)))


def _from_local_no_grad(local_tensor, sharding_spec):
    """A DTensor over ``local_tensor`` itself (``DTensor.from_local`` without autograd)."""
    return DTensor(local_tensor, sharding_spec, requires_grad=local_tensor.requires_grad)


def _to_dtype_if_needed(tensor, dtype):
    if dtype is not None and tensor.dtype != dtype:
        return tensor.to(dtype)
    return tensor


def _cast_fp_tensor(dtype, x):
    if not isinstance(x, ember.Tensor) or not ember.is_floating_point(x) or x.dtype == dtype:
        return x
    return x.to(dtype)


def is_bw():
    """Whether a backward pass is running in this thread."""
    return _engine.current_graph_task_id() != -1


def collect_grad_tensors(output):
    """The tensors requiring grad in a nested structure (dicts, lists, tuples, named tuples and
    dataclasses; sets are not walked), in ``replace_grad_tensors``'s order."""
    out = []

    def collect(x):
        if isinstance(x, ember.Tensor):
            if x.requires_grad:
                out.append(x)
        elif _is_namedtuple(x):
            for item in x:
                collect(item)
        elif dataclasses.is_dataclass(x) and not isinstance(x, type):
            for f in dataclasses.fields(x):
                collect(getattr(x, f.name))
        elif isinstance(x, dict):
            for v in x.values():
                collect(v)
        elif isinstance(x, (list, tuple)):
            for item in x:
                collect(item)
    collect(output)
    return tuple(out)


def replace_grad_tensors(output, tensor_iter):
    """``output`` with its tensors requiring grad replaced by ``tensor_iter``'s, in
    ``collect_grad_tensors``'s order."""
    def replace(x):
        if isinstance(x, ember.Tensor):
            return next(tensor_iter) if x.requires_grad else x
        if _is_namedtuple(x):
            return type(x)(*(replace(item) for item in x))
        if dataclasses.is_dataclass(x) and not isinstance(x, type):
            return dataclasses.replace(x, **{f.name: replace(getattr(x, f.name))
                                             for f in dataclasses.fields(x) if f.init})
        if isinstance(x, dict):
            return type(x)((k, replace(v)) for k, v in x.items())
        if isinstance(x, (list, tuple)):
            return type(x)(replace(item) for item in x)
        return x
    return replace(output)
