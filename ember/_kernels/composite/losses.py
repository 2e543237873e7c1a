"""CompositeImplicitAutograd kernels of the losses and bag ops PyTorch exposes at top level and
``nn.functional`` calls (``torch.cosine_embedding_loss``, ``margin_ranking_loss``,
``hinge_embedding_loss``, ``poisson_nll_loss``, ``triplet_margin_loss``, ``ctc_loss``,
``embedding_bag``): ATen's definitions (``Loss.cpp``, ``LossCTC.cpp``, ``EmbeddingBag.cpp``),
written in ember ops so autograd records the ops they call. ``reduction`` is ATen's enum (0 none,
1 mean, 2 sum); ``nn.functional`` turns the strings into it and keeps the Python-level checks.
"""
import math

import numpy as np

from ..._core import dtype as D
from ..._core.promotion import promote_types
from ..._ops.overload import ops
from ..rules.nn import check_loss_dtype

_aten = ops.aten
_EPSILON = 1e-12  # Loss.cpp's EPSILON
_MEAN, _SUM = 1, 2


def _apply_reduction(loss, reduction):
    """ATen's apply_loss_reduction: any other value leaves the loss unreduced."""
    if reduction == _MEAN:
        return loss.mean()
    if reduction == _SUM:
        return loss.sum()
    return loss


def _zero(like):
    return _aten.zeros_like.default._call(like, None, None, None, None, None)


def cosine_embedding_loss(input1, input2, target, margin=0.0, reduction=_MEAN):
    targ_dim = target.dim()
    if targ_dim not in (0, 1):
        raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
    want = 2 if targ_dim == 1 else 1
    if input1.dim() != want or input2.dim() != want:
        raise RuntimeError(f"{targ_dim}D target tensor expects {want}D input tensors, but found "
                           f"inputs with sizes {list(input1.shape)} and {list(input2.shape)}.")
    prod_sum = (input1 * input2).sum(targ_dim)
    mag_square1 = (input1 * input1).sum(targ_dim) + _EPSILON
    mag_square2 = (input2 * input2).sum(targ_dim) + _EPSILON
    cos = prod_sum / (mag_square1 * mag_square2).sqrt()
    zeros = _zero(cos)
    output = _aten.where.self._call(target == 1, 1 - cos, zeros) + \
        _aten.where.self._call(target == -1, (cos - margin).clamp_min(0), zeros)
    return _apply_reduction(output, reduction)


def hinge_embedding_loss(self, target, margin=1.0, reduction=_MEAN):
    zeros = _zero(self)
    # ATen's `margin - self` is a tensor of self's dtype filled with margin, minus self
    margin_clamp = _aten.full_like.default._call(self, margin, None, None, None, None,
                                                 None).sub_(self).clamp_min(0)
    output = _aten.where.self._call(target != 1, margin_clamp, zeros) + \
        _aten.where.self._call(target != -1, self, zeros)
    return _apply_reduction(output, reduction)


def margin_ranking_loss(input1, input2, target, margin=0.0, reduction=_MEAN):
    diff = input1 - input2  # (before -target, as ATen's compiled order has it)
    return _apply_reduction((-target * diff + margin).clamp_min(0), reduction)


def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2.0, eps=1e-6, swap=False,
                        reduction=_MEAN):
    a_dim, p_dim, n_dim = anchor.dim(), positive.dim(), negative.dim()
    if not a_dim == p_dim == n_dim:
        raise RuntimeError(f"The anchor, positive, and negative tensors are expected to have the "
                           f"same number of dimensions, but got: anchor {a_dim}D, positive "
                           f"{p_dim}D, and negative {n_dim}D inputs")
    distance = _aten.pairwise_distance.default._call
    dist_pos = distance(anchor, positive, p, eps, False)
    dist_neg = distance(anchor, negative, p, eps, False)
    if swap:
        dist_neg = _aten.min.other._call(dist_neg, distance(positive, negative, p, eps, False))
    return _apply_reduction((margin + dist_pos - dist_neg).clamp_min(0), reduction)


def poisson_nll_loss(input, target, log_input, full, eps, reduction):
    if log_input:
        loss = input.exp() - target * input
    else:
        loss = input - target * (input + eps).log()
    if full:
        stirling = target * target.log() - target + 0.5 * (2 * math.pi * target).log()
        loss = loss + stirling.masked_fill(target <= 1, 0)
    return _apply_reduction(loss, reduction)


# -- ctc_loss ----------------------------------------------------------------------------------

def _int_list(lengths, name):
    if hasattr(lengths, "_keyset"):
        if lengths.dtype._category != D.INTEGRAL:
            raise RuntimeError(f"{name} must be integral")
        return [int(v) for v in lengths.reshape(-1).tolist()]
    return [int(v) for v in lengths]


def ctc_loss_IntList(log_probs, targets, input_lengths, target_lengths, blank=0, reduction=_MEAN,
                     zero_infinity=False):
    """Connectionist Temporal Classification: the forward (alpha) recursion over time in log
    space, vectorized over the batch and the extended label sequence (one step per frame)."""
    check_loss_dtype("ctc_loss", log_probs)  # (ATen's kernel dispatches before its checks)
    batched = log_probs.dim() == 3
    if not batched:
        log_probs = log_probs.unsqueeze(1)
        targets = targets.unsqueeze(0) if targets.dim() == 1 else targets
    T, N, C = log_probs.shape
    il = _int_list(input_lengths, "input_lengths")
    tl = _int_list(target_lengths, "target_lengths")
    tg = targets.numpy()
    smax = 2 * max(tl + [0]) + 1
    ext = np.full((N, smax), blank, np.int64)
    offset = 0
    for b in range(N):  # per sample bookkeeping of label indices (not per element)
        lab = tg[b, :tl[b]] if tg.ndim == 2 else tg[offset:offset + tl[b]]
        offset += tl[b]
        ext[b, 1:2 * tl[b]:2] = lab
    s_len = np.array([2 * v + 1 for v in tl])
    valid = np.arange(smax)[None, :] < s_len[:, None]
    skip = np.zeros((N, smax), bool)
    skip[:, 2:] = (ext[:, 2:] != blank) & (ext[:, 2:] != ext[:, :-2])
    from ... import arange, cat, from_numpy, full
    neg_inf = full((), -math.inf, dtype=log_probs.dtype)
    ext_t = from_numpy(ext)
    bidx = arange(N).unsqueeze(1)
    skip_t = from_numpy(skip)

    def lse(*xs):
        m = xs[0]
        for x in xs[1:]:
            m = _aten.maximum.default._call(m, x)
        empty = m == -math.inf  # every term -inf: the result is -inf, with a zero gradient
        safe = _aten.where.self._call(empty, _zero(m), m)
        s = sum((x - safe).exp() for x in xs)
        s = _aten.where.self._call(empty, _aten.ones_like.default._call(s, None, None, None,
                                                                      None, None), s)
        return _aten.where.self._call(empty, neg_inf, s.log() + safe)

    start = np.zeros((N, smax), bool)
    start[:, 0] = True
    start[:, 1] = np.array(tl) > 0 if smax > 1 else False
    alpha = _aten.where.self._call(from_numpy(start & valid), log_probs[0][bidx, ext_t], neg_inf)
    for t in range(1, T):  # the recursion runs over time steps
        shift1 = cat([neg_inf.expand(N, 1), alpha[:, :-1]], 1)
        shift2 = cat([neg_inf.expand(N, 2), alpha[:, :-2]], 1) if smax > 2 else \
            neg_inf.expand(N, smax)
        shift2 = _aten.where.self._call(skip_t, shift2, neg_inf)
        new = lse(alpha, shift1, shift2) + log_probs[t][bidx, ext_t]
        active = from_numpy((np.array(il) > t)[:, None] & valid)
        alpha = _aten.where.self._call(active, new,
                                       _aten.where.self._call(from_numpy(valid), alpha, neg_inf))
    idx_last = from_numpy(np.stack([s_len - 1, np.maximum(s_len - 2, 0)], 1))
    ends = alpha[arange(N).unsqueeze(1), idx_last]
    ends = _aten.where.self._call(from_numpy(np.stack([np.ones(N, bool), np.array(tl) > 0], 1)),
                                  ends, neg_inf)
    nll = -lse(ends[:, 0], ends[:, 1])
    # PyTorch's CTC backward returns exp(log_probs) - (alpha-beta term): the gradient with
    # respect to the logits behind a log_softmax. A term of value zero whose gradient is
    # exp(log_probs) on each sample's frames gives ember's autograd the same gradient.
    frames = from_numpy((np.arange(T)[:, None] < np.array(il)[None, :])[..., None])
    mass = (log_probs.exp() * frames.to(log_probs.dtype)).sum((0, 2))
    nll = nll + (mass - mass.detach())
    if zero_infinity:
        nll = _aten.where.self._call(nll == math.inf, _zero(nll), nll)
    if reduction == _MEAN:
        lengths = from_numpy(np.maximum(np.array(tl), 1)).to(nll.dtype)
        return (nll / lengths).mean()
    if reduction == _SUM:
        return nll.sum()
    return nll if batched else nll.squeeze(0)


def ctc_loss_Tensor(log_probs, targets, input_lengths, target_lengths, blank=0, reduction=_MEAN,
                    zero_infinity=False):
    return ctc_loss_IntList(log_probs, targets, _int_list(input_lengths, "input_lengths"),
                            _int_list(target_lengths, "target_lengths"), blank, reduction,
                            zero_infinity)


# -- embedding_bag -----------------------------------------------------------------------------

_BAG_SUM, _BAG_MEAN, _BAG_MAX = 0, 1, 2
_BAG_WEIGHT_DTYPES = (D.float16, D.bfloat16, D.float32, D.float64)
# ATen's fast path of mode='sum' (embedding_bag_fast_path_sum) computes no offset2bag
_FAST_SUM_DTYPES = (D.float16, D.bfloat16, D.float32)


_LEGACY_CLASS_DTYPES = (D.uint8, D.int8, D.int16, D.int32, D.int64, D.float16, D.float32,
                        D.float64)


def _check_bag_type(t, name, allowed):
    if t.dtype not in allowed:
        names = ", ".join(d._short for d in allowed)
        # ATen names a tensor's type by its legacy Python class where the dtype has one
        # (torch.LongTensor), else as its legacy Type (backend + scalar type: CPUBoolType)
        kind = t.type() if t._dtype in _LEGACY_CLASS_DTYPES else \
            f"{t._device.type.upper()}{t._dtype._short}Type"
        raise RuntimeError(f"Expected tensor for argument #1 '{name}' to have one of the following "
                           f"scalar types: {names}; but got {kind} instead (while checking "
                           f"arguments for embedding_bag)")


def _check_bag_arguments(weight, indices, offsets, mode, per_sample_weights, include_last_offset):
    """ATen's check_arguments of _embedding_bag."""
    _check_bag_type(indices, "indices", (D.int64, D.int32))
    _check_bag_type(offsets, "offsets", (D.int64, D.int32))
    _check_bag_type(weight, "weight", _BAG_WEIGHT_DTYPES)
    if offsets.numel():
        first = int(offsets[0])
        if first != 0:
            # (ATen prints offsets[0], a 0-dim tensor, with its type)
            raise RuntimeError(f"offsets[0] has to be 0, i.e., the first sequence in the "
                               f"mini-batch has to start from position 0. However, got {first}"
                               f"\n[ {offsets.type()}{{}} ]")
        last = int(offsets[-1])
        if last > indices.size(0):
            raise RuntimeError(f"offsets[-1] can not be greater than input's length "
                               f"{indices.size(0)} but got offsets[-1] of {last}")
    if mode not in (_BAG_SUM, _BAG_MEAN, _BAG_MAX):
        raise RuntimeError("`mode` must be sum, mean, or max.")
    if per_sample_weights is not None:
        if mode != _BAG_SUM:
            raise RuntimeError("embedding_bag: per_sample_weights only supported with mode='sum'")
        if per_sample_weights.dtype is not weight.dtype:
            raise RuntimeError(f"expected per_sample_weights to have the same dtype as weight "
                               f"({weight.dtype}), but got {per_sample_weights.dtype}")
        if per_sample_weights.dim() != 1 or per_sample_weights.numel() != indices.numel():
            raise RuntimeError(f"per_sample_weights.numel() ({per_sample_weights.numel()}) must "
                               f"equal indices.numel() ({indices.numel()})")
    if include_last_offset and offsets.numel() < 1:
        raise RuntimeError("include_last_offset: number of offset should be at least 1")


def embedding_bag(weight, indices, offsets, scale_grad_by_freq=False, mode=_BAG_MEAN,
                  sparse=False, per_sample_weights=None, include_last_offset=False):
    return embedding_bag_padding_idx(weight, indices, offsets, scale_grad_by_freq, mode, sparse,
                                     per_sample_weights, include_last_offset, None)


def embedding_bag_padding_idx(weight, indices, offsets, scale_grad_by_freq, mode, sparse,
                              per_sample_weights, include_last_offset, padding_idx):
    """Returns (output, offset2bag, bag_size, max_indices) as ATen's CPU kernel does: bags
    become rows of a padded (bags, longest bag) index matrix, one embedding gather, then a
    masked sum / mean / max over each row. offset2bag is each index's bag (empty on the fast
    path of mode='sum'), bag_size the count of non-padding indices of each bag (mean and max),
    max_indices the row each maximum came from (max; mean repeats bag_size; sum: zeros)."""
    n = weight.size(0)
    fast_sum = padding_idx is None
    if padding_idx is not None:
        if not -n <= padding_idx < n:
            raise RuntimeError(f"padding_idx must be within the number of embeddings, -{n} "
                               f"through {n - 1}, but got {padding_idx}")
        padding_idx %= n
    else:
        padding_idx = -1
    # ATen's promoteIndicesAndOffsets: both become promoteTypes(offsets, indices) before the
    # checks (int8 indices with int64 offsets are int64 indices; float ones stay refused)
    common = promote_types(offsets._dtype, indices._dtype)
    if indices._dtype is not common:
        indices = indices.to(common)
    if offsets._dtype is not common:
        offsets = offsets.to(common)
    _check_bag_arguments(weight, indices, offsets, mode, per_sample_weights, include_last_offset)
    if indices.dim() != 1:
        raise RuntimeError(f"input has to be a 1D Tensor, but got Tensor of dimension "
                           f"{indices.dim()}")
    from ... import from_numpy, full, zeros
    idx = np.asarray(indices.numpy(), np.int64)
    bad = np.flatnonzero((idx < 0) | (idx >= n))
    if bad.size:
        raise RuntimeError(f"Index {bad[0]} of input takes value {idx[bad[0]]} which is not in "
                           f"the valid range [0, {n})")
    off = np.asarray(offsets.numpy(), np.int64)
    starts = off[:-1] if include_last_offset else off
    ends = off[1:] if include_last_offset else np.append(off[1:], len(idx))
    bags = len(starts)
    lengths = np.maximum(ends - starts, 0)
    width = int(lengths.max()) if lengths.size else 0
    pos = starts[:, None] + np.arange(width)[None, :]
    valid = np.arange(width)[None, :] < lengths[:, None]
    rows = np.where(valid, idx[np.where(valid, pos, 0)] if len(idx) else 0, 0)
    psw = None
    if per_sample_weights is not None:
        psw = per_sample_weights[from_numpy(np.where(valid, pos, 0))]
    if padding_idx >= 0:
        valid = valid & (rows != padding_idx)
    index_dtype = indices.dtype
    fast_sum = fast_sum and mode == _BAG_SUM and weight.dtype in _FAST_SUM_DTYPES and \
        weight.stride(1) == 1 and (per_sample_weights is None or per_sample_weights.stride(0) == 1)
    if fast_sum:
        offset2bag = zeros((0,), dtype=index_dtype)
    else:
        bag_of = np.searchsorted(starts, np.arange(len(idx)), "right") - 1
        offset2bag = from_numpy(np.clip(bag_of, 0, max(bags - 1, 0))).to(index_dtype)
    counts = valid.sum(1).astype(np.int64)
    # mode='sum' leaves bag_size and max_indices zero, one per offset (include_last_offset's too)
    unused = zeros((len(off),), dtype=index_dtype)
    bag_size = unused if mode == _BAG_SUM else from_numpy(counts).to(index_dtype)
    if sparse and mode != _BAG_MAX:
        out = _sparse_bag(weight, rows, valid, psw, scale_grad_by_freq, mode)
        return out, offset2bag, bag_size, bag_size if mode == _BAG_MEAN else unused
    emb = _aten.embedding.default._call(weight, from_numpy(np.ascontiguousarray(rows)), -1,
                                        scale_grad_by_freq, False)
    mask = from_numpy(valid).unsqueeze(-1)
    if mode == _BAG_MAX:
        filled = _aten.where.self._call(mask, emb, full((), -math.inf, dtype=emb.dtype))
        out, arg = _aten.max.dim._call(filled, 1, False)
        nonempty = mask.any(1)
        out = _aten.where.self._call(nonempty, out, zeros((), dtype=emb.dtype))
        picked = from_numpy(rows).gather(1, arg)
        max_indices = _aten.where.self._call(nonempty, picked, zeros((), dtype=picked.dtype))
        return out, offset2bag, bag_size, max_indices.to(index_dtype)
    m = mask.to(emb.dtype)
    if psw is not None:
        m = m * psw.unsqueeze(-1)
    out = (emb * m).sum(1)
    if mode == _BAG_MEAN:
        out = out / from_numpy(np.maximum(counts, 1)).unsqueeze(-1).to(emb.dtype)
        return out, offset2bag, bag_size, bag_size
    return out, offset2bag, bag_size, unused


def _sparse_bag(weight, rows, valid, psw, scale_grad_by_freq, mode):
    """sparse=True, sum or mean: one embedding row per index that counts (no padding), so the
    weight's sparse gradient lists exactly those, in input order (PyTorch's)."""
    from ... import from_numpy, zeros
    bag, pos = np.nonzero(valid)
    emb = _aten.embedding.default._call(weight, from_numpy(np.ascontiguousarray(rows[bag, pos])),
                                        -1, scale_grad_by_freq, True)
    bag_t = from_numpy(bag.astype(np.int64))
    if psw is not None:
        emb = emb * psw[bag_t, from_numpy(pos.astype(np.int64))].unsqueeze(-1)
    out = zeros((rows.shape[0], weight.size(1)), dtype=emb.dtype).index_add(0, bag_t, emb)
    if mode == _BAG_MEAN:
        count = from_numpy(np.maximum(valid.sum(1), 1).astype(np.int64)).unsqueeze(-1)
        out = out / count.to(emb.dtype)
    return out
