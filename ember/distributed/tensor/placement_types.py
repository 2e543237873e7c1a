"""PyTorch's DTensor placements: how a tensor lies on one dimension of a ``DeviceMesh``.

``Shard(dim)`` splits tensor dimension ``dim`` over the mesh dimension with ``torch.chunk``'s
rule (the last ranks may hold fewer rows, possibly none), ``Replicate()`` holds the whole tensor
on every rank, ``Partial(reduce_op)`` holds values still to be reduced across the ranks, and
``_StridedShard(dim, split_factor=k)`` is the right-to-left sharding of FSDP2 over tensor
parallelism (the dimension cut into ``k`` pieces first, each piece sharded, a rank's parts
concatenated), and ``_MaskPartial`` is the pending sum of a lookup into a row-sharded table (each
rank looked up only the indices its rows hold). Each placement also carries its conversions of a local tensor (chunking,
all-gather, reduce-scatter, all-to-all, all-reduce), which redistribution composes.
"""
import ember

from .. import _functional_collectives as funcol
from ._ops._mask_buffer import MaskBuffer
from ._collective_utils import (fill_empty_tensor_to_shards, mesh_scatter, pad_tensor,
                                shard_dim_alltoall, unpad_tensor, mesh_broadcast)

__all__ = ["Placement", "Shard", "Replicate", "Partial"]


class Placement:
    """The base class of placements."""

    def is_shard(self, dim=None):
        return False

    def is_replicate(self):
        return False

    def is_partial(self, reduce_op=None):
        return False


def _chunk(tensor, num_chunks, dim):
    """``torch.chunk`` padded with empty tensors to exactly ``num_chunks`` pieces."""
    if tensor.dim() <= 0:
        raise AssertionError(f"Expected tensor.dim() > 0, got {tensor.dim()}")
    pieces = list(ember.chunk(tensor, num_chunks, dim=dim))
    return fill_empty_tensor_to_shards(pieces, dim, num_chunks - len(pieces))


class Shard(Placement):
    """Tensor dimension ``dim`` split over the mesh dimension (``torch.chunk``'s rule)."""

    def __init__(self, dim):
        self._dim = dim

    @property
    def dim(self):
        return self._dim

    def is_shard(self, dim=None):
        return dim is None or dim == self._dim

    def __eq__(self, other):
        return type(other) is type(self) and other._dim == self._dim

    def __hash__(self):
        return hash(self._dim)

    def __repr__(self):
        return f"Shard(dim={self._dim})"

    def __str__(self):
        return f"S({self._dim})"

    def __reduce__(self):
        return (type(self), (self._dim,))

    # --- local splitting

    def _split_tensor(self, tensor, num_chunks, *, with_padding=True, contiguous=True):
        """The ``num_chunks`` shards of ``tensor`` and the padding each needs to reach the
        largest (the collectives take equal sizes)."""
        if self._dim > tensor.ndim:
            raise AssertionError(f"Sharding dim {self._dim} greater than tensor ndim "
                                 f"{tensor.ndim}")
        pieces = _chunk(tensor, num_chunks, self._dim)
        full = (tensor.size(self._dim) + num_chunks - 1) // num_chunks
        shards, pads = [], []
        for shard in pieces:
            if with_padding:
                pad = full - shard.size(self._dim)
                shard = pad_tensor(shard, self._dim, pad)
                pads.append(pad)
            if contiguous:
                shard = shard.contiguous()
            shards.append(shard)
        return shards, pads

    def _select_split_tensor(self, tensor, num_chunks, index, *, with_padding=True,
                             contiguous=True, clone=True):
        shards, _ = self._split_tensor(tensor, num_chunks, with_padding=with_padding,
                                       contiguous=False)
        result = shards[index]
        if clone:
            return result.clone()
        return result.contiguous() if contiguous else result

    @staticmethod
    def local_shard_size_and_offset(curr_local_size, num_chunks, rank):
        """(size, offset) of chunk ``rank`` of a dimension of ``curr_local_size`` elements."""
        if curr_local_size % num_chunks == 0:
            full = curr_local_size // num_chunks
            return full, full * rank
        full = (curr_local_size + num_chunks - 1) // num_chunks
        start = full * rank
        end = min(curr_local_size, start + full)
        return max(0, end - start), min(curr_local_size, start)

    def _local_shard_size_and_offset(self, curr_local_size, num_chunks, rank):
        return Shard.local_shard_size_and_offset(curr_local_size, num_chunks, rank)

    # --- conversions across a mesh dimension

    def _shard_tensor(self, tensor, mesh, mesh_dim, src_data_rank=0):
        """This rank's shard, scattered from coordinate ``src_data_rank`` of the mesh dimension
        (``None``: split the local tensor, no communication)."""
        coord = mesh.get_coordinate()
        num_chunks = mesh.size(mesh_dim=mesh_dim)
        if coord is None:
            return tensor.new_empty(0, requires_grad=tensor.requires_grad)
        index = coord[mesh_dim]
        if src_data_rank is None:
            return self._select_split_tensor(tensor, num_chunks, index, with_padding=False,
                                             contiguous=True, clone=False)
        scatter_list, pads = self._split_tensor(tensor, num_chunks, with_padding=True,
                                                contiguous=True)
        output = ember.empty_like(scatter_list[0])
        mesh_scatter(output, scatter_list, mesh, mesh_dim=mesh_dim, group_src=src_data_rank)
        return unpad_tensor(output, self._dim, pads[index]).contiguous()

    @classmethod
    def _make_shard_tensor(cls, dim, tensor, mesh, mesh_dim, src_data_rank=0):
        return cls(dim)._shard_tensor(tensor, mesh, mesh_dim, src_data_rank)

    def _reduce_shard_tensor(self, tensor, mesh, reduce_op, mesh_dim):
        """Reduce-scatter: the reduction over the mesh dimension, this rank's shard of it."""
        if mesh.get_coordinate() is None:
            return tensor
        num_chunks = mesh.size(mesh_dim=mesh_dim)
        padded = tensor.size(self._dim) % num_chunks != 0
        if padded:
            pieces, pads = self._split_tensor(tensor, num_chunks, with_padding=True,
                                              contiguous=True)
            tensor = ember.cat(pieces, dim=self._dim)
        elif not tensor.is_contiguous():
            tensor = tensor.contiguous()
        output = funcol.reduce_scatter_single(tensor, reduce_op, scatter_dim=self._dim,
                                              group=(mesh, mesh_dim))
        if padded:
            output = unpad_tensor(output, self._dim, pads[mesh.get_coordinate()[mesh_dim]])
        return output

    def _to_replicate_tensor(self, local_tensor, mesh, mesh_dim, current_logical_shape):
        """All-gather the shards (padded to one size, unpadded after)."""
        num_chunks = mesh.size(mesh_dim=mesh_dim)
        size = current_logical_shape[self._dim]
        padded = size % num_chunks != 0
        if padded:
            full = (size + num_chunks - 1) // num_chunks
            local_tensor = pad_tensor(local_tensor, self._dim, full - local_tensor.size(self._dim))
        if not local_tensor.is_contiguous():
            local_tensor = local_tensor.contiguous()
        result = funcol.all_gather_single(local_tensor, gather_dim=self._dim,
                                          group=(mesh, mesh_dim))
        if padded:
            result = result.narrow(self._dim, 0, size)
        return result.contiguous()

    def _replicate_to_shard(self, local_tensor, mesh, mesh_dim, shard_index):
        return self._select_split_tensor(local_tensor, mesh.size(mesh_dim=mesh_dim), shard_index,
                                         with_padding=False, clone=True)

    def _to_new_shard_dim(self, local_tensor, mesh, mesh_dim, current_logical_shape,
                          new_shard_dim):
        """All-to-all: from sharding ``self.dim`` to sharding ``new_shard_dim``."""
        coord = mesh.get_coordinate()
        if coord is None:
            return local_tensor
        n = mesh.size(mesh_dim=mesh_dim)
        old, new = self._dim, new_shard_dim
        old_size, new_size = current_logical_shape[old], current_logical_shape[new]
        old_full = (old_size + n - 1) // n
        new_full = (new_size + n - 1) // n
        local_tensor = pad_tensor(local_tensor, old, old_full - local_tensor.size(old))
        local_tensor = pad_tensor(local_tensor, new, new_full * n - local_tensor.size(new))
        result = shard_dim_alltoall(local_tensor.contiguous(), old, new, mesh, mesh_dim)
        result = unpad_tensor(result, old, old_full * n - old_size)
        mine, _ = Shard.local_shard_size_and_offset(new_size, n, coord[mesh_dim])
        return unpad_tensor(result, new, new_full - mine)


class _StridedShard(Placement):
    """FSDP2-over-TP's right-to-left sharding of tensor dimension ``dim``: the dimension is cut
    into ``split_factor`` pieces, each piece is chunked over the mesh dimension, and a rank holds
    its chunk of every piece, concatenated."""

    def __init__(self, dim, *, split_factor=1, sf=None):
        if sf is not None:
            if split_factor != 1:
                raise TypeError("_StridedShard received both split_factor and sf")
            split_factor = sf
        self._dim = dim
        self._split_factor = int(split_factor)

    @property
    def dim(self):
        return self._dim

    @property
    def split_factor(self):
        return self._split_factor

    def __eq__(self, other):
        return (isinstance(other, _StridedShard) and self._dim == other._dim
                and self._split_factor == other._split_factor)

    def __hash__(self):
        return hash((self._dim, self._split_factor))

    def __repr__(self):
        return f"_StridedShard(dim={self._dim}, sf={self._split_factor})"

    def __str__(self):
        return f"_S({self._dim}, {self._split_factor})"

    def __reduce__(self):
        return (_make_strided_shard, (self._dim, self._split_factor))

    def _split_tensor(self, tensor, num_chunks, *, with_padding=True, contiguous=True):
        pieces = [_chunk(p, num_chunks, self._dim)
                  for p in _chunk(tensor, self._split_factor, self._dim)]
        shards = []
        for i in range(num_chunks):
            shard = ember.cat([p[i] for p in pieces], dim=self._dim)
            shards.append(shard.contiguous() if contiguous else shard)
        pads = []
        if with_padding:
            biggest = max(s.size(self._dim) for s in shards)
            pads = [biggest - s.size(self._dim) for s in shards]
        return shards, pads

    def _select_split_tensor(self, tensor, num_chunks, index, *, with_padding=True,
                             contiguous=True, clone=True):
        shards, _ = self._split_tensor(tensor, num_chunks, with_padding=with_padding,
                                       contiguous=False)
        result = shards[index]
        if clone:
            return result.clone()
        return result.contiguous() if contiguous else result

    def _indices(self, size, num_chunks):
        """The global positions along ``dim`` that each rank's shard holds."""
        idx = ember.arange(size).view([1] * self._dim + [size])
        shards, _ = self._split_tensor(idx, num_chunks, with_padding=False, contiguous=False)
        return [s.reshape(-1).tolist() for s in shards]

    def local_shard_size_and_offset(self, curr_local_size, num_chunks, rank):
        """(size, first offset or -1 for an empty shard) of chunk ``rank``."""
        mine = self._indices(curr_local_size, num_chunks)[rank]
        return len(mine), (mine[0] if mine else -1)

    def _local_shard_size_and_offset(self, curr_local_size, num_chunks, rank):
        return self.local_shard_size_and_offset(curr_local_size, num_chunks, rank)

    def _shard_tensor(self, tensor, mesh, mesh_dim, src_data_rank=0):
        coord = mesh.get_coordinate()
        num_chunks = mesh.size(mesh_dim=mesh_dim)
        if coord is None:
            return tensor.new_empty(0, requires_grad=tensor.requires_grad)
        index = coord[mesh_dim]
        scatter_list, pads = self._split_tensor(tensor, num_chunks, with_padding=True,
                                                contiguous=True)
        if src_data_rank is None:
            return scatter_list[index].clone()
        padded = [pad_tensor(s, self._dim, p) for s, p in zip(scatter_list, pads)]
        output = ember.empty_like(padded[0])
        mesh_scatter(output, padded, mesh, mesh_dim=mesh_dim, group_src=src_data_rank)
        return unpad_tensor(output, self._dim, pads[index]).contiguous()

    @classmethod
    def _make_shard_tensor(cls, dim, tensor, mesh, mesh_dim, src_data_rank=0, split_factor=1):
        return cls(dim, split_factor=split_factor)._shard_tensor(tensor, mesh, mesh_dim,
                                                                 src_data_rank)

    def _to_replicate_tensor(self, local_tensor, mesh, mesh_dim, current_logical_shape):
        """All-gather the (padded) shards, then put every element back at its position."""
        n = mesh.size(mesh_dim=mesh_dim)
        size = current_logical_shape[self._dim]
        indices = self._indices(size, n)
        biggest = max(len(i) for i in indices)
        local_tensor = pad_tensor(local_tensor, self._dim, biggest - local_tensor.size(self._dim))
        gathered = funcol.all_gather_single(local_tensor.contiguous(), gather_dim=self._dim,
                                            group=(mesh, mesh_dim))
        select = [0] * size
        for r, idx in enumerate(indices):
            for j, pos in enumerate(idx):
                select[pos] = r * biggest + j
        index = ember.tensor(select, dtype=ember.int64, device=local_tensor.device)
        return ember.index_select(gathered, self._dim, index).contiguous()

    def _replicate_to_strided_shard(self, local_tensor, mesh, mesh_dim, shard_index):
        return self._select_split_tensor(local_tensor, mesh.size(mesh_dim=mesh_dim), shard_index,
                                         with_padding=False, clone=True)


def _make_strided_shard(dim, split_factor):
    return _StridedShard(dim, split_factor=split_factor)


def _is_shard_like(p):
    """Shard or _StridedShard."""
    return isinstance(p, (Shard, _StridedShard))


class Replicate(Placement):
    """The whole tensor on every rank of the mesh dimension."""

    def is_replicate(self):
        return True

    def __eq__(self, other):
        return isinstance(other, Replicate)

    def __hash__(self):
        return -1

    def __repr__(self):
        return "Replicate()"

    def __str__(self):
        return "R"

    @classmethod
    def _make_replicate_tensor(cls, tensor, mesh, mesh_dim, src_data_rank=0):
        """Broadcast from coordinate ``src_data_rank`` of the mesh dimension (``None``: keep the
        local tensor)."""
        if mesh.get_coordinate() is None:
            return tensor.new_empty(0, requires_grad=tensor.requires_grad)
        tensor = tensor.contiguous()
        if src_data_rank is not None:
            mesh_broadcast(tensor, mesh, mesh_dim=mesh_dim, group_src=src_data_rank)
        return tensor

    def _replicate_tensor(self, tensor, mesh, mesh_dim, src_data_rank=0):
        return Replicate._make_replicate_tensor(tensor, mesh, mesh_dim, src_data_rank)


class Partial(Placement):
    """Values pending a reduction (``reduce_op``: "sum", "avg", "max", "min", "product", ...)
    across the ranks of the mesh dimension."""

    # reductions that distribute over addition: reduce(A_i @ B) = reduce(A_i) @ B
    LINEAR_REDUCE_OPS = ("sum", "avg")
    ALL_REDUCE_OPS = ("sum", "avg", "min", "max", "product")

    def __init__(self, reduce_op="sum"):
        self._reduce_op = reduce_op

    @property
    def reduce_op(self):
        return self._reduce_op

    def is_partial(self, reduce_op=None):
        return reduce_op is None or reduce_op == self._reduce_op

    def __eq__(self, other):
        return type(other) is type(self) and other._reduce_op == self._reduce_op

    def __hash__(self):
        return 1 + hash(self._reduce_op)

    def __repr__(self):
        return f"Partial({self._reduce_op})"

    def __str__(self):
        return f"P({self._reduce_op})"

    def __reduce__(self):
        return (type(self), (self._reduce_op,))

    def _reduce_value(self, tensor, mesh, mesh_dim):
        """All-reduce."""
        return funcol.all_reduce(tensor, reduceOp=self._reduce_op, group=(mesh, mesh_dim))

    def _reduce_shard_value(self, tensor, mesh, mesh_dim, shard_spec):
        """Reduce-scatter into ``shard_spec``."""
        return shard_spec._reduce_shard_tensor(tensor, mesh, self._reduce_op, mesh_dim)

    def _partition_value(self, tensor, mesh, mesh_dim):
        """Replicate -> Partial: values whose reduction is ``tensor``."""
        if self._reduce_op == "sum":
            return tensor / mesh.size(mesh_dim=mesh_dim)
        if self._reduce_op in ("avg", "min", "max"):
            return tensor
        raise ValueError(f"Replicate to Partial({self._reduce_op}) conversion is not supported.")


class _MaskPartial(Partial):
    """The pending sum of a lookup (embedding, gather) into a table sharded on ``offset_dim`` of
    ``offset_shape``: partitioning the indices shifts them into this rank's shard and masks the
    ones outside it (the mask is kept in ``mask_buffer``); the reduction zeroes the masked
    results and sums over the ranks."""

    def __init__(self, reduce_op=None, mask_buffer=None, offset_shape=None, offset_dim=0):
        super().__init__(reduce_op or "sum")
        self.mask_buffer = MaskBuffer() if mask_buffer is None else mask_buffer
        self.offset_shape = offset_shape
        self.offset_dim = offset_dim

    @staticmethod
    def _mask_tensor(tensor, local_offset_on_dim, local_shard_size):
        mask = (tensor < local_offset_on_dim) | (tensor >= local_offset_on_dim + local_shard_size)
        masked_tensor = tensor.clone() - local_offset_on_dim
        masked_tensor[mask] = 0
        return mask, masked_tensor

    def _partition_value(self, tensor, mesh, mesh_dim):
        if not mesh._is_current_rank_part_of_mesh():
            raise AssertionError("rank is not part of mesh")
        if self.offset_shape is None:
            raise AssertionError("offset_shape needs to be set for _MaskPartial")
        local_shard_size, local_offset_on_dim = Shard.local_shard_size_and_offset(
            self.offset_shape[self.offset_dim], mesh.size(mesh_dim),
            mesh._sym_get_coordinate(mesh_dim))
        mask, masked_tensor = _MaskPartial._mask_tensor(tensor, local_offset_on_dim,
                                                        local_shard_size)
        self.mask_buffer.materialize_mask(mask)
        return masked_tensor

    def _reduce_value(self, tensor, mesh, mesh_dim):
        if self.mask_buffer.data is None:
            raise AssertionError
        self.mask_buffer.apply_mask(tensor)
        self.mask_buffer.release_mask()
        return funcol.all_reduce(tensor, reduceOp=self.reduce_op, group=(mesh, mesh_dim))

    def _reduce_shard_value(self, tensor, mesh, mesh_dim, shard_spec):
        if self.mask_buffer.data is None:
            raise AssertionError
        self.mask_buffer.apply_mask(tensor)
        self.mask_buffer.release_mask()
        return shard_spec._reduce_shard_tensor(tensor, mesh, self.reduce_op, mesh_dim)

    def __eq__(self, other):
        return (isinstance(other, _MaskPartial) and self.reduce_op == other.reduce_op
                and self.offset_shape == other.offset_shape
                and self.offset_dim == other.offset_dim
                and self.mask_buffer is other.mask_buffer)

    def __hash__(self):
        return 1 + hash((self.reduce_op, self.offset_shape, self.offset_dim,
                         id(self.mask_buffer)))

    def __repr__(self):
        return (f"_MaskPartial(reduce_op={self.reduce_op}, offset_shape={self.offset_shape}, "
                f"offset_dim={self.offset_dim})")

    def __str__(self):
        return f"MaskP({self.reduce_op}, {self.offset_shape}, {self.offset_dim})"

    def __reduce__(self):
        return (_MaskPartial, (self.reduce_op, None, self.offset_shape, self.offset_dim))
