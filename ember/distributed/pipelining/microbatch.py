"""Splitting a batch's arguments into microbatches and merging the microbatches' outputs back
(PyTorch's ``torch.distributed.pipelining.microbatch``): tensors are cut with ``tensor_split``
along their ``TensorChunkSpec``'s dim, ``_Replicate`` values are handed to every microbatch,
and ``merge_chunks`` concatenates, reduces (``sum_reducer``) or checks equal."""
import operator

import ember
from ember.distributed.tensor import DTensor
from ember.fx.node import map_aggregate
from ember.nn.attention.flex_attention import BlockMask
from ember.utils._pytree import tree_flatten, tree_map, tree_unflatten

__all__ = ["TensorChunkSpec", "split_args_kwargs_into_chunks", "merge_chunks"]

# chunks are sent as full-batch tensors, zero outside the chunk, when set (PyTorch's debugging
# switch for numerical comparisons against an unsplit run)
_debug_mask_minibatches = False

# the dim a tensor is split along when no chunk spec names one
DEFAULT_CHUNK_DIM = 0


class _CustomReducer:
    """Reduces one output over the microbatches:
    ``reduce_fn(... reduce_fn(init_value, chunk0) ...)``."""

    def __init__(self, init_value, reduce_fn):
        self.init_value = init_value
        self.reduce_fn = reduce_fn


class _LossReducer(_CustomReducer):
    pass


sum_reducer = _LossReducer(ember.tensor(0.0), operator.add)


class TensorChunkSpec:
    """The dim along which a tensor argument is split into microbatches."""

    split_dim: int

    def __init__(self, split_dim):
        self.split_dim = split_dim

    def __repr__(self):
        return f"{self.__class__.__module__}.{self.__class__.__name__}({self.split_dim})"

    def __str__(self):
        return f"TensorChunkSpec({self.split_dim})"

    @staticmethod
    def from_tuple(chunk_dims):
        """A tuple of specs from a tuple of dims, one per positional argument."""
        return map_aggregate(chunk_dims, TensorChunkSpec)

    @staticmethod
    def from_dict(chunk_dims):
        """A dict of specs from a dict of dims, one per keyword argument."""
        return map_aggregate(chunk_dims, TensorChunkSpec)


class _Replicate:
    """Spec of an argument every microbatch receives whole."""


def _is_block_mask(v):
    return isinstance(v, BlockMask)


def _split_block_mask(block_mask, num_chunks):
    """Split a flex-attention block mask along its batch dim; a batch of 1 broadcasts."""
    if block_mask.kv_num_blocks.size(0) == 1:
        return [block_mask] * num_chunks
    if not block_mask.kv_num_blocks.size(0) >= num_chunks:
        raise AssertionError("Block mask has fewer batch size than the number of chunks. ")

    def split(t):
        return ember.tensor_split(t, num_chunks, 0) if t is not None else [None] * num_chunks

    kv_num_blocks, kv_indices = split(block_mask.kv_num_blocks), split(block_mask.kv_indices)
    full_num_blocks = split(block_mask.full_kv_num_blocks)
    full_indices = split(block_mask.full_kv_indices)

    def offset_mask_mod(offset):
        # the chunk's batch index b is the whole mask's b + offset
        def mask_mod(b, h, q_idx, kv_idx):
            return block_mask.mask_mod(b + ember.full_like(b, offset), h, q_idx, kv_idx)
        return mask_mod

    masks, offset = [], 0
    for i in range(num_chunks):
        masks.append(BlockMask.from_kv_blocks(
            kv_num_blocks=kv_num_blocks[i], kv_indices=kv_indices[i],
            full_kv_num_blocks=full_num_blocks[i], full_kv_indices=full_indices[i],
            BLOCK_SIZE=block_mask.BLOCK_SIZE, mask_mod=offset_mask_mod(offset),
            seq_lengths=block_mask.seq_lengths))
        offset += kv_num_blocks[i].size(0)
    return masks


def _split_dtensor(tensor, dim, num_chunks):
    """Split a DTensor's local shard and wrap each piece with its global chunk shape, without
    DTensor dispatch (which would gather a dim sharded along ``dim``)."""
    quotient, remainder = divmod(tensor.shape[dim], num_chunks)
    chunks = []
    for i, local in enumerate(ember.tensor_split(tensor.to_local(), num_chunks, dim)):
        shape = list(tensor.shape)
        shape[dim] = quotient + (1 if i < remainder else 0)
        chunks.append(DTensor.from_local(local, tensor.device_mesh, tensor.placements,
                                         shape=ember.Size(shape), stride=tensor.stride(),
                                         run_check=False))
    return chunks


def _split_tensor(tensor, spec, num_chunks):
    """``tensor`` in ``num_chunks`` pieces along ``spec.split_dim``."""
    if not tensor.size(spec.split_dim) >= num_chunks:
        raise AssertionError(
            f"Tensor size {tensor.size(spec.split_dim)} is smaller than num_chunks")
    dim = spec.split_dim
    is_dtensor = isinstance(tensor, DTensor)
    chunks = (_split_dtensor(tensor, dim, num_chunks) if is_dtensor
              else ember.tensor_split(tensor, num_chunks, dim))
    # pieces of a leaf are views, which keep no .grad unless asked: stage_backward reads it
    if tensor.requires_grad and tensor.is_leaf:
        for chunk in chunks:
            chunk.retain_grad()
    if not _debug_mask_minibatches:
        return chunks

    def expand(orig, pieces):
        out, start = [], 0
        for piece in pieces:
            full = ember.zeros_like(orig)
            index = [slice(None)] * full.ndim
            index[dim] = slice(start, start + piece.size(dim))
            full[tuple(index)] = piece
            out.append(full)
            start += piece.size(dim)
        return out

    if is_dtensor:
        return [DTensor.from_local(t, tensor.device_mesh, tensor.placements, shape=tensor.shape,
                                   stride=tensor.stride(), run_check=False)
                for t in expand(tensor.to_local(), [c.to_local() for c in chunks])]
    return expand(tensor, chunks)


def _is_replicate(spec):
    # PyTorch accepts the class itself as well as an instance
    return spec is _Replicate or isinstance(spec, _Replicate)


def _shard_dict_of_args(args_dict, args_chunk_spec, num_chunks):
    """The values of ``args_dict`` cut per their specs into at most ``num_chunks`` dicts (fewer
    when a tensor is shorter along its split dim)."""
    if not args_dict:
        return [{} for _ in range(num_chunks)]
    if not len(args_dict) == len(args_chunk_spec):
        raise AssertionError(f"args_dict.keys() = {list(args_dict.keys())} "
                             f"args_chunk_spec.keys() = {list(args_chunk_spec.keys())}")
    values, tree_spec = tree_flatten(args_dict, is_leaf=_is_block_mask)
    chunk_specs, _ = tree_flatten(args_chunk_spec, is_leaf=_is_block_mask)

    split_sizes = []
    for v, spec in zip(values, chunk_specs, strict=True):
        if _is_replicate(spec):
            split_sizes.append(num_chunks)
        elif isinstance(v, ember.Tensor):
            if not isinstance(spec, TensorChunkSpec):
                raise AssertionError(f"Expected TensorChunkSpec, got {type(spec)}")
            split_sizes.append(v.size(spec.split_dim))
        elif isinstance(v, BlockMask):
            if not isinstance(spec, TensorChunkSpec):
                raise AssertionError(f"Expected TensorChunkSpec, got {type(spec)}")
            if not spec.split_dim == 0:
                raise AssertionError("BlockMask only supports split_dim=0")
            size = v.kv_num_blocks.size(0)
            split_sizes.append(num_chunks if size == 1 else size)
        else:
            raise ValueError(f"Unsupported chunk spec: {spec} and value: {v} combination.")
    result_num_chunks = min(*split_sizes, num_chunks)

    flat_chunks = [[] for _ in range(result_num_chunks)]
    for v, spec in zip(values, chunk_specs, strict=True):
        if _is_replicate(spec):
            pieces = [v] * result_num_chunks
        elif isinstance(v, ember.Tensor):
            pieces = _split_tensor(v, spec, result_num_chunks)
        elif isinstance(v, BlockMask):
            pieces = _split_block_mask(v, result_num_chunks)
        else:
            raise ValueError(f"Unsupported chunk spec: {spec} and value: {v} combination.")
        for flat, piece in zip(flat_chunks, pieces, strict=True):
            flat.append(piece)
    return [tree_unflatten(flat, tree_spec) for flat in flat_chunks]


def split_args_kwargs_into_chunks(args, kwargs, chunks, args_chunk_spec=None,
                                  kwargs_chunk_spec=None):
    """``(args_split, kwargs_split)``: a list of positional-argument tuples and one of
    keyword dicts, one per microbatch. Tensors without a spec split along dim 0; other values
    are replicated."""
    if kwargs is None:
        kwargs = {}

    def default_spec(v):
        if isinstance(v, (ember.Tensor, BlockMask)):
            return TensorChunkSpec(DEFAULT_CHUNK_DIM)
        return _Replicate()

    if args_chunk_spec is None:
        args_chunk_spec = tree_map(default_spec, args, is_leaf=_is_block_mask)
    if kwargs_chunk_spec is None:
        kwargs_chunk_spec = tree_map(default_spec, kwargs, is_leaf=_is_block_mask)

    def shard_args(n):
        return _shard_dict_of_args(dict(enumerate(args)), dict(enumerate(args_chunk_spec)), n)

    args_split_dict = shard_args(chunks)
    real_num_chunks = len(args_split_dict)
    kwargs_split = _shard_dict_of_args(kwargs, kwargs_chunk_spec, real_num_chunks)
    if len(kwargs_split) < real_num_chunks:
        # the kwargs allow fewer chunks (the args may hold no tensor at all): cut args again
        real_num_chunks = len(kwargs_split)
        args_split_dict = shard_args(real_num_chunks)
    if len(args_split_dict) != len(kwargs_split):
        raise RuntimeError("args and kwargs are split into different number of chunks: "
                           f"{len(args_split_dict)}, {len(kwargs_split)}")
    args_split = [tuple(chunk[i] for i in range(len(chunk))) for chunk in args_split_dict]
    return args_split, kwargs_split


def _cat(values, dim):
    is_dtensor = [isinstance(v, DTensor) for v in values]
    if not any(is_dtensor):
        return ember.cat(values, dim=dim)
    if not all(is_dtensor):
        raise AssertionError("merge_chunks: expected all values to be DTensors or none to be "
                             "DTensors, got a mix")
    placements = values[0].placements
    for i, v in enumerate(values[1:], 1):
        if v.placements != placements:
            raise AssertionError(f"merge_chunks: placement mismatch at chunk {i}: expected "
                                 f"{placements}, got {v.placements}")
    shape = list(values[0].shape)
    shape[dim] = sum(v.shape[dim] for v in values)
    return DTensor.from_local(ember.cat([v.to_local() for v in values], dim=dim),
                              values[0].device_mesh, placements, shape=ember.Size(shape),
                              stride=values[0].stride(), run_check=False)


def _unmask(values, dim):
    """Under ``_debug_mask_minibatches`` each chunk is full size: take its own slice."""
    shape = values[0].shape
    for v in values[1:]:
        if not v.shape == shape:
            raise AssertionError(f"Expected shape {shape}, got {v.shape}")
    sizes = [m.size(dim) for m in ember.tensor_split(ember.empty(*shape, device="meta"),
                                                     sections=len(values), dim=dim)]
    out, start = [], 0
    for v, size in zip(values, sizes, strict=True):
        index = [slice(None)] * v.ndim
        index[dim] = slice(start, start + size)
        out.append(v[tuple(index)])
        start += size
    return out


def merge_chunks(chunks, chunk_spec):
    """The microbatches' values ``chunks`` merged into one per ``chunk_spec`` (dim 0 for every
    leaf when None): a ``TensorChunkSpec`` concatenates, a reducer reduces, anything else must
    be equal across the chunks."""
    if chunk_spec is not None:
        spec_flat, flatten_spec = tree_flatten(chunk_spec)
    else:
        chunk0_flat, flatten_spec = tree_flatten(chunks[0])
        spec_flat = [TensorChunkSpec(DEFAULT_CHUNK_DIM)] * len(chunk0_flat)

    chunks_flat = []
    for chunk in chunks:
        flat, _ = tree_flatten(chunk)
        if len(flat) != len(spec_flat):
            raise ValueError(f"Chunk {chunk} did not match chunk spec {chunk_spec}")
        chunks_flat.append(flat)

    merged = []
    for i, spec in enumerate(spec_flat):
        values = [flat[i] for flat in chunks_flat]
        if isinstance(spec, TensorChunkSpec):
            if _debug_mask_minibatches:
                values = _unmask(values, spec.split_dim)
            merged.append(_cat(values, spec.split_dim))
        elif isinstance(spec, _CustomReducer):
            reduced = spec.init_value
            for v in values:
                reduced = spec.reduce_fn(reduced, v)
            merged.append(reduced)
        else:
            for v in values[1:]:
                if not v == values[0]:
                    raise AssertionError(f"Expected {values[0]}, got {v}")
            merged.append(values[0])
    return tree_unflatten(merged, flatten_spec)
