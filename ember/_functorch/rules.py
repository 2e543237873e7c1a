"""Batching rules written by hand, for ops no family rule serves.

Views and reshapes (the size argument gains the batch size), in-place view ops (the
BatchedTensor is re-pointed at the new view of its value), the matmul family and cdist's ops
(batch dims folded into their broadcasting), convolution (batched weights through
``groups``), layer and batch normalization, embedding, ``nll_loss`` and its backward (written
over logical ops, which are batched in turn), ``index``/``index_select`` with batched indices,
``copy_`` and the ``new_*`` factories. Each rule is registered on the overloads it names.
"""
from .._core import strides as _st
from .._core.device import contiguous_format
from .._kernels.composite.distance import _cdist_checks
from .batched_tensor import BatchedTensor, _set_value, make_batched
from .batching import (aten, batch_size, front, inplace_error, level_of, loop_fallback,
                       materialize, pad, rule, wrap, wrap_dim)


def _batched(x, level):
    return x.__class__ is BatchedTensor and x._level == level


# -- views and reshapes --------------------------------------------------------------------------

def _view_rule(name, aliasing):
    """view/reshape and friends: the size gains the batch size. ``aliasing`` ops must return a
    view; when the batch dim had to move, the physical view may not exist where the logical
    one does, and a copy (as reshape makes) is returned instead."""
    call = getattr(aten, name).default._call

    def view_batch_rule(self, size):
        level = self._level
        v, _ = front(self, level)
        size = (v._size[0],) + tuple(size)
        if not aliasing:
            return make_batched(call(v, size), 0, level)
        try:
            return make_batched(call(v, size), 0, level)
        except RuntimeError:
            if self._bdim == 0:
                raise
            return make_batched(aten.reshape.default._call(v, size), 0, level)
    return view_batch_rule


for _n, _alias in (("view", True), ("_unsafe_view", False), ("reshape", False),
                   ("view_copy", False), ("_reshape_copy", False), ("reshape_copy", False)):
    if hasattr(aten, _n):
        rule(f"aten::{_n}", origin="view")(_view_rule(_n, _alias))


@rule("aten::expand", "aten::expand_copy", origin="view")
def expand_rule(self, size, implicit=False):
    level = self._level
    v, _ = front(self, level)
    size = tuple(size)
    r = self.dim()
    if len(size) < r:
        raise RuntimeError(f"expand({self.dtype.__repr__().replace('ember', 'torch')}"
                           f"{{{list(self.shape)}}}, size={list(size)}): the number of sizes "
                           f"provided ({len(size)}) must be greater or equal to the number of "
                           f"dimensions in the tensor ({r})")
    v = pad(v, r, len(size))
    return make_batched(aten.expand.default._call(v, (v._size[0],) + size, implicit), 0, level)


@rule("aten::permute", origin="view")
def permute_rule(self, dims):
    level = self._level
    v, _ = front(self, level)
    r = self.dim()
    dims = [wrap_dim(d, r) + 1 for d in dims]
    if len(dims) != r:
        raise RuntimeError(f"permute(sparse_coo): number of dimensions in the tensor input does "
                           f"not match the length of the desired ordering of dimensions i.e. "
                           f"input.dim() = {r} is not equal to len(dims) = {len(dims)}")
    return make_batched(aten.permute.default._call(v, [0] + dims), 0, level)


@rule("aten::t", origin="view")
def t_rule(self):
    level = self._level
    r = self.dim()
    if r > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {r}D")
    if r < 2:
        return make_batched(self._value, self._bdim, level)
    v, _ = front(self, level)
    return make_batched(aten.transpose.int._call(v, 1, 2), 0, level)


@rule("aten::squeeze", origin="view")
def squeeze_rule(self):
    level = self._level
    dims = [d for d, s in enumerate(self._size) if s == 1]
    v, _ = front(self, level)
    return make_batched(aten.squeeze.dims._call(v, [d + 1 for d in dims]), 0, level)


@rule("aten::flatten.using_ints", origin="view")
def flatten_rule(self, start_dim=0, end_dim=-1):
    level = self._level
    r = self.dim()
    if r == 0:
        return make_batched(_flat0(self), 0, level)
    s, e = wrap_dim(start_dim, r), wrap_dim(end_dim, r)
    if s > e:
        raise RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
    v, _ = front(self, level)
    return make_batched(aten.flatten.using_ints._call(v, s + 1, e + 1), 0, level)


# -- as_strided ----------------------------------------------------------------------------------
# Inside vmap, ``x.as_strided(size, stride, offset)`` addresses each sample's own slice: sample i
# gets sizes ``size``, strides ``stride`` and storage offset ``offset + i * batch_stride`` -- as if
# every sample's storage began where the batch's does (PyTorch's as_strided_batching_rule). A
# loop over ``xs[i].as_strided(...)`` with an absolute offset would instead read the same memory
# for every i. The physical call is one as_strided with sizes [B, *size] and strides
# [batch_stride, *stride]; PyTorch first checks that the view stays inside the first sample's
# memory, since past it the samples would overlap.

def _max_location(size, stride, offset):
    """The last storage location a (size, stride, offset) view reaches (one past it, as
    PyTorch's maximum_indexable_location counts), or None when the view is empty."""
    if _st.numel(size) == 0:
        return None
    return _st.storage_extent(size, stride, offset)


def _check_as_strided_valid_for_slice(v, size, stride, storage_offset):
    """checkBasicAsStridedValidForSlice: ``v`` has its batch dim at 0."""
    base = v._offset
    offset = base if storage_offset is None else storage_offset
    reach = _max_location(size, stride, offset)
    if reach is None:
        return
    call = f"result = tensor.as_strided({list(size)}, {list(stride)}, {offset}) "
    tail = ("This is not supported inside of vmap, please try to rewrite the `as_strided` call "
            "as a sequence of PyTorch view operations")
    own = _max_location(v._size[1:], v._stride[1:], base)
    if own is None:
        raise RuntimeError(call + "can access memory outside of `tensor`. `tensor` has no "
                           "storage but the passed-in (size, stride, storage_offset) imply a "
                           "result with some storage. " + tail)
    if reach > own or offset < base:
        raise RuntimeError(call + f"can access memory outside of `tensor`. `result` can access "
                           f"some memory in range [{offset}, {reach}], but `tensor` can only "
                           f"access some memory in range [{base}, {own}]. " + tail)


def _as_strided_physical(name):
    call = getattr(aten, name).default._call

    def as_strided_batch_rule(self, size, stride, storage_offset=None):
        level = self._level
        v, _ = front(self, level)
        size, stride = tuple(size), tuple(stride)
        if len(size) != len(stride):
            raise RuntimeError(f"Tensor.as_strided(size, stride, ...): size and stride must "
                               f"have the same length! Got size {list(size)} and stride "
                               f"{list(stride)}")
        _check_as_strided_valid_for_slice(v, size, stride, storage_offset)
        return make_batched(call(v, (v._size[0],) + size, (v._stride[0],) + stride,
                                 storage_offset), 0, level)
    return as_strided_batch_rule


as_strided_rule = _as_strided_physical("as_strided")
rule("aten::as_strided", origin="view")(as_strided_rule)
rule("aten::as_strided_copy", origin="view")(_as_strided_physical("as_strided_copy"))


@rule("aten::as_strided_scatter", origin="scatter")
def as_strided_scatter_rule(self, src, size, stride, storage_offset=None):
    """Each sample's ``src`` goes into its own copy of ``self``: PyTorch's as_strided_scatter
    clones ``self`` (keeping a dense layout, storage offset 0) and writes ``src`` through
    ``as_strided`` on the clone, so the sample's offset and strides address that clone. The
    physical self is laid out the same way -- every sample one dense block of its own, in
    the order its clone would have, the batch outermost -- and one physical as_strided_scatter
    with sizes [B, *size] and strides [block, *stride] writes every sample. (PyTorch's vmap has
    no rule for this op and refuses it.)"""
    level = level_of((self, src))
    n = batch_size((self, src), level)
    size, stride = tuple(size), tuple(stride)
    lsize, lstride = tuple(self._size), tuple(self._stride)
    block = _st.numel(lsize)
    dense = _st.suggest_memory_format_strides(lsize, lstride)  # the sample clone's strides
    offset = 0 if storage_offset is None else storage_offset
    if (len(size) != len(stride) or any(x < 0 for x in size + stride) or offset < 0
            or _st.storage_extent(size, stride, offset) > max(block, 0)):
        # the sample's own as_strided would fail: raise its error, from the view kernel
        probe = aten.empty_strided.default._call(lsize, dense, self.dtype, None, self.device,
                                                 None)
        aten.as_strided.default._call(probe, size, stride, storage_offset)
    if tuple(src._size) != size:
        raise RuntimeError(f"expected src to have a size equal to the slice of self. src size "
                           f"= {list(src._size)}, slice size = {list(size)}")
    v = materialize(self, level, n)
    s = materialize(src, level, n)
    if v._stride != (block,) + dense:
        # lay the samples out as their clones would be: sample dims by falling stride, batch first
        order = sorted(range(len(lsize)), key=lambda d: -dense[d])
        perm = [0] + [d + 1 for d in order]
        inv = [perm.index(d) for d in range(len(perm))]
        v = aten.permute.default._call(
            aten.clone.default._call(aten.permute.default._call(v, perm), contiguous_format), inv)
    out = aten.as_strided_scatter.default._call(v, s, (n,) + size, (block,) + stride, offset)
    return make_batched(out, 0, level)


def _flat0(self):
    v, _ = front(self, self._level)
    return aten.reshape.default._call(v, (v._size[0], 1))


def _inplace_view(functional):
    """In-place view ops (``squeeze_``, ``t_``...): compute the view, re-point self at it."""
    def inplace_view_rule(self, *args):
        out = functional(self, *args)
        _set_value(self, out._value, out._bdim)
        return self
    return inplace_view_rule


for _q, _f in (("aten::squeeze_", lambda s: squeeze_rule(s)),
               ("aten::squeeze_.dim", lambda s, d: aten.squeeze.dim._call(s, d)),
               ("aten::squeeze_.dims", lambda s, d: aten.squeeze.dims._call(s, d)),
               ("aten::unsqueeze_", lambda s, d: aten.unsqueeze.default._call(s, d)),
               ("aten::t_", lambda s: t_rule(s)),
               ("aten::transpose_", lambda s, a, b: aten.transpose.int._call(s, a, b)),
               ("aten::as_strided_", None)):
    if _f is not None:
        rule(_q, origin="view")(_inplace_view(_f))


@rule("aten::contiguous", origin="view")
def contiguous_rule(self, memory_format=None):
    level = self._level
    v, _ = front(self, level)
    return make_batched(aten.clone.default._call(v, None) if not v.is_contiguous() else v,
                        0, level)


@rule("aten::repeat", origin="view")
def repeat_rule(self, repeats):
    level = self._level
    v, _ = front(self, level)
    r = self.dim()
    repeats = tuple(repeats)
    if len(repeats) < r:
        raise RuntimeError("Number of dimensions of repeat dims can not be smaller than number "
                           "of dimensions of tensor")
    v = pad(v, r, len(repeats))
    return make_batched(aten.repeat.default._call(v, (1,) + repeats), 0, level)


@rule("aten::roll", origin="dims")
def roll_rule(self, shifts, dims=()):
    level = self._level
    if not dims:
        flat = aten.flatten.using_ints._call(self, 0, -1)
        out = aten.roll.default._call(flat, shifts, [0])
        return aten.view.default._call(out, tuple(self._size))
    v, _ = front(self, level)
    r = self.dim()
    return make_batched(aten.roll.default._call(v, shifts, [wrap_dim(d, r) + 1 for d in dims]),
                        0, level)


# -- factories that take a size: the result is batched, as PyTorch's rules make it -------------

def _new_factory(name):
    def new_factory_rule(self, size, *rest):
        level = self._level
        b = self._value._size[self._bdim]
        out = getattr(aten, name).default._call(self._value, (b,) + tuple(size), *rest)
        return make_batched(out, 0, level)
    return new_factory_rule


for _n in ("new_zeros", "new_ones", "new_empty", "new_full"):
    rule(f"aten::{_n}", origin="factory")(_new_factory(_n))


# -- copy_ ------------------------------------------------------------------------------------

@rule("aten::copy_", origin="manual")
def copy_rule(self, src, non_blocking=False):
    level = level_of((self, src))
    if not _batched(self, level):
        inplace_error()
    v, _ = front(self, level)
    s, sb = front(src, level)
    if sb:
        s = pad(s, src.dim(), self.dim())
    aten.copy_.default._call(v, s, non_blocking)
    return self


# -- the matmul family ------------------------------------------------------------------------

def _mm_like(a, b, level):
    """Logical ``a @ b`` (a, b at least 2-D logically) on physical tensors: each batched
    operand has its batch dim at 0 and is padded to the other's rank, so matmul's broadcasting
    pairs the samples."""
    va, ba = front(a, level)
    vb, bb = front(b, level)
    ra, rb = a.dim(), b.dim()
    rank = max(ra, rb)
    if ba:
        va = pad(va, ra, rank)
    if bb:
        vb = pad(vb, rb, rank)
    if ba and not bb and rb == 2 and ra == 2:
        # (B, n, k) @ (k, m): fold the batch into the rows, one mm
        n, k = va._size[1:]
        out = aten.mm.default._call(aten.reshape.default._call(va, (-1, k)), vb)
        return make_batched(aten.view.default._call(out, (va._size[0], n, vb._size[1])), 0,
                            level)
    return make_batched(aten.matmul.default._call(va, vb), 0, level)


def _check_2d(name, a, b):
    if a.dim() != 2:
        raise RuntimeError("self must be a matrix")
    if b.dim() != 2:
        raise RuntimeError("mat2 must be a matrix")
    if a._size[1] != b._size[0]:
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({a._size[0]}x"
                           f"{a._size[1]} and {b._size[0]}x{b._size[1]})")


@rule("aten::mm", origin="matmul")
def mm_rule(self, mat2):
    _check_2d("mm", self, mat2)
    return _mm_like(self, mat2, level_of((self, mat2)))


@rule("aten::bmm", origin="matmul")
def bmm_rule(self, mat2):
    if self.dim() != 3 or mat2.dim() != 3:
        raise RuntimeError("batch1 must be a 3D tensor" if self.dim() != 3 else
                           "batch2 must be a 3D tensor")
    return _mm_like(self, mat2, level_of((self, mat2)))


@rule("aten::matmul", origin="matmul")
def matmul_rule(self, other):
    level = level_of((self, other))
    ra, rb = self.dim(), other.dim()
    if ra == 0 or rb == 0:
        raise RuntimeError(f"both arguments to matmul need to be at least 1D, but they are "
                           f"{ra}D and {rb}D")
    a = aten.unsqueeze.default._call(self, 0) if ra == 1 else self
    b = aten.unsqueeze.default._call(other, 1) if rb == 1 else other
    out = _mm_like(a, b, level)
    if rb == 1:
        out = aten.squeeze.dim._call(out, -1)
    if ra == 1:
        out = aten.squeeze.dim._call(out, -2 if rb != 1 else -1)
    return out


def _paired_samples(x1, x2, level):
    """Physical x1 and x2 whose broadcast batch dims pair the samples (as matmul's do)."""
    v1, b1 = front(x1, level)
    v2, b2 = front(x2, level)
    rank = max(x1.dim(), x2.dim())
    return (pad(v1, x1.dim(), rank) if b1 else v1), (pad(v2, x2.dim(), rank) if b2 else v2)


@rule("aten::_cdist_forward", origin="matmul")
def cdist_forward_rule(x1, x2, p, compute_mode):
    _cdist_checks(x1, x2)
    level = level_of((x1, x2))
    v1, v2 = _paired_samples(x1, x2, level)
    return make_batched(aten._cdist_forward.default._call(v1, v2, p, compute_mode), 0, level)


@rule("aten::_euclidean_dist", origin="matmul")
def euclidean_dist_rule(x1, x2):
    level = level_of((x1, x2))
    return make_batched(aten._euclidean_dist.default._call(*_paired_samples(x1, x2, level)), 0,
                        level)


@rule("aten::mv", origin="matmul")
def mv_rule(self, vec):
    return matmul_rule(self, vec)


@rule("aten::dot", "aten::vdot", origin="matmul")
def dot_rule(self, other):
    if self.dim() != 1 or other.dim() != 1:
        raise RuntimeError(f"1D tensors expected, but got {self.dim()}D and {other.dim()}D "
                           f"tensors")
    return aten.sum.default._call(aten.mul.Tensor._call(self, other), None)


@rule("aten::addmm", origin="matmul")
def addmm_rule(self, mat1, mat2, beta=1, alpha=1):
    return _add_scaled(self, mm_rule(mat1, mat2), beta, alpha)


@rule("aten::addmv", origin="matmul")
def addmv_rule(self, mat, vec, beta=1, alpha=1):
    return _add_scaled(self, matmul_rule(mat, vec), beta, alpha)


@rule("aten::baddbmm", origin="matmul")
def baddbmm_rule(self, batch1, batch2, beta=1, alpha=1):
    return _add_scaled(self, bmm_rule(batch1, batch2), beta, alpha)


@rule("aten::addbmm", origin="matmul")
def addbmm_rule(self, batch1, batch2, beta=1, alpha=1):
    prod = aten.sum.dim_IntList._call(bmm_rule(batch1, batch2), [0], False, None)
    return _add_scaled(self, prod, beta, alpha)


def _add_scaled(self, prod, beta, alpha):
    a = aten
    if alpha != 1:
        prod = a.mul.Scalar._call(prod, alpha)
    if beta == 0:  # self is ignored (its NaNs too), as in PyTorch
        return prod
    if beta != 1:
        self = a.mul.Scalar._call(self, beta)
    return a.add.Tensor._call(self, prod, 1)


@rule("aten::linear", origin="matmul")
def linear_rule(input, weight, bias=None):
    a = aten
    out = matmul_rule(input, a.t.default._call(weight) if weight.dim() == 2 else weight)
    if bias is not None:
        out = a.add.Tensor._call(out, bias, 1)
    return out


# -- convolution ------------------------------------------------------------------------------

@rule("aten::convolution", origin="convolution")
def convolution_rule(input, weight, bias, stride, padding, dilation, transposed, output_padding,
                     groups):
    a = aten
    level = level_of((input, weight, bias))
    conv = a.convolution.default._call
    wb = _batched(weight, level)
    bb = bias is not None and _batched(bias, level)
    if not wb and not bb:
        # fold the batch into N
        v, _ = front(input, level)
        b, n = v._size[:2]
        out = conv(a.reshape.default._call(v, (b * n,) + v._size[2:]), weight, bias, stride,
                   padding, dilation, transposed, output_padding, groups)
        return make_batched(a.view.default._call(out, (b, n) + out._size[1:]), 0, level)
    if transposed:
        return loop_fallback(a.convolution.default, (input, weight, bias, stride, padding,
                                                     dilation, transposed, output_padding,
                                                     groups))
    # batched weights: the B samples become B*groups groups over channels
    b = batch_size((input, weight, bias), level)
    x = materialize(input, level, b)             # (B, N, C, *s)
    w = materialize(weight, level, b)            # (B, O, C/g, *k)
    n, c = x._size[1:3]
    o = w._size[1]
    x = a.reshape.default._call(a.movedim.int._call(x, 0, 1), (n, b * c) + x._size[3:])
    w = a.reshape.default._call(w, (b * o,) + w._size[2:])
    if bias is not None:
        bias = a.reshape.default._call(materialize(bias, level, b), (b * o,))
    out = conv(x, w, bias, stride, padding, dilation, transposed, output_padding, groups * b)
    out = a.view.default._call(out, (n, b, o) + out._size[2:])
    return make_batched(out, 1, level)


# -- normalization ----------------------------------------------------------------------------

@rule("aten::native_layer_norm", origin="normalization")
def layer_norm_rule(input, normalized_shape, weight, bias, eps):
    a = aten
    level = level_of((input, weight, bias))
    v, ib = front(input, level)
    if not ib:
        v = materialize(input, level, batch_size((weight, bias), level))
    affine_batched = (weight is not None and _batched(weight, level)) or \
        (bias is not None and _batched(bias, level))
    if affine_batched:
        out, mean, rstd = a.native_layer_norm.default._call(v, normalized_shape, None, None, eps)
        out = make_batched(out, 0, level)
        if weight is not None:
            out = a.mul.Tensor._call(out, weight)
        if bias is not None:
            out = a.add.Tensor._call(out, bias, 1)
        return out, make_batched(mean, 0, level), make_batched(rstd, 0, level)
    return wrap(a.native_layer_norm.default._call(v, normalized_shape, weight, bias, eps), level)


@rule("aten::native_batch_norm", origin="normalization")
def batch_norm_rule(input, weight, bias, running_mean, running_var, training, momentum, eps):
    a = aten
    args = (input, weight, bias, running_mean, running_var)
    level = level_of(args)
    b = batch_size(args, level)
    stats_batched = [t is not None and _batched(t, level) for t in (running_mean, running_var)]
    if training and running_mean is not None and not all(stats_batched):
        raise RuntimeError(
            "Batch norm got a batched tensor as input while the running_mean or running_var, "
            "which will be updated in place, were not batched.\nIf you are using a module and "
            "do not need to update the running stats, use track_running_stats=False in the "
            "module constructor or set module.eval() before calling vmap.")
    x = materialize(input, level, b)                    # (B, N, C, *s)
    n, c = x._size[1:3]
    # each sample's statistics: move B next to C and treat (B, C) as the channels
    xs = a.reshape.default._call(a.movedim.int._call(x, 0, 1), (n, b * c) + x._size[3:])

    def flat(t):
        if t is None:
            return None
        if _batched(t, level):
            return a.reshape.default._call(front(t, level)[0], (b * c,))
        return a.repeat.default._call(t, (b,))
    rm, rv = running_mean, running_var
    frm = flat(rm) if rm is not None else None
    frv = flat(rv) if rv is not None else None
    out, mean, invstd = a.native_batch_norm.default._call(xs, flat(weight), flat(bias), frm, frv,
                                                          training, momentum, eps)
    if training and rm is not None:  # the updates landed in the flat copies: write them back
        a.copy_.default._call(rm, _unflat(frm, b, c, level), False)
        a.copy_.default._call(rv, _unflat(frv, b, c, level), False)
    out = a.view.default._call(out, (n, b, c) + out._size[2:])
    out = make_batched(out, 1, level)
    if mean._size and mean._size[0] == b * c:
        mean = make_batched(a.view.default._call(mean, (b, c)), 0, level)
        invstd = make_batched(a.view.default._call(invstd, (b, c)), 0, level)
    else:
        mean = make_batched(a.expand.default._call(a.unsqueeze.default._call(mean, 0),
                                                   (b,) + mean._size, False), 0, level)
        invstd = make_batched(a.expand.default._call(a.unsqueeze.default._call(invstd, 0),
                                                     (b,) + invstd._size, False), 0, level)
    return out, mean, invstd


def _unflat(t, b, c, level):
    return make_batched(aten.view.default._call(t, (b, c)), 0, level)


# -- embedding --------------------------------------------------------------------------------

@rule("aten::embedding", origin="manual")
def embedding_rule(weight, indices, padding_idx=-1, scale_grad_by_freq=False, sparse=False):
    a = aten
    level = level_of((weight, indices))
    emb = a.embedding.default._call
    if not _batched(weight, level):
        v, _ = front(indices, level)
        return make_batched(emb(weight, v, padding_idx, scale_grad_by_freq, sparse), 0, level)
    b = batch_size((weight, indices), level)
    w, _ = front(weight, level)                      # (B, V, D)
    nv = w._size[1]
    idx = materialize(indices, level, b)             # (B, *)
    offs = a.mul.Scalar._call(a.arange.start_step._call(0, b, 1, idx._dtype, None, idx._device,
                                                        None), nv)
    idx = a.add.Tensor._call(idx, a.view.default._call(offs, (b,) + (1,) * (idx.dim() - 1)), 1)
    pad_idx = padding_idx if padding_idx < 0 else -1
    out = emb(a.reshape.default._call(w, (b * nv,) + w._size[2:]), idx, pad_idx,
              scale_grad_by_freq, sparse)
    return make_batched(out, 0, level)


# -- losses: written over logical ops, which batch through their own rules ---------------------

def _nll_parts(self, target, weight, ignore_index):
    a = aten
    cdim = 0 if self.dim() == 1 else 1
    mask = a.ne.Scalar._call(target, ignore_index)
    safe = a.where.ScalarOther._call(mask, target, 0)
    picked = a.squeeze.dim._call(a.gather.default._call(self, cdim, a.unsqueeze.default._call(
        safe, cdim), False), cdim)
    w = a._to_copy.default._call(mask, self._dtype, None, None, None, False, None)
    if weight is not None:
        picked_w = a.index_select.default._call(weight, 0, a.reshape.default._call(safe, (-1,)))
        w = a.mul.Tensor._call(w, a.reshape.default._call(picked_w, tuple(safe._size)))
    return cdim, mask, safe, picked, w


@rule("aten::diag_embed", origin="manual")
def diag_embed_rule(self, offset=0, dim1=-2, dim2=-1):
    """The dims address the output (one more than the input): shifted past the batch dim."""
    level = level_of((self,))
    v, _ = front(self, level)
    r = self.dim() + 1
    return wrap(aten.diag_embed.default._call(v, offset, wrap_dim(dim1, r) + 1,
                                              wrap_dim(dim2, r) + 1), level)


@rule("aten::nll_loss_forward", origin="loss")
def nll_loss_forward_rule(self, target, weight, reduction, ignore_index):
    a = aten
    _check_nll(self, target)
    cdim, mask, safe, picked, w = _nll_parts(self, target, weight, ignore_index)
    losses = a.neg.default._call(a.mul.Tensor._call(picked, w))
    total = a.sum.default._call(w, None)
    if reduction == 0:  # PyTorch leaves total_weight at 0 without a reduction
        return losses, a.zeros_like.default._call(total, None, None, None, None, None)
    s = a.sum.default._call(losses, None)
    if reduction == 1:
        s = a.div.Tensor._call(s, total)
    return s, total


def _check_nll(self, target):
    if self.dim() < 1 or self.dim() > 2:
        raise ValueError(f"Expected 1 or more dimensions (got {self.dim()})"
                         if self.dim() < 1 else "input tensor should be 1D or 2D")
    if self.dim() == 2 and target.dim() == 1 and self._size[0] != target._size[0]:
        raise ValueError(f"Expected input batch_size ({self._size[0]}) to match target "
                         f"batch_size ({target._size[0]}).")


@rule("aten::nll_loss_backward", origin="loss")
def nll_loss_backward_rule(grad_output, self, target, weight, reduction, ignore_index,
                           total_weight):
    a = aten
    cdim, mask, safe, picked, w = _nll_parts(self, target, weight, ignore_index)
    g = a.neg.default._call(a.mul.Tensor._call(w, grad_output))
    if reduction == 1:
        g = a.div.Tensor._call(g, total_weight)
    zeros = a.zeros_like.default._call(self, None, None, None, None, None)
    return a.scatter.src._call(zeros, cdim, a.unsqueeze.default._call(safe, cdim),
                               a.unsqueeze.default._call(g, cdim))


# -- indexing ---------------------------------------------------------------------------------

@rule("aten::index_select", origin="indexing")
def index_select_rule(self, dim, index):
    a = aten
    level = level_of((self, index))
    r = self.dim()
    d = wrap_dim(dim, r) if r else 0
    if r == 0:
        return loop_fallback(a.index_select.default, (self, dim, index))
    if not _batched(index, level):
        v, _ = front(self, level)
        return make_batched(a.index_select.default._call(v, d + 1, index), 0, level)
    if index.dim() > 1:
        return loop_fallback(a.index_select.default, (self, dim, index))
    b = batch_size((self, index), level)
    x = materialize(self, level, b)                  # (B, ..., n, ...)
    idx, _ = front(index, level)                     # (B, k)
    k = idx._size[1] if idx.dim() > 1 else 1
    idx = a.reshape.default._call(idx, (b,) + (1,) * d + (k,) + (1,) * (r - d - 1))
    shape = list(x._size)
    shape[d + 1] = k
    idx = a.expand.default._call(idx, tuple(shape), False)
    return make_batched(a.gather.default._call(x, d + 1, idx, False), 0, level)


@rule("aten::index.Tensor", origin="indexing")
def index_rule(self, indices):
    a = aten
    level = level_of((self, indices))
    given = [i for i, t in enumerate(indices) if t is not None]
    adjacent = given == list(range(given[0], given[-1] + 1)) if given else True
    idx_batched = any(t is not None and _batched(t, level) for t in indices)
    if not adjacent or any(t is not None and t._dtype.__repr__().endswith("bool")
                           for t in indices):
        return loop_fallback(a.index.Tensor, (self, indices))
    if not idx_batched:
        v, _ = front(self, level)
        out = a.index.Tensor._call(v, [None] + list(indices))
        return make_batched(out, 0, level)
    if given[0] != 0:
        return loop_fallback(a.index.Tensor, (self, indices))
    b = batch_size((self, indices), level)
    x = materialize(self, level, b)
    phys = []
    ranks = max(t.dim() for t in indices if t is not None)
    for t in indices:
        if t is None:
            phys.append(None)
            continue
        v = materialize(t, level, b)
        phys.append(pad(v, t.dim(), ranks))
    ar = a.arange.start_step._call(0, b, 1, phys[0]._dtype, None, x._device, None)
    ar = a.view.default._call(ar, (b,) + (1,) * ranks)
    return make_batched(a.index.Tensor._call(x, [ar] + phys), 0, level)


# -- dropout: a mask drawn per element of the value (see randomness.py for the modes) ---------

_ALPHA = 1.7580993408473766


def dropout_impl(input, p, train, feature=False, alpha=False):
    """ATen's _dropout_impl over logical ops: a Bernoulli(1-p) mask (per element, or per
    feature map) scales the input; alpha dropout keeps the SELU mean and variance."""
    a = aten
    if p < 0 or p > 1:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if not train or p == 0 or input.numel() == 0:
        return input
    if p == 1:
        return a.mul.Tensor._call(input, a.zeros_like.default._call(input, None, None, None,
                                                                     None, None))
    if feature:
        if input.dim() < 2:
            raise RuntimeError("Feature dropout requires at least 2 dimensions in the input")
        shape = tuple(input._size[:2]) + (1,) * (input.dim() - 2)
        noise = a.new_empty.default._call(input, shape, None, None, None, None)
    else:
        noise = a.empty_like.default._call(input, None, None, None, None, None)
    noise = a.bernoulli_.float._call(noise, 1 - p, None)
    if alpha:
        scale = 1.0 / ((_ALPHA * _ALPHA * p + 1) * (1 - p)) ** 0.5
        shift = a.add.Scalar._call(a.mul.Scalar._call(a.add.Scalar._call(noise, -1, 1),
                                                      _ALPHA * scale), _ALPHA * scale * p, 1)
        return a.add.Tensor._call(a.mul.Tensor._call(input, a.mul.Scalar._call(noise, scale)),
                                  shift, 1)
    return a.mul.Tensor._call(input, a.div.Scalar._call(noise, 1 - p))


# -- elementwise losses: the unreduced loss is pointwise; the reduction is per sample ----------

def _reduce(loss, reduction):
    a = aten
    if reduction == 1:
        return a.mean.default._call(loss, None)
    if reduction == 2:
        return a.sum.default._call(loss, None)
    return loss


def _batch_both(args, first, count=2):
    """The loss kernels want input and target of one shape: batch the unbatched one too."""
    level = level_of(args[first:first + count])
    size = batch_size(args[first:first + count], level)
    for i in range(first, first + count):
        if not _batched(args[i], level):
            args[i] = make_batched(materialize(args[i], level, size), 0, level)
    return args


def _elementwise_loss(name):
    from .._dispatch import dispatcher as _d
    from .batching import pointwise_rule
    entry = _d.get_entry(f"aten::{name}")
    unreduced = pointwise_rule(entry)
    ri = [a.name for a in entry.schema.arguments].index("reduction")

    def loss_rule(*args):
        new = _batch_both(list(args), 0)
        new[ri] = 0
        return _reduce(unreduced(*new), args[ri])
    return loss_rule


def _elementwise_loss_backward(name):
    """Backward of an elementwise loss: linear in grad_output, so the unreduced backward at a
    ones grad_output, times grad_output (over the sample's numel for a mean)."""
    from .._dispatch import dispatcher as _d
    from .batching import pointwise_rule
    entry = _d.get_entry(f"aten::{name}")
    unreduced = pointwise_rule(entry)
    ri = [a.name for a in entry.schema.arguments].index("reduction")

    def loss_backward_rule(grad_output, self, *rest):
        a = aten
        reduction = rest[ri - 2]
        new = list(rest)
        new[ri - 2] = 0
        ones = a.ones_like.default._call(self, None, None, None, None, None)
        ones, self, target = _batch_both([ones, self, new[0]], 0, count=3)
        g = a.mul.Tensor._call(unreduced(ones, self, target, *new[1:]), grad_output)
        if reduction == 1:
            g = a.div.Scalar._call(g, max(self.numel(), 1))
        return g
    return loss_backward_rule


for _n in ("mse_loss", "binary_cross_entropy", "binary_cross_entropy_with_logits"):
    if hasattr(aten, _n):
        rule(f"aten::{_n}", origin="loss")(_elementwise_loss(_n))
for _n in ("mse_loss_backward", "binary_cross_entropy_backward"):
    if hasattr(aten, _n):
        rule(f"aten::{_n}", origin="loss")(_elementwise_loss_backward(_n))
