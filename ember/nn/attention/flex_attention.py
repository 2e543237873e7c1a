"""``ember.nn.attention.flex_attention``: attention with a user score modification and a
block-sparse mask, as ``torch.nn.attention.flex_attention``.

``flex_attention`` is PyTorch's eager path (``math_attention`` of
``torch/_higher_order_ops/flex_attention.py``) written in ember ops: the scores ``q kᵀ · scale``
in float32 (float64 for float64 inputs), ``score_mod`` and the block mask's ``mask_mod``
vectorised over the four index dims with ``ember.vmap``, masked scores -inf, a softmax whose fully
masked rows give zeros (and a log-sum-exp of -inf), probabilities cast back to the query's dtype
before the product with the values. Everything is an ember op, so autograd reaches q, k, v and
any tensor ``score_mod`` captures (PyTorch's CPU path refuses inputs that require grad; its CUDA
kernels differentiate, and so does ember on every device), and it runs on any device ember has.

Under ``ember.compile`` it is traced like any function of ember ops (``fullgraph=True`` holds):
Dynamo reads the BlockMask's tensors and the mods' captured tensors as guarded graph inputs, so a
later mask is honoured and a captured bias gets its gradient.

Where the block structure applies: PyTorch's eager path reads only ``mask_mod``, its kernels
read the blocks: a position is attended when its block is a full block, or a partial block where
``mask_mod`` allows it; a block in neither list is skipped. ember applies the kernels' rule (for
a mask from ``create_block_mask`` the two agree), so a hand-built ``BlockMask`` means what it
means on PyTorch's GPU kernels.

``BlockMask`` holds the block-sparse layout (BCSR-like: per row of query blocks, a count and the
ordered column indices) with ``create_block_mask`` computing partial and full blocks from a
``mask_mod`` as PyTorch does.
"""
import functools
import itertools
import inspect
import math
import operator
import typing
import warnings
from enum import Enum
from typing import Callable, Literal, NamedTuple, TypedDict

import ember
from ember import Tensor

from ..._dynamo._trace_wrapped_higher_order_op import TransformGetItemToIndex

__all__ = ["BlockMask", "flex_attention", "AuxOutput", "AuxRequest", "FlexKernelOptions",
           "create_block_mask", "create_mask", "or_masks", "and_masks", "noop_mask"]

_score_mod_signature = Callable[[Tensor, Tensor, Tensor, Tensor, Tensor], Tensor]
_mask_mod_signature = Callable[[Tensor, Tensor, Tensor, Tensor], Tensor]
_Backend = Literal["AUTO", "TRITON", "FLASH", "TRITON_DECODE"]

_WARNINGS_SHOWN = set()


def _warn_once(warning_id, message, category=UserWarning):
    """Warn once per process, as PyTorch's module does."""
    if warning_id not in _WARNINGS_SHOWN:
        warnings.warn(message, category, stacklevel=2)
        _WARNINGS_SHOWN.add(warning_id)


class FlexKernelOptions(TypedDict, total=False):
    """Options PyTorch hands its FlexAttention kernels (tuning and numerics; ``fwd_``/``bwd_``
    prefixes apply one to one pass). ember's path is the eager decomposition: it checks
    ``BACKEND`` as PyTorch does and otherwise has no kernel to tune."""
    num_warps: int
    num_stages: int
    BLOCK_M: int
    BLOCK_N: int
    BLOCK_M1: int
    BLOCK_N1: int
    BLOCK_M2: int
    BLOCK_N2: int
    PRESCALE_QK: bool
    ROWS_GUARANTEED_SAFE: bool
    BLOCKS_ARE_CONTIGUOUS: bool
    WRITE_DQ: bool
    FORCE_USE_FLEX_ATTENTION: bool
    USE_TMA: bool
    kpack: int
    matrix_instr_nonkdim: int
    waves_per_eu: int
    BACKEND: _Backend


class AuxRequest(NamedTuple):
    """Which auxiliary outputs ``flex_attention`` should return."""
    lse: bool = False
    max_scores: bool = False


class AuxOutput(NamedTuple):
    """The auxiliary outputs of ``flex_attention``: None where not requested."""
    lse: typing.Optional[Tensor] = None
    max_scores: typing.Optional[Tensor] = None


class _ModificationType(Enum):
    """A score_mod (takes the score first) or a mask_mod (indices only)."""
    SCORE_MOD = 1
    MASK_MOD = 2
    UNKNOWN = 3


def _get_mod_type(fn):
    """SCORE_MOD for a function of 5 positional arguments without defaults, MASK_MOD for 4."""
    if hasattr(fn, "__code__"):
        code = fn.__code__
        num_defaults = len(getattr(fn, "__defaults__", None) or ())
        num_positional_args = code.co_argcount - num_defaults
    else:
        num_positional_args = sum(1 for param in inspect.signature(fn).parameters.values()
                                  if param.default is inspect.Parameter.empty)
    if num_positional_args != 5 and num_positional_args != 4:
        raise AssertionError(f"Expected 4 or 5 positional args, got {num_positional_args}")
    if num_positional_args == 5:
        return _ModificationType.SCORE_MOD
    return _ModificationType.MASK_MOD


def _vmap_for_bhqkv(fn, prefix, suffix=(), out_dims=0, group_dim=False):
    """``fn`` vmapped over its [b, h, q_idx, kv_idx] arguments (and a group dim of heads with
    ``group_dim``): called with the four index ranges it returns the [B, H, Q, KV] grid.
    ``prefix``/``suffix`` are the in_dims of the arguments before/after the indices (the score
    mapped at 0 for a score_mod, captured buffers None)."""
    dimensions = [(None, None, None, 0), (None, None, 0, None), (None, 0, None, None)]
    if group_dim:
        dimensions += [(None, 0, None, None)]
    dimensions += [(0, None, None, None)]
    for dims in dimensions:
        fn = ember.vmap(fn, in_dims=prefix + dims + suffix, out_dims=out_dims)
    return fn


def _identity(score, batch, head, token_q, token_kv):
    return score


def noop_mask(batch, head, token_q, token_kv):
    """Returns a noop mask_mod"""
    return batch.new_ones(size=(), dtype=ember.bool, device=batch.device)


def _sliced_mask_mod_error(batch, head, token_q, token_kv):
    """The mask_mod of a sliced BlockMask: raises, telling to take the original's."""
    raise RuntimeError(
        "Cannot use mask_mod from a sliced BlockMask. "
        "When you slice a BlockMask using [], the mask_mod attribute is reset. "
        "You must set it from the original BlockMask's mask_mod."
        "\n\nIncorrect usage:"
        "\n  base_mask = create_block_mask(my_mask_fn, ...)"
        "\n  sliced_mask = base_mask[:, :, block_idx]"
        "\n  sliced_mask.mask_mod = apply_offset(sliced_mask.mask_mod, offset)  # WRONG!"
        "\n\nCorrect usage:"
        "\n  base_mask = create_block_mask(my_mask_fn, ...)"
        "\n  sliced_mask = base_mask[:, :, block_idx]"
        "\n  sliced_mask.mask_mod = apply_offset(base_mask.mask_mod, offset)  # Use base_mask!"
    )


_DEFAULT_SPARSE_BLOCK_SIZE = 128
_LARGE_SPARSE_BLOCK_SIZE = 1 << 30


def _ordered_to_dense(num_blocks_in_row, col_indices, num_cols):
    """The [..., rows, num_cols] int32 0/1 grid of an ordered layout: row r has ones at the
    first ``num_blocks_in_row[r]`` entries of ``col_indices[r]``."""
    max_entries = col_indices.shape[-1]
    col_range = ember.arange(max_entries, dtype=ember.int, device=col_indices.device)
    index_mask = col_range < num_blocks_in_row.unsqueeze(-1)
    # the entries past a row's count write one column past the end, cut off below
    valid_indices = ember.where(index_mask, col_indices, num_cols).long()
    dense_mask = col_indices.new_zeros((*col_indices.shape[:-1], num_cols + 1),
                                       dtype=ember.int32)
    dense_mask = dense_mask.scatter(-1, valid_indices, 1)
    return dense_mask[..., :num_cols].contiguous()


def _dense_to_ordered(dense_mask):
    """(num_blocks_in_row, col_indices) of a 0/1 grid: the counts, and each row's set columns
    first in ascending order (a stable descending sort), then the rest."""
    dense_mask = dense_mask.to(dtype=ember.int32)
    num_blocks_in_row = dense_mask.sum(dim=-1)
    col_indices = ember.argsort(dense_mask, dim=-1, descending=True, stable=True)
    return (num_blocks_in_row.to(ember.int32, memory_format=ember.contiguous_format),
            col_indices.to(ember.int32, memory_format=ember.contiguous_format))


def _transpose_ordered(num_blocks_in_row, col_indices):
    dense = _ordered_to_dense(num_blocks_in_row, col_indices, col_indices.shape[-1])
    return _dense_to_ordered(dense.transpose(-2, -1))


def _adjust_num_blocks_and_indices(num_blocks, indices, new_num_rows, new_num_cols):
    indices = indices[:, :, :new_num_rows, :new_num_cols]
    num_blocks = num_blocks[:, :, :new_num_rows]
    num_blocks = ember.where(num_blocks < new_num_cols, num_blocks, new_num_cols)
    num_blocks = ember.sum(indices < num_blocks[:, :, :, None], dim=-1).to(ember.int32)
    return num_blocks, indices


class BlockMask:
    r"""A block-sparse attention mask: which KV blocks each block of query rows attends,
    ``BLOCK_SIZE`` = (Q_BLOCK_SIZE, KV_BLOCK_SIZE) tokens a block.

    Per row of query blocks, ``kv_num_blocks`` counts the partial blocks (where ``mask_mod``
    decides each position) and ``kv_indices`` lists their columns in order (entries past the
    count are undefined); ``full_kv_num_blocks``/``full_kv_indices`` list the blocks attended
    entirely (``mask_mod`` not consulted). ``q_num_blocks``/``q_indices`` and their ``full_``
    forms are the transposed layout (the backward pass reduces along Q), generated from the KV
    ones. ``dq_write_order``/``dq_write_order_full``/``dq_kv_order`` are the optional
    deterministic-dQ metadata of PyTorch's FLASH backward, carried as PyTorch carries them.
    """

    _TENSOR_ATTRS = ["kv_num_blocks", "kv_indices", "full_kv_num_blocks", "full_kv_indices",
                     "q_num_blocks", "q_indices", "full_q_num_blocks", "full_q_indices",
                     "dq_write_order", "dq_write_order_full", "dq_kv_order"]

    def __init__(self, seq_lengths, kv_num_blocks, kv_indices, full_kv_num_blocks,
                 full_kv_indices, q_num_blocks, q_indices, full_q_num_blocks, full_q_indices,
                 BLOCK_SIZE=(_DEFAULT_SPARSE_BLOCK_SIZE, _DEFAULT_SPARSE_BLOCK_SIZE),
                 mask_mod=noop_mask, *, dq_write_order=None, dq_write_order_full=None,
                 dq_kv_order=None, dq_kv_order_spt=None):
        if kv_indices.dim() < 2:
            raise RuntimeError("BlockMask must have at least 2 dimensions")
        if kv_num_blocks is None:
            raise AssertionError("kv_num_blocks must be provided")
        if (full_kv_num_blocks is None) != (full_kv_indices is None):
            raise AssertionError(
                "full_kv_num_blocks and full_kv_indices must be both provided or omitted")
        if (full_q_num_blocks is None) != (full_q_indices is None):
            raise AssertionError(
                "full_q_num_blocks and full_q_indices must be both provided or omitted")
        self.seq_lengths = seq_lengths
        self.kv_num_blocks = kv_num_blocks
        self.kv_indices = kv_indices
        self.full_kv_num_blocks = full_kv_num_blocks
        self.full_kv_indices = full_kv_indices
        self.q_num_blocks = q_num_blocks
        self.q_indices = q_indices
        self.full_q_num_blocks = full_q_num_blocks
        self.full_q_indices = full_q_indices
        if dq_write_order_full is not None and dq_write_order is None:
            raise ValueError("dq_write_order_full requires dq_write_order")
        self.dq_write_order = dq_write_order
        self.dq_write_order_full = dq_write_order_full
        self.dq_kv_order = dq_kv_order
        self.dq_kv_order_spt = dq_kv_order_spt
        self.BLOCK_SIZE = BLOCK_SIZE
        self.mask_mod = mask_mod

    @classmethod
    def from_kv_blocks(cls, kv_num_blocks, kv_indices, full_kv_num_blocks=None,
                       full_kv_indices=None, BLOCK_SIZE=_DEFAULT_SPARSE_BLOCK_SIZE,
                       mask_mod=None, seq_lengths=None, compute_q_blocks=True, *,
                       dq_write_order=None, dq_write_order_full=None, dq_kv_order=None):
        """A BlockMask from its KV layout; the Q layout is its transpose (when
        ``compute_q_blocks``), ``seq_lengths`` defaults to the blocks' extent, ``mask_mod`` to
        ``noop_mask``."""
        if kv_indices.dim() < 2:
            raise RuntimeError("BlockMask must have at least 2 dimensions")
        if (full_kv_num_blocks is None) != (full_kv_indices is None):
            raise AssertionError(
                "full_kv_num_blocks and full_kv_indices must be both provided or omitted")
        q_num_blocks = q_indices = full_q_num_blocks = full_q_indices = None
        if compute_q_blocks:
            q_num_blocks, q_indices = _transpose_ordered(kv_num_blocks, kv_indices)
            if full_kv_num_blocks is not None:
                full_q_num_blocks, full_q_indices = _transpose_ordered(full_kv_num_blocks,
                                                                       full_kv_indices)
        if isinstance(BLOCK_SIZE, int):
            BLOCK_SIZE = (BLOCK_SIZE, BLOCK_SIZE)
        mask_mod = mask_mod if mask_mod is not None else noop_mask
        if seq_lengths is None:
            seq_lengths = (kv_indices.shape[-2] * BLOCK_SIZE[0],
                           kv_indices.shape[-1] * BLOCK_SIZE[1])
        if dq_kv_order is not None and not isinstance(dq_kv_order, (bool, Tensor)):
            raise ValueError("dq_kv_order must be a bool, Tensor, or None")
        return cls(seq_lengths=seq_lengths, kv_num_blocks=kv_num_blocks, kv_indices=kv_indices,
                   full_kv_num_blocks=full_kv_num_blocks, full_kv_indices=full_kv_indices,
                   q_num_blocks=q_num_blocks, q_indices=q_indices,
                   full_q_num_blocks=full_q_num_blocks, full_q_indices=full_q_indices,
                   BLOCK_SIZE=BLOCK_SIZE, mask_mod=mask_mod, dq_write_order=dq_write_order,
                   dq_write_order_full=dq_write_order_full,
                   dq_kv_order=dq_kv_order if isinstance(dq_kv_order, Tensor) else None,
                   dq_kv_order_spt=dq_kv_order if isinstance(dq_kv_order, bool) else None)

    def as_tuple(self, flatten=True):
        """The attributes in PyTorch's order; with ``flatten`` the (Q, KV) pairs
        ``seq_lengths`` and ``BLOCK_SIZE`` are spread into two entries each."""
        if flatten:
            block_size = (self.BLOCK_SIZE[0], self.BLOCK_SIZE[1])
            seq_lengths = (self.seq_lengths[0], self.seq_lengths[1])
        else:
            block_size = (self.BLOCK_SIZE,)
            seq_lengths = (self.seq_lengths,)
        return (*seq_lengths, self.kv_num_blocks, self.kv_indices, self.full_kv_num_blocks,
                self.full_kv_indices, self.q_num_blocks, self.q_indices,
                self.full_q_num_blocks, self.full_q_indices, self.dq_write_order,
                self.dq_write_order_full, self.dq_kv_order, self.dq_kv_order_spt,
                *block_size, self.mask_mod)

    @property
    def shape(self):
        *batch_dims, _, _ = self.kv_indices.shape
        return tuple(batch_dims) + tuple(self.seq_lengths)

    def __str__(self):
        s = f"BlockMask(shape={self.shape}, sparsity={self.sparsity():.2f}%, \n"
        s += self.to_string().strip()
        s += "\n)"
        return s

    def __getitem__(self, index):
        """The BlockMask of the [batch, head, q_block] positions ``index`` selects (an int
        selects a length-1 slice: the dims stay); its mask_mod raises when used, since the
        original's cannot know the offsets."""
        if self.dq_kv_order is not None:
            raise NotImplementedError(
                "Slicing BlockMask with tensor dq_kv_order is not supported yet. "
                "Construct a new BlockMask with matching precomputed dq_write_order metadata.")
        index = (index,) if not isinstance(index, tuple) else index
        padded = (*index, slice(None), slice(None), slice(None))[:3]
        sizes = self.kv_num_blocks.shape[:3]
        index = tuple((slice(i + n, i + n + 1) if -n <= i < 0 else slice(i, i + 1))
                      if isinstance(i, int) else i for i, n in zip(padded, sizes))
        new_full_kv_num_blocks = new_full_kv_indices = None
        if self.full_kv_num_blocks is not None:
            new_full_kv_num_blocks = self.full_kv_num_blocks[index]
            new_full_kv_indices = self.full_kv_indices[index]
        new_block_mask = BlockMask.from_kv_blocks(
            self.kv_num_blocks[index], self.kv_indices[index], new_full_kv_num_blocks,
            new_full_kv_indices, BLOCK_SIZE=self.BLOCK_SIZE, mask_mod=_sliced_mask_mod_error,
            seq_lengths=self.seq_lengths, compute_q_blocks=self.q_indices is not None)
        return self._with_dq_order_of_self(new_block_mask)

    def _with_dq_order_of_self(self, new_block_mask):
        """``new_block_mask`` (cut from this one) with this mask's dq order settings, its
        write order recomputed when this one has one."""
        new_block_mask.dq_kv_order_spt = self.dq_kv_order_spt
        if self.dq_write_order is not None:
            (new_block_mask.dq_write_order,
             new_block_mask.dq_write_order_full) = _compute_dq_write_order_from_block_mask(
                new_block_mask, dq_kv_order=new_block_mask.dq_kv_order_spt)
        return new_block_mask

    def __repr__(self):
        def shape_or_none(x):
            return x.shape if x is not None else None

        return (
            f"BlockMask(\n"
            f"    kv_num_blocks={self.kv_num_blocks.shape},\n"
            f"    kv_indices={self.kv_indices.shape},\n"
            f"    full_kv_num_blocks={shape_or_none(self.full_kv_num_blocks)},\n"
            f"    full_kv_indices={shape_or_none(self.full_kv_indices)},\n"
            f"    q_num_blocks={shape_or_none(self.q_num_blocks)},\n"
            f"    q_indices={shape_or_none(self.q_indices)},\n"
            f"    full_q_num_blocks={shape_or_none(self.full_q_num_blocks)},\n"
            f"    full_q_indices={shape_or_none(self.full_q_indices)},\n"
            f"    BLOCK_SIZE={self.BLOCK_SIZE},\n"
            f"    shape={self.shape},\n"
            f"    sparsity={self.sparsity():.2f}%,\n"
            f"    mask_mod={getattr(self.mask_mod, '__name__', self.mask_mod)}\n"
            f")"
        )

    def _adjust(self, new_q_len, new_kv_len):
        """This mask cropped to its upper-left ``new_q_len`` x ``new_kv_len`` corner (right
        only for mask_mods that do not depend on the lengths)."""
        if self.dq_kv_order is not None:
            raise NotImplementedError(
                "Adjusting BlockMask with tensor dq_kv_order is not supported yet. "
                "Construct a new BlockMask with matching precomputed dq_write_order metadata.")
        new_num_rows = (new_q_len + self.BLOCK_SIZE[0] - 1) // self.BLOCK_SIZE[0]
        new_num_cols = (new_kv_len + self.BLOCK_SIZE[1] - 1) // self.BLOCK_SIZE[1]
        new_kv_num_blocks, new_kv_indices = _adjust_num_blocks_and_indices(
            self.kv_num_blocks, self.kv_indices, new_num_rows, new_num_cols)
        new_full_kv_num_blocks = new_full_kv_indices = None
        if self.full_kv_num_blocks is not None:
            new_full_kv_num_blocks, new_full_kv_indices = _adjust_num_blocks_and_indices(
                self.full_kv_num_blocks, self.full_kv_indices, new_num_rows, new_num_cols)
        new_block_mask = self.from_kv_blocks(
            new_kv_num_blocks, new_kv_indices, new_full_kv_num_blocks, new_full_kv_indices,
            BLOCK_SIZE=self.BLOCK_SIZE, mask_mod=self.mask_mod,
            seq_lengths=(new_q_len, new_kv_len), compute_q_blocks=self.q_indices is not None)
        return self._with_dq_order_of_self(new_block_mask)

    def numel(self):
        """Returns the number of elements (not accounting for sparsity) in the mask."""
        return functools.reduce(operator.mul, self.shape, 1)

    def sparsity(self):
        """Computes the percentage of blocks that are sparse (i.e. not computed)"""
        computed_blocks = self.kv_num_blocks.sum()
        if self.full_kv_num_blocks is not None:
            computed_blocks += self.full_kv_num_blocks.sum()
        computed_size = computed_blocks.item() * self.BLOCK_SIZE[0] * self.BLOCK_SIZE[1]
        return 100 * (1 - computed_size / self.numel())

    def to_dense(self):
        """The [..., Q blocks, KV blocks] int32 grid: 1 where a block is computed."""
        partial_dense = _ordered_to_dense(self.kv_num_blocks, self.kv_indices,
                                          self.kv_indices.shape[-1])
        if self.full_kv_num_blocks is not None:
            return partial_dense | _ordered_to_dense(self.full_kv_num_blocks,
                                                     self.full_kv_indices,
                                                     self.full_kv_indices.shape[-1])
        return partial_dense

    def to_string(self, grid_size=(20, 20), limit=4):
        """The block grid of each of the first ``limit`` (batch, head) pairs as text, two
        characters a cell of at most ``grid_size`` rows and columns: █ all computed, ░ some,
        blank none. ``grid_size=-1`` draws every block."""
        dense_mask = self.to_dense()
        *batch_dims, num_rows, num_cols = dense_mask.shape
        if isinstance(grid_size, int) and grid_size != -1:
            max_rows = max_cols = grid_size
        elif grid_size == -1:
            max_rows, max_cols = num_rows, num_cols
        else:
            max_rows, max_cols = grid_size

        def cdiv(a, b):
            return (a + (b - 1)) // b

        row_step = max(1, cdiv(num_rows, max_rows))
        col_step = max(1, cdiv(num_cols, max_cols))

        def summarize_section(section):
            percentage = section.float().mean().item()
            if percentage == 1:
                return "█"
            if percentage == 0:
                return " "
            return "░"

        def create_block_vis(*batch_idx):
            vis = f"{batch_idx}\n"
            cur_mask = dense_mask
            for idx in batch_idx:
                cur_mask = cur_mask[idx]
            for r in range(0, num_rows, row_step):
                for c in range(0, num_cols, col_step):
                    vis += summarize_section(cur_mask[r:r + row_step, c:c + col_step]) * 2
                vis += "\n"
            return vis

        total_vis = []
        for idx, batch_idx in enumerate(itertools.product(*[range(i) for i in batch_dims])):
            if idx == limit:
                total_vis.append("...")
                total_vis.append("To print out more, set BlockMask.to_string(limit=N)")
                total_vis.append("You can also index (BlockMask[batch, head]) to choose a "
                                 "specific batch or head")
                break
            total_vis.append(create_block_vis(*batch_idx))
        return "\n".join(total_vis)

    def to(self, device):
        """A new BlockMask with the tensors on ``device``."""
        moved = {attr: None if getattr(self, attr) is None else getattr(self, attr).to(device)
                 for attr in self._TENSOR_ATTRS}
        return BlockMask(seq_lengths=self.seq_lengths, **moved, BLOCK_SIZE=self.BLOCK_SIZE,
                         mask_mod=self.mask_mod, dq_kv_order_spt=self.dq_kv_order_spt)


def _broadcast_to_dim(x, dim):
    while x.dim() < dim:
        x = x.unsqueeze(0)
    return x


def _round_up_to_multiple(x, multiple):
    return (x + multiple - 1) // multiple * multiple


def _convert_mask_to_block_mask(mask, Q_BLOCK_SIZE=_DEFAULT_SPARSE_BLOCK_SIZE,
                                KV_BLOCK_SIZE=_DEFAULT_SPARSE_BLOCK_SIZE,
                                separate_full_blocks=False):
    """The int8 [B, H, Q blocks, KV blocks] grids of a boolean [B, H, Q, KV] mask (padded with
    False to whole blocks): blocks with some True, or with ``separate_full_blocks`` (partial
    blocks: some but not all True, full blocks: all True)."""
    if mask.dtype != ember.bool:
        raise AssertionError(f"mask.dtype must be ember.bool, got {mask.dtype}")
    mask = _broadcast_to_dim(mask, 4)
    mask = ember.nn.functional.pad(
        mask, (0, _round_up_to_multiple(mask.shape[-1], KV_BLOCK_SIZE) - mask.shape[-1],
               0, _round_up_to_multiple(mask.shape[-2], Q_BLOCK_SIZE) - mask.shape[-2]))
    B, H, Q, KV = mask.shape
    mask = mask.view(B, H, Q // Q_BLOCK_SIZE, Q_BLOCK_SIZE, KV // KV_BLOCK_SIZE, KV_BLOCK_SIZE)
    mask_block_sum = mask.permute(0, 1, 2, 4, 3, 5).sum(dim=[-2, -1])
    if separate_full_blocks:
        full_block_sum = Q_BLOCK_SIZE * KV_BLOCK_SIZE
        full_blocks = mask_block_sum == full_block_sum
        partial_blocks = (mask_block_sum > 0) & (mask_block_sum < full_block_sum)
        return partial_blocks.to(dtype=ember.int8), full_blocks.to(dtype=ember.int8)
    return (mask_block_sum > 0).to(dtype=ember.int8), None


def or_masks(*mask_mods):
    """Returns a mask_mod that's the union of provided mask_mods"""
    if not all(callable(arg) for arg in mask_mods):
        raise RuntimeError(f"All inputs should be callable mask_mods: {mask_mods}")

    def or_mask(b, h, q_idx, kv_idx):
        result = b.new_zeros((), dtype=ember.bool)
        for mask in mask_mods:
            result = result | mask(b, h, q_idx, kv_idx)
        return result

    return or_mask


def and_masks(*mask_mods):
    """Returns a mask_mod that's the intersection of provided mask_mods"""
    if not all(callable(arg) for arg in mask_mods):
        raise RuntimeError(f"All inputs should be callable mask_mods: {mask_mods}")

    def and_mask(b, h, q_idx, kv_idx):
        result = b.new_ones((), dtype=ember.bool)
        for mask in mask_mods:
            result = result & mask(b, h, q_idx, kv_idx)
        return result

    return and_mask


def _create_sparse_block_from_block_mask(block_mask, mask_mod, seq_lengths,
                                         Q_BLOCK_SIZE=_DEFAULT_SPARSE_BLOCK_SIZE,
                                         KV_BLOCK_SIZE=_DEFAULT_SPARSE_BLOCK_SIZE):
    partial_blocks, full_blocks = block_mask
    partial_bm = _dense_to_ordered(partial_blocks)
    full_bm = _dense_to_ordered(full_blocks) if full_blocks is not None else (None, None)
    return BlockMask.from_kv_blocks(partial_bm[0], partial_bm[1], full_bm[0], full_bm[1],
                                    BLOCK_SIZE=(Q_BLOCK_SIZE, KV_BLOCK_SIZE),
                                    mask_mod=mask_mod, seq_lengths=seq_lengths)


def _default_device(device):
    return device if device is not None else (ember.accelerator.current_accelerator() or "cpu")


def create_mask(mod_fn, B, H, Q_LEN, KV_LEN, device=None):
    r"""The boolean [B, H, Q_LEN, KV_LEN] mask of a mask_mod (its values), or of a score_mod
    (False where it gives -inf to a zero score). ``B``/``H`` None mean 1."""
    device = _default_device(device)
    B = 1 if B is None else B
    H = 1 if H is None else H
    b = ember.arange(0, B, device=device)
    h = ember.arange(0, H, device=device)
    m = ember.arange(0, Q_LEN, device=device)
    n = ember.arange(0, KV_LEN, device=device)
    mod_type = _get_mod_type(mod_fn)
    with TransformGetItemToIndex():
        if mod_type == _ModificationType.SCORE_MOD:
            score_mod = _vmap_for_bhqkv(mod_fn, prefix=(0,))
            out = score_mod(ember.zeros(B, H, Q_LEN, KV_LEN, device=device), b, h, m, n)
            return ember.where(ember.isneginf(out), False, True)
        return _vmap_for_bhqkv(mod_fn, prefix=())(b, h, m, n)


def _compute_dq_write_order_from_block_mask(block_mask, dq_kv_order=False):
    """The dQ write-order metadata of PyTorch's deterministic block-sparse FLASH backward: for
    each (KV block, entry of its ``q_indices``), the rank of that KV block among the KV blocks
    the query block attends (ascending, or descending with ``dq_kv_order``)."""
    q_indices = block_mask.q_indices
    full_q_indices = block_mask.full_q_indices
    if block_mask.q_num_blocks is None or q_indices is None:
        raise ValueError(
            "BlockMask must have q_num_blocks and q_indices to compute dq_write_order")
    kv_num_blocks, kv_indices = block_mask.kv_num_blocks, block_mask.kv_indices
    full_kv_num_blocks = block_mask.full_kv_num_blocks
    full_kv_indices = block_mask.full_kv_indices
    device = kv_indices.device
    shapes = [kv_indices.shape[:2], q_indices.shape[:2]]
    if full_kv_indices is not None:
        shapes.append(full_kv_indices.shape[:2])
    if full_q_indices is not None:
        shapes.append(full_q_indices.shape[:2])
    B, H = ember.broadcast_shapes(*shapes)

    def expand_bh(tensor):
        return tensor.expand(B, H, *tensor.shape[2:])

    kv_num_blocks, kv_indices = expand_bh(kv_num_blocks), expand_bh(kv_indices)
    num_m = kv_indices.shape[2]
    num_n = q_indices.shape[2]
    dense = _ordered_to_dense(kv_num_blocks, kv_indices, num_n)
    has_full = full_kv_num_blocks is not None
    if has_full:
        dense_full = _ordered_to_dense(expand_bh(full_kv_num_blocks),
                                       expand_bh(full_kv_indices), num_n)
        dense = (dense + dense_full).clamp(max=1)
    cumsum = dense.cumsum(dim=-1)
    rank_table = (cumsum - dense).to(ember.int32)
    if dq_kv_order:
        rank_table = (cumsum[:, :, :, -1:] - 1 - rank_table).to(ember.int32)

    def gather_write_order(bwd_idx):
        b_i = ember.arange(B, device=device)[:, None, None, None]
        h_i = ember.arange(H, device=device)[None, :, None, None]
        n_i = ember.arange(bwd_idx.shape[2], device=device)[None, None, :, None]
        m_vals = bwd_idx.long().clamp(0, num_m - 1)
        return rank_table[b_i, h_i, m_vals, n_i].to(ember.int32)

    dq_write_order_full = None
    if has_full and block_mask.full_q_num_blocks is not None and full_q_indices is not None:
        dq_write_order_full = gather_write_order(full_q_indices)
    return gather_write_order(q_indices), dq_write_order_full


def create_block_mask(mask_mod, B, H, Q_LEN, KV_LEN, device=None,
                      BLOCK_SIZE=_DEFAULT_SPARSE_BLOCK_SIZE, _compile=False,
                      separate_full_blocks=True, compute_dq_write_order=False,
                      dq_kv_order=True):
    r"""The BlockMask of a mask_mod over [B, H, Q_LEN, KV_LEN] (``B``/``H`` None mean 1):
    the mask is evaluated, padded to whole ``BLOCK_SIZE`` (an int, or (Q, KV)) blocks, and each
    block is full (all True; with ``separate_full_blocks``), partial (some True) or absent.
    ``compute_dq_write_order`` adds the FLASH backward's dQ write order in the ``dq_kv_order``
    scheduler order (True: descending)."""
    device = _default_device(device)
    if _get_mod_type(mask_mod) != _ModificationType.MASK_MOD:
        raise AssertionError(f"create-block_mask requires a mask_mod function! Got {mask_mod}")
    B = 1 if B is None else B
    H = 1 if H is None else H
    if isinstance(BLOCK_SIZE, int):
        Q_BLOCK_SIZE = KV_BLOCK_SIZE = BLOCK_SIZE
    else:
        Q_BLOCK_SIZE, KV_BLOCK_SIZE = BLOCK_SIZE
    if _compile:
        warnings.warn(
            "_compile flag on create_block_mask was originally added to work around a "
            "torch.compile limitation. That limitation has since been addressed. So, to compile "
            "create_block_mask, we suggest doing torch.compile(create_block_mask). This still "
            "works for now, but will be removed in the future.", DeprecationWarning,
            stacklevel=2)
        return ember.compile(create_block_mask)(
            mask_mod, B, H, Q_LEN, KV_LEN, device, BLOCK_SIZE, False, separate_full_blocks,
            compute_dq_write_order, dq_kv_order)
    if not isinstance(dq_kv_order, bool):
        raise ValueError("dq_kv_order must be a bool when using create_block_mask")
    mask_tensor = create_mask(mask_mod, B, H, Q_LEN, KV_LEN, device)
    partial_block_mask, full_block_mask = _convert_mask_to_block_mask(
        mask_tensor, Q_BLOCK_SIZE=Q_BLOCK_SIZE, KV_BLOCK_SIZE=KV_BLOCK_SIZE,
        separate_full_blocks=separate_full_blocks)
    block_mask = _create_sparse_block_from_block_mask(
        (partial_block_mask, full_block_mask), mask_mod, (Q_LEN, KV_LEN), Q_BLOCK_SIZE,
        KV_BLOCK_SIZE)
    if compute_dq_write_order:
        block_mask.dq_write_order, block_mask.dq_write_order_full = \
            _compute_dq_write_order_from_block_mask(block_mask, dq_kv_order=dq_kv_order)
        block_mask.dq_kv_order = None
        block_mask.dq_kv_order_spt = dq_kv_order
    return block_mask


def _create_empty_block_mask(query, key):
    r"""The block mask of no block mask: one block covering every query and key."""
    device = query.device
    return BlockMask.from_kv_blocks(
        kv_num_blocks=ember.ones([1, 1, 1], dtype=ember.int32, device=device),
        kv_indices=ember.zeros([1, 1, 1, 1], dtype=ember.int32, device=device),
        BLOCK_SIZE=_LARGE_SPARSE_BLOCK_SIZE, seq_lengths=(1, 1))


def _validate_kernel_options(query, kernel_options, return_aux):
    """PyTorch's checks of ``kernel_options`` (``_apply_kernel_options``): a known BACKEND, not
    with FORCE_USE_FLEX_ATTENTION, no internal keys, and no max scores where PyTorch's CPU
    kernels cannot return them."""
    kernel_options = {} if kernel_options is None else dict(kernel_options)
    if "BACKEND" in kernel_options and kernel_options.get("FORCE_USE_FLEX_ATTENTION", False):
        raise RuntimeError(
            "BACKEND cannot be combined with legacy FORCE_USE_FLEX_ATTENTION. "
            "BACKEND supersedes the legacy knob; please drop FORCE_USE_FLEX_ATTENTION "
            "and only specify the desired BACKEND.")
    backend = kernel_options.get("BACKEND", "AUTO")
    valid_backends = typing.get_args(_Backend)
    if backend not in valid_backends:
        raise ValueError(f"Invalid BACKEND value '{backend}'. Must be one of {valid_backends}")
    if "OUTPUT_LOGSUMEXP" in kernel_options:
        raise AssertionError("OUTPUT_LOGSUMEXP must not be in kernel_options")
    if "OUTPUT_MAX" in kernel_options:
        raise AssertionError("OUTPUT_MAX must not be in kernel_options")
    output_max = return_aux is not None and return_aux.max_scores
    if backend == "FLASH" and output_max:
        raise NotImplementedError(
            "Returning max scores is not supported with BACKEND='FLASH'. "
            "Use return_aux=AuxRequest(lse=True) or omit max_scores.")
    if query.device.type in ("cpu", "mps") and output_max:
        raise NotImplementedError("Returning max scores is not supported on CPU/MPS.")


def _validate_sdpa_input(query, key, value):
    if query.device != key.device or query.device != value.device:
        raise ValueError(
            f"Expected query, key, and value to have the same device type, "
            f"but got query.device: {query.device}, key.device: {key.device}, "
            f"and value.device: {value.device} instead.")
    if query.dim() < 2 or key.dim() < 2 or value.dim() < 2:
        raise ValueError(
            f"Expected query, key, and value to all be  at least 2 dimensional, but got "
            f"query.dim: {query.dim()}, key.dim: {key.dim()} and value.dim: {value.dim()} "
            f"instead.")


def _validate_embed_dim(query, key, value):
    if query.size(-1) != key.size(-1):
        raise ValueError(
            f"Expect query and key/value to have the same embedding dimension "
            f"but got E={query.size(-1)} and E={key.size(-1)}.")


def _validate_device(query):
    if query.device.type not in ("cuda", "cpu", "xpu", "hpu", "mps"):
        raise ValueError(
            "FlexAttention is only supported on CUDA, CPU, HPU, or MPS devices. "
            f"Found input tensors on {query.device.type} device.")


def _validate_no_nested_tensors(query, key, value):
    if query.is_nested or key.is_nested or value.is_nested:
        raise NotImplementedError(
            "flex_attention does not support NestedTensor inputs, including "
            "torch.compile(flex_attention) with jagged NestedTensor inputs. "
            "Convert inputs to dense tensors before calling flex_attention.")


def _validate_block_mask_lengths(block_mask, query, key):
    if block_mask.BLOCK_SIZE == (_LARGE_SPARSE_BLOCK_SIZE, _LARGE_SPARSE_BLOCK_SIZE):
        return  # the empty block mask: one block of any size
    q_len, kv_len = query.size(-2), key.size(-2)
    block_mask_q_len, block_mask_kv_len = block_mask.shape[-2], block_mask.shape[-1]
    if q_len > block_mask_q_len or kv_len > block_mask_kv_len:
        raise ValueError(
            f"block_mask was created for block_mask.shape={block_mask.shape} but got "
            f"q_len={q_len} and kv_len={kv_len}. As the block mask was created for a smaller "
            f"length than you're using it for, you likely need to create a new block mask.")
    if (q_len < block_mask_q_len and kv_len <= block_mask_kv_len) or \
            (q_len <= block_mask_q_len and kv_len < block_mask_kv_len):
        raise ValueError(
            f"block_mask was created for block_mask.shape={block_mask.shape} but got "
            f"q_len={q_len} and kv_len={kv_len}. As the block mask was created for a larger "
            f"length than you're using it for, you can either 1. create a new block mask with "
            f"the correct length, or 2. 'adjust' the existing block mask to the correct length "
            f"by calling block_mask._adjust(q_len, kv_len). This essentially 'crops' the block "
            f"mask to the upper left corner, which does not work for all mask_mods!")


def _block_membership(block_mask, b, h, m, n):
    """(partial, full): boolean [B, H, Q, KV] grids of the positions whose block the mask lists
    as partial and as full (full None without full blocks). A mask of batch or head size 1 (or
    any size, as PyTorch's kernels index it) repeats over the inputs' by the index modulo."""
    def expand(num_blocks, indices):
        dense = _broadcast_to_dim(_ordered_to_dense(num_blocks, indices, indices.shape[-1]), 4)
        Bm, Hm = dense.shape[:2]
        return dense[(b % Bm)[:, None, None, None], (h % Hm)[None, :, None, None],
                     (m // block_mask.BLOCK_SIZE[0])[None, None, :, None],
                     (n // block_mask.BLOCK_SIZE[1])[None, None, None, :]].bool()

    partial = expand(block_mask.kv_num_blocks, block_mask.kv_indices)
    if block_mask.full_kv_num_blocks is None:
        return partial, None
    return partial, expand(block_mask.full_kv_num_blocks, block_mask.full_kv_indices)


def _math_attention(query, key, value, score_mod, block_mask, scale):
    """(out, lse, max_scores) of PyTorch's eager ``math_attention``, with the blocks applied
    (see the module docstring). lse and max are in natural-log units, in the working precision
    (float64 for float64 queries, else float32)."""
    G = query.size(1) // key.size(1)
    value = ember.repeat_interleave(value, G, dim=1)
    key = ember.repeat_interleave(key, G, dim=1)
    Bq, Bkv = query.size(0), key.size(0)
    if not ((Bq == Bkv) or (Bq > 1 and Bkv == 1)):
        raise RuntimeError(f"Bq and Bkv must broadcast. Got Bq={Bq} and Bkv={Bkv}")
    key = key.expand((Bq, *key.size()[1:]))
    value = value.expand((Bq, *value.size()[1:]))

    working_precision = ember.float64 if query.dtype == ember.float64 else ember.float32
    scores = query.to(working_precision) @ key.to(working_precision).transpose(-2, -1)
    device = scores.device
    b = ember.arange(0, scores.size(0), device=device)
    h = ember.arange(0, scores.size(1), device=device)
    m = ember.arange(0, scores.size(2), device=device)
    n = ember.arange(0, scores.size(3), device=device)
    vmapped_score_mod = _vmap_for_bhqkv(score_mod, prefix=(0,))
    vmapped_mask_mod = _vmap_for_bhqkv(block_mask.mask_mod, prefix=())
    with TransformGetItemToIndex():
        scores = (scores * scale).to(working_precision)
        allowed = vmapped_mask_mod(b, h, m, n)
        modified = vmapped_score_mod(scores, b, h, m, n)
    partial, full = _block_membership(block_mask, b, h, m, n)
    allowed = allowed & partial
    if full is not None:
        allowed = allowed | full
    post_mod_scores = ember.where(
        allowed, modified, ember.tensor(-math.inf, dtype=working_precision, device=device))

    logsumexp = post_mod_scores.logsumexp(dim=-1)
    masked_rows = ember.all(post_mod_scores == -math.inf, dim=-1)
    logsumexp = ember.where(masked_rows, -math.inf, logsumexp)
    max_scores = ember.max(post_mod_scores, dim=-1)[0]
    probabilities = ember.ops.aten._safe_softmax(post_mod_scores, -1)
    out = probabilities.to(query.dtype) @ value.to(query.dtype)
    return out, logsumexp, max_scores


def _permute_strides(out, query_strides):
    """``out`` copied into the dim order of the query's strides (inner dims first by stride,
    ties inner first), with the last dim kept innermost: PyTorch gives flex_attention's output
    the query's layout."""
    fill_order = list(reversed(sorted(range(len(query_strides)), key=query_strides.__getitem__,
                                      reverse=True)))
    out_strides = _construct_strides(out.shape, fill_order)
    if out_strides[-1] != 1:
        last_dim = out.dim() - 1
        fill_order.remove(last_dim)
        out_strides = _construct_strides(out.shape, [last_dim] + fill_order)
    new_out = out.new_empty_strided(out.shape, out_strides)
    return new_out.copy_(out)


def _construct_strides(sizes, fill_order):
    strides = [0] * len(sizes)
    current_stride = 1
    for dim in fill_order:
        strides[dim] = current_stride
        current_stride *= sizes[dim]
    return strides


def flex_attention(query, key, value, score_mod=None, block_mask=None, scale=None,
                   enable_gqa=False, return_lse=False, kernel_options=None, *, return_aux=None):
    r"""Scaled dot product attention with ``score_mod(score, b, h, q_idx, kv_idx)`` applied to
    each score and ``block_mask`` choosing the attended positions (see the module docstring).

    query (B, Hq, L, E), key (B, Hkv, S, E), value (B, Hkv, S, Ev) give (B, Hq, L, Ev); with
    ``enable_gqa`` Hq is a multiple of Hkv and each KV head serves Hq/Hkv query heads. ``scale``
    defaults to 1/sqrt(E). ``return_aux=AuxRequest(lse=True, max_scores=True)`` adds an
    ``AuxOutput`` of the (B, Hq, L) log-sum-exp and maximum of the modified scores (-inf for a
    fully masked row, whose output is zeros); ``return_lse`` is its deprecated form."""
    _validate_no_nested_tensors(query, key, value)
    _validate_sdpa_input(query, key, value)
    _validate_embed_dim(query, key, value)
    _validate_device(query)
    if query.dim() != 4 or key.dim() != 4 or value.dim() != 4:
        raise NotImplementedError("NYI: query, key, and value must be 4D tensors")
    if (not enable_gqa) and query.size(-3) != key.size(-3):
        raise ValueError(
            f"Expect query and key/value to have the same number of heads "
            f"but got Hq={query.size(-3)} and Hkv={key.size(-3)}. "
            f"Try setting enable_gqa=True for GQA.")
    if enable_gqa:
        Hq, Hkv = query.size(1), key.size(1)
        if Hq % Hkv != 0:
            raise ValueError(
                f"Expect number of query heads to be a multiple of kv heads for GQA "
                f"but got Hq={Hq} and Hkv={Hkv}.")
    if query.size(0) != key.size(0):
        if block_mask is None:
            raise ValueError(
                f"Expect query and key/value to have the same batch size, "
                f"or non-none block_mask, "
                f"but got block_mask=None, Bq={query.size(0)}, and Bkv={key.size(0)}.")
        if block_mask.kv_num_blocks.size(0) != query.size(0):
            raise ValueError(
                f"Expect query and key/value to have the same batch size, "
                f"or block_mask and query to have the same batch size, "
                f"but got Bq={query.size(0)}, Bkv={key.size(0)}, "
                f"B_block_mask={block_mask.kv_num_blocks.size(0)}.")
    if score_mod is None:
        score_mod = _identity
    if block_mask is None:
        block_mask = _create_empty_block_mask(query, key)
    if getattr(block_mask, "mask_mod", None) is _sliced_mask_mod_error:
        raise RuntimeError("Cannot use mask_mod from a sliced BlockMask")
    _validate_block_mask_lengths(block_mask, query, key)
    if scale is None:
        scale = 1.0 / math.sqrt(query.size(-1))
    if query.device != block_mask.kv_num_blocks.device:
        raise RuntimeError(
            f"Expect q/k/v and block_mask to be on the same device "
            f"but got {query.device} and {block_mask.kv_num_blocks.device}.")
    if return_lse and return_aux is not None:
        raise ValueError(
            "Cannot specify both return_lse and return_aux. "
            "return_lse is deprecated, please use return_aux=AuxRequest(lse=True) instead.")
    if return_lse:
        _warn_once("deprecated_return_lse",
                   "return_lse is deprecated and will be removed in v2.10. "
                   "Please use return_aux=AuxRequest(lse=True) instead.",
                   category=FutureWarning)
    _validate_kernel_options(query, kernel_options, return_aux)

    out, lse, max_scores = _math_attention(query, key, value, score_mod, block_mask, scale)
    out = _permute_strides(out, query.stride())
    return_lse = return_lse or return_aux is not None and return_aux.lse
    lse = lse if (return_lse and lse.numel() > 0) else None
    if return_aux is not None:
        return_max = return_aux.max_scores and max_scores.numel() > 0
        return out, AuxOutput(lse=lse, max_scores=max_scores if return_max else None)
    if return_lse:
        return out, lse
    return out
