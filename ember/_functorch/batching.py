"""Batching rules: the FuncTorchBatched kernels, keyed by operator overload.

A rule receives the operator's arguments (positional, in schema order) where some tensors are
BatchedTensors. It peels off the highest level present (``level_of``), computes on the values
with ordinary operator calls (so lower levels and autograd see those calls), and wraps the
results at that level. Rules come from three places:

* **families**, generated here from the operator registry: every overload tagged ``pointwise``
  in native_functions.yaml (batch dims moved to the front and the logical ranks aligned for
  broadcasting, in-place variants writing through to the value), every ``reduction`` (the
  ``dim`` argument shifted past the batch dim, ``dim=None`` reducing the flattened sample),
  ops that take logical dims of ``self`` (softmax, cumsum, select, split, sort, gather, cat...),
  ops that keep the batch dim where it is (``_like`` factories, clone, detach, casts), and
  ops over trailing dims that accept any leading dims (pooling, triangular, linalg);
* **hand-written** rules in :mod:`ember._functorch.rules` (views and reshapes, matmul family,
  convolution, normalization, embedding, losses, indexing);
* everything else: a CompositeImplicitAutograd operator **decomposes** (its math kernel calls
  other operators, which are batched in turn); any other operator runs through the
  **loop-and-stack fallback**, one call per sample, with PyTorch's performance warning -- or
  PyTorch's error when ``ember._C._functorch._set_vmap_fallback_enabled(False)``.

:func:`coverage` (``ember.func.batching_rule_coverage()``) lists which path each op takes.
"""
import warnings

from .._core import strides as _st
from .._dispatch import dispatcher as _d
from .._dispatch.keys import K
from .._core.dtype import bool_ as _BOOL
from .._ops.overload import ops
from .batched_tensor import BatchedTensor, make_batched, raise_data_dependent, raise_item

aten = ops.aten  # ops resolve when called


# qualname -> where its rule comes from ("pointwise", "reduction", "manual", ...)
_rules = {}
_fallback_enabled = [True]


def register(qualname, fn, origin):
    """Register ``fn`` as the FuncTorchBatched kernel of one overload (``aten::add.Tensor``)."""
    entry = _d.get_entry(qualname)
    if entry is None:
        return False
    entry.register(K.FuncTorchBatched, _d.Kernel(fn, _d.PLAIN, f"batching rule ({origin})"))
    _rules[qualname] = origin
    return True


def rule(*qualnames, origin="manual"):
    """Decorator form of :func:`register` for hand-written rules."""
    def deco(fn):
        for q in qualnames:
            register(q, fn, origin)
        return fn
    return deco


# ---------------------------------------------------------------------------------------------
# Helpers every rule uses.

def level_of(args):
    """The highest batching level among the tensors in ``args`` (lists included)."""
    lvl = 0
    for a in args:
        if a.__class__ is BatchedTensor:
            if a._level > lvl:
                lvl = a._level
        elif a.__class__ in (list, tuple):
            for t in a:
                if t.__class__ is BatchedTensor and t._level > lvl:
                    lvl = t._level
    return lvl


def front(x, level):
    """(value with the batch dim at 0, True) for a tensor batched at ``level``; (x, False)
    otherwise."""
    if x.__class__ is BatchedTensor and x._level == level:
        v, bd = x._value, x._bdim
        if bd:
            v = aten.movedim.int._call(v, bd, 0)
        return v, True
    return x, False


def batch_size(args, level):
    for a in args:
        if a.__class__ is BatchedTensor and a._level == level:
            return a._value._size[a._bdim]
        if a.__class__ in (list, tuple):
            for t in a:
                if t.__class__ is BatchedTensor and t._level == level:
                    return t._value._size[t._bdim]
    raise AssertionError("no tensor batched at this level")


def materialize(x, level, size):
    """``x`` with a batch dim of ``size`` at 0: moved if batched at ``level``, else expanded."""
    v, b = front(x, level)
    if b:
        return v
    return aten.expand.default._call(aten.unsqueeze.default._call(x, 0),
                                       (size,) + tuple(x._size), False)


def pad(v, logical_rank, rank):
    """Insert size-1 dims after the batch dim so the logical rank becomes ``rank``."""
    for _ in range(rank - logical_rank):
        v = aten.unsqueeze.default._call(v, 1)
    return v


def wrap(out, level, bdim=0):
    """Wrap an op's result(s) at ``level`` (tensors, tuples and lists of tensors)."""
    if out is None:
        return None
    if out.__class__ in (tuple, list):
        return out.__class__(wrap(o, level, bdim) for o in out)
    if hasattr(out, "_keyset"):
        return make_batched(out, bdim, level)
    return out


def wrap_dim(d, rank):
    return _st.wrap_dim(d, rank)


def inplace_error():
    raise RuntimeError(
        "vmap: inplace arithmetic(self, *extra_args) is not possible because there exists a "
        "Tensor `other` in extra_args that has more elements than `self`. This happened due to "
        "`other` being vmapped over but `self` not being vmapped over in a vmap. Please try to "
        "use out-of-place operators instead of inplace arithmetic. If said operator is being "
        "called inside the PyTorch framework, please file a bug report instead.")


def _tensor_positions(schema):
    return [i for i, a in enumerate(schema.arguments) if a.base == "Tensor" and not a.is_list]


def _list_positions(schema):
    return [i for i, a in enumerate(schema.arguments) if a.base == "Tensor" and a.is_list]


def _write_positions(schema):
    return [i for i, a in enumerate(schema.arguments) if a.is_write]


def _is_out_variant(schema):
    return any(a.is_write and a.kwarg_only for a in schema.arguments)


# ---------------------------------------------------------------------------------------------
# Family: pointwise (tag ``pointwise``).

def _promoted_dtype(args, positions, level):
    """The dtype a logical 0-dim batched operand must take so that moving to physical shapes
    (where it gains a dim) does not change type promotion, or None when nothing to fix."""
    ts = [args[i] for i in positions if hasattr(args[i], "_keyset")]
    if len({t._dtype for t in ts}) < 2:
        return None
    if not any(t.__class__ is BatchedTensor and t._level == level and not t._size for t in ts):
        return None
    from .. import result_type
    return result_type(*ts)


def pointwise_rule(entry):
    schema = entry.schema
    positions = _tensor_positions(schema)
    writes = _write_positions(schema)
    call = entry.overload._call
    inplace = writes[0] if writes else None

    def pointwise_batch_rule(*args):
        level = level_of(args)
        ranks = [args[i].dim() for i in positions if hasattr(args[i], "_keyset")]
        rank = max(ranks) if ranks else 0
        fix = _promoted_dtype(args, positions, level)
        new = list(args)
        any_batched = False
        for i in positions:
            a = args[i]
            if a.__class__ is BatchedTensor and a._level == level:
                r = a.dim()
                if fix is not None and not r and a._dtype is not fix and \
                        a._dtype is not _BOOL and i != inplace:
                    a = aten._to_copy.default._call(a, fix, None, None, None, False, None)
                v, _ = front(a, level)
                new[i] = pad(v, r, rank)
                any_batched = True
        if inplace is not None:
            self = args[inplace]
            if not (self.__class__ is BatchedTensor and self._level == level) and any_batched:
                # the physical op raises PyTorch's broadcast error; it cannot succeed
                call(*new)
                inplace_error()
            call(*new)
            return self
        return wrap(call(*new), level)
    return pointwise_batch_rule


# ---------------------------------------------------------------------------------------------
# Family: ops that keep the batch dim where it is (one tensor in, same-shaped tensor out).

def same_bdim_rule(entry):
    call = entry.overload._call
    writes = _write_positions(entry.schema)

    def same_bdim_batch_rule(self, *rest):
        level = self._level if self.__class__ is BatchedTensor else level_of(rest)
        if not (self.__class__ is BatchedTensor and self._level == level):
            if writes:
                inplace_error()
            raise AssertionError("same_bdim rule without a batched self")
        out = call(self._value, *rest)
        if writes:
            return self
        return wrap(out, level, self._bdim)
    return same_bdim_batch_rule


# ---------------------------------------------------------------------------------------------
# Family: reductions (tag ``reduction``).

def _full_reduction_rules():
    a = aten
    # overload reducing every element -> (the dim overload, how to call it on (B, N))
    return {
        "aten::sum": lambda v, dtype=None: a.sum.dim_IntList._call(v, [1], False, dtype),
        "aten::mean": lambda v, dtype=None: a.mean.dim._call(v, [1], False, dtype),
        "aten::prod": lambda v, dtype=None: a.prod.dim_int._call(v, 1, False, dtype),
        "aten::max": lambda v: a.amax.default._call(v, [1], False),
        "aten::min": lambda v: a.amin.default._call(v, [1], False),
        "aten::all": lambda v: a.all.dim._call(v, 1, False),
        "aten::any": lambda v: a.any.dim._call(v, 1, False),
        "aten::std": lambda v, unbiased=True: a.std.dim._call(v, [1], unbiased, False),
        "aten::var": lambda v, unbiased=True: a.var.dim._call(v, [1], unbiased, False),
        "aten::std_mean": lambda v, unbiased=True: a.std_mean.dim._call(v, [1], unbiased, False),
        "aten::var_mean": lambda v, unbiased=True: a.var_mean.dim._call(v, [1], unbiased, False),
        "aten::norm.Scalar": lambda v, p=2: a.norm.ScalarOpt_dim._call(v, p, [1], False),
        "aten::norm.ScalarOpt_dtype": lambda v, p, dtype: a.norm.ScalarOpt_dim_dtype._call(
            v, p, [1], False, dtype),
    }


def _flat(v, level_size):
    # the size of a sample spelled out: with an empty batch, -1 would be ambiguous
    n = 1
    for s in v._size[1:]:
        n *= s
    return aten.reshape.default._call(v, (level_size, n))


def full_reduction_rule(qualname, how):
    def full_reduction_batch_rule(self, *rest):
        level = level_of((self,))
        v, _ = front(self, level)
        return wrap(how(_flat(v, v._size[0]), *rest), level)
    return full_reduction_batch_rule


def reduction_rule(entry):
    schema = entry.schema
    names = [a.name for a in schema.arguments]
    di = names.index("dim")
    ki = names.index("keepdim") if "keepdim" in names else None
    dim_arg = schema.arguments[di]
    call = entry.overload._call
    empty_means_all = dim_arg.is_list

    def reduction_batch_rule(*args):
        level = level_of(args)
        self = args[0]
        if not (self.__class__ is BatchedTensor and self._level == level):
            return loop_fallback(entry.overload, args)
        r = self.dim()
        v, _ = front(self, level)
        b = v._size[0]
        dim = args[di]
        keepdim = bool(args[ki]) if ki is not None else False
        new = list(args)
        all_dims = dim is None or (empty_means_all and len(dim) == 0)
        if all_dims or r == 0:
            if dim is not None and r == 0:  # a 0-dim tensor takes dims 0 and -1
                for d in (dim if isinstance(dim, (list, tuple)) else (dim,)):
                    wrap_dim(d, 0)
            new[0] = _flat(v, b)
            new[di] = [1] if dim_arg.is_list else 1
            if ki is not None:
                new[ki] = False
            out = call(*new)
            if keepdim:
                shape = (b,) + (1,) * r
                out = out.__class__(aten.reshape.default._call(o, shape) for o in out) \
                    if isinstance(out, (tuple, list)) else \
                    aten.reshape.default._call(out, shape)
            return wrap(out, level)
        if isinstance(dim, (list, tuple)):
            new[di] = [wrap_dim(d, r) + 1 for d in dim]
        else:
            new[di] = wrap_dim(dim, r) + 1
        new[0] = v
        return wrap(call(*new), level)
    return reduction_batch_rule


# ---------------------------------------------------------------------------------------------
# Family: ops taking logical dims of their tensor arguments.

def dim_rule(entry, dims=("dim",), extra=0, tensors="self"):
    """Shift the named int / int[] arguments past the batch dim. ``extra`` widens the range a
    dim wraps in (unsqueeze/stack address one more dim than the input has). ``tensors``:
    "self" -- only the first tensor may be batched; "all" -- every tensor and tensor list is
    materialized with the batch dim at 0 (ops whose tensors share a rank: gather, cat)."""
    schema = entry.schema
    names = [a.name for a in schema.arguments]
    idx = [names.index(n) for n in dims if n in names]
    tpos = _tensor_positions(schema)
    lpos = _list_positions(schema)
    call = entry.overload._call
    writes = _write_positions(schema)
    flatten_none = entry.qualname in _DIM_NONE_FLATTENS

    def dim_batch_rule(*args):
        level = level_of(args)
        new = list(args)
        if tensors == "self":
            first = lpos[0] if lpos and not tpos else tpos[0]
            others = [args[i] for i in tpos if i != first]
            if any(o.__class__ is BatchedTensor and o._level == level for o in others):
                return loop_fallback(entry.overload, args)
            if lpos and not tpos:
                ts = args[first]
                size = batch_size(ts, level)
                new[first] = [materialize(t, level, size) for t in ts]
                r = ts[0].dim()
            else:
                self = args[first]
                if not (self.__class__ is BatchedTensor and self._level == level):
                    return loop_fallback(entry.overload, args)
                r = self.dim()
                new[first], _ = front(self, level)
        else:
            size = batch_size(args, level)
            r = None
            for i in tpos:
                a = args[i]
                if a is not None and hasattr(a, "_keyset"):
                    if r is None:
                        r = a.dim()
                    new[i] = materialize(a, level, size)
            for i in lpos:
                ts = args[i]
                if r is None and ts:
                    r = ts[0].dim()
                new[i] = [materialize(t, level, size) for t in ts]
            if writes and not any(args[w].__class__ is BatchedTensor and
                                  args[w]._level == level for w in writes):
                inplace_error()
        for i in idx:
            d = args[i]
            if d is None:
                if flatten_none and tensors == "self":  # dim=None: the flattened sample
                    v = new[tpos[0]]
                    new[tpos[0]] = aten.reshape.default._call(v, (v._size[0], -1))
                    new[i] = 1
                continue
            if isinstance(d, (list, tuple)):
                new[i] = [wrap_dim(x, r + extra) + 1 for x in d]
            else:
                new[i] = wrap_dim(d, r + extra) + 1
        out = call(*new)
        if writes:
            return args[writes[0]]
        return wrap(out, level)
    return dim_batch_rule


# ---------------------------------------------------------------------------------------------
# Family: ops over trailing dims that take any number of leading dims (batch dim at front
# works as it is), or a fixed number (``keep``) of leading dims (the batch dim is folded into
# the first of them: pooling and resampling take (N, C, *spatial)).

def trailing_rule(entry, keep=None, tensors="self"):
    schema = entry.schema
    tpos = _tensor_positions(schema)
    call = entry.overload._call
    writes = _write_positions(schema)

    def trailing_batch_rule(*args):
        level = level_of(args)
        self = args[tpos[0]]
        others = [args[i] for i in tpos[1:]]
        if any(o.__class__ is BatchedTensor and o._level == level for o in others) or \
                not (self.__class__ is BatchedTensor and self._level == level):
            return loop_fallback(entry.overload, args)
        v, _ = front(self, level)
        new = list(args)
        if keep is None:
            new[tpos[0]] = v
            out = call(*new)
            return self if writes else wrap(out, level)
        r = self.dim()
        lead = v._size[:1 + r - keep]
        new[tpos[0]] = aten.reshape.default._call(v, (-1,) + v._size[1 + r - keep:])
        out = call(*new)

        def unfold(o):
            return aten.reshape.default._call(o, lead + o._size[1:])
        if isinstance(out, (tuple, list)):
            return wrap(out.__class__(unfold(o) for o in out), level)
        return wrap(unfold(out), level)
    return trailing_batch_rule


# ---------------------------------------------------------------------------------------------
# The fallback: decompose, or loop over the batch and stack.

def _qualname_for_message(op):
    return op._entry.qualname


def set_fallback_enabled(enabled):
    _fallback_enabled[0] = bool(enabled)


def get_fallback_enabled():
    return _fallback_enabled[0]


def loop_fallback(op, args):
    """Call ``op`` once per sample of the highest level and stack the results."""
    entry = op._entry
    name = _qualname_for_message(op)
    if not _fallback_enabled[0]:
        raise RuntimeError(f"{name} hit the vmap fallback which is currently disabled")
    warnings.warn(f"There is a performance drop because we have not yet implemented the "
                  f"batching rule for {name}. Please file us an issue on GitHub so that we can "
                  f"prioritize its implementation.", UserWarning, stacklevel=3)
    level = level_of(args)
    size = batch_size(args, level)
    writes = _write_positions(entry.schema)
    for w in writes:
        a = args[w]
        if hasattr(a, "_keyset") and not (a.__class__ is BatchedTensor and a._level == level):
            inplace_error()
    results = [op._call(*[_sample(a, i, level) for a in args]) for i in range(size)]
    if writes and all(r.alias for r in entry.schema.returns):
        out = tuple(args[w] for w in writes)
        return out[0] if len(out) == 1 else out
    return _stack_results(results, level, name)


def _sample(a, i, level):
    """Sample ``i`` of argument ``a`` at ``level`` (module-level: a nested function calling
    itself would keep the arguments alive in a reference cycle until the cyclic collector ran)."""
    if a.__class__ is BatchedTensor and a._level == level:
        return aten.select.int._call(a._value, a._bdim, i)
    if a.__class__ in (list, tuple) and any(
            t.__class__ is BatchedTensor and t._level == level for t in a):
        return a.__class__(_sample(t, i, level) for t in a)
    return a


def _stack_results(results, level, name):
    first = results[0]
    stack = aten.stack.default._call
    if first is None:
        return None
    if isinstance(first, (tuple, list)):
        cols = list(zip(*results))
        return first.__class__(_stack_results(list(c), level, name) for c in cols)
    if not hasattr(first, "_keyset"):
        raise RuntimeError(f"vmap: {name} returned a non-Tensor value; the vmap fallback "
                           f"supports only operators that return Tensors")
    return make_batched(stack(results, 0), 0, level)


def batched_fallback(op, *args, **kwargs):
    """The FuncTorchBatched backend fallback (boxed): decompose or loop."""
    entry = op._entry
    full = args + tuple(kwargs.values())
    k = entry._kernel(K.CompositeImplicitAutograd)
    if k is not None:
        return k.fn(*full)
    return loop_fallback(op, full)


# ---------------------------------------------------------------------------------------------
# Generation: walk the registry once and install the family rules.

# single-self ops whose int args name logical dims of self
_DIM_SELF = {
    "aten::_softmax": ("dim",), "aten::_log_softmax": ("dim",),
    "aten::softmax.int": ("dim",), "aten::log_softmax.int": ("dim",),
    "aten::cumsum": ("dim",), "aten::cumprod": ("dim",), "aten::cummax": ("dim",),
    "aten::cummin": ("dim",), "aten::logcumsumexp": ("dim",),
    "aten::select.int": ("dim",), "aten::slice.Tensor": ("dim",), "aten::narrow": ("dim",),
    "aten::split.Tensor": ("dim",), "aten::split_with_sizes": ("dim",),
    "aten::chunk": ("dim",), "aten::unbind.int": ("dim",), "aten::tensor_split.sections":
    ("dim",), "aten::tensor_split.indices": ("dim",),
    "aten::transpose.int": ("dim0", "dim1"), "aten::flip": ("dims",),
    "aten::movedim.int": ("source", "destination"),
    "aten::movedim.intlist": ("source", "destination"),
    "aten::diagonal": ("dim1", "dim2"), "aten::squeeze.dim": ("dim",),
    "aten::squeeze.dims": ("dim",), "aten::unflatten.int": ("dim",),
    "aten::sort": ("dim",), "aten::sort.stable": ("dim",), "aten::argsort": ("dim",),
    "aten::argsort.stable": ("dim",), "aten::topk": ("dim",), "aten::kthvalue": ("dim",),
    "aten::median.dim": ("dim",), "aten::nanmedian.dim": ("dim",), "aten::mode": ("dim",),
    "aten::index_select": ("dim",),
    "aten::glu": ("dim",), "aten::diff": ("dim",), "aten::cross.default": ("dim",),
    "aten::linalg_cross": ("dim",), "aten::normalize": ("dim",),
    "aten::repeat_interleave.self_int": ("dim",), "aten::unfold": ("dimension",),
    "aten::split_with_sizes_copy": ("dim",), "aten::select_backward": ("dim",),
}
# ops of _DIM_SELF whose dim=None means the flattened tensor
_DIM_NONE_FLATTENS = {"aten::repeat_interleave.self_int"}
# ops that address one more dim than their input has
_DIM_SELF_PLUS1 = {"aten::unsqueeze": ("dim",), "aten::unsqueeze_": ("dim",)}
# ops whose tensors share a rank: every one materialized
_DIM_ALL = {
    "aten::gather": ("dim",), "aten::scatter.src": ("dim",), "aten::scatter.value": ("dim",),
    "aten::scatter.reduce": ("dim",), "aten::scatter.value_reduce": ("dim",),
    "aten::scatter_add": ("dim",), "aten::scatter_reduce.two": ("dim",),
    "aten::scatter_.src": ("dim",), "aten::scatter_.value": ("dim",),
    "aten::scatter_add_": ("dim",),
    "aten::_softmax_backward_data": ("dim",), "aten::_log_softmax_backward_data": ("dim",),
    "aten::cat": ("dim",), "aten::take_along_dim": ("dim",),
}
_DIM_ALL_PLUS1 = {"aten::stack": ("dim",)}
# one tensor in, same shape out, sample-independent: the batch dim stays put
_SAME_BDIM = [
    "aten::clone", "aten::detach", "aten::alias", "aten::_to_copy", "aten::empty_like",
    "aten::zeros_like", "aten::ones_like", "aten::full_like", "aten::fill_.Scalar",
    "aten::zero_", "aten::detach_", "aten::lift_fresh", "aten::_conj", "aten::conj",
    "aten::resolve_conj", "aten::resolve_neg", "aten::_neg_view", "aten::positive",
    "aten::requires_grad_", "aten::_to_dense", "aten::fill.Scalar",
]
# batch dim at the front just works: the op maps over any leading dims
_TRAILING_ANY = [
    "aten::tril", "aten::triu", "aten::linalg_inv", "aten::linalg_det", "aten::det",
    "aten::logdet", "aten::inverse", "aten::linalg_cholesky", "aten::cholesky",
    "aten::linalg_matrix_exp", "aten::matrix_exp", "aten::linalg_slogdet",
    "aten::linalg_eigh", "aten::linalg_eigvalsh", "aten::linalg_qr", "aten::linalg_svd",
    "aten::linalg_svdvals", "aten::_linalg_svd", "aten::linalg_pinv", "aten::pinverse",
    "aten::pixel_shuffle", "aten::pixel_unshuffle",
    "aten::channel_shuffle", "aten::tril_", "aten::triu_", "aten::mT", "aten::adjoint",
    "aten::matrix_H", "aten::mH",
]
# ops taking (N, C, *spatial) (or one dim less, unbatched): the batch folds into N
_TRAILING_KEEP = {
    "aten::max_pool1d_with_indices": 2, "aten::max_pool2d_with_indices": 3,
    "aten::max_pool3d_with_indices": 4, "aten::avg_pool1d": 2, "aten::avg_pool2d": 3,
    "aten::avg_pool3d": 4, "aten::_adaptive_avg_pool2d": 3, "aten::adaptive_avg_pool2d": 3,
    "aten::adaptive_avg_pool1d": 2, "aten::adaptive_max_pool1d": 2,
    "aten::adaptive_max_pool2d": 3, "aten::adaptive_max_pool3d": 4,
    "aten::_adaptive_avg_pool3d": 4, "aten::adaptive_avg_pool3d": 4, "aten::max_pool1d": 2,
    "aten::max_pool2d": 3, "aten::max_pool3d": 4, "aten::upsample_nearest1d": 2,
    "aten::upsample_nearest2d": 3, "aten::upsample_nearest3d": 4,
    "aten::upsample_linear1d": 2, "aten::upsample_bilinear2d": 3,
    "aten::upsample_bicubic2d": 3, "aten::upsample_trilinear3d": 4,
    "aten::reflection_pad1d": 2, "aten::reflection_pad2d": 3, "aten::reflection_pad3d": 4,
    "aten::replication_pad1d": 2, "aten::replication_pad2d": 3,
    "aten::replication_pad3d": 4, "aten::constant_pad_nd": None,
    "aten::im2col": 3, "aten::col2im": 2,
}

_generated = [False]


def install():
    """Install the family rules and the fallback (once)."""
    if _generated[0]:
        return
    _generated[0] = True
    _d.register_fallback(K.FuncTorchBatched,
                         _d.Kernel(batched_fallback, _d.BOXED, "vmap fallback (decompose or loop)"))
    for q, how in _full_reduction_rules().items():
        register(q, full_reduction_rule(q, how), "reduction")
    for q, entry in list(_d._operators.items()):
        if entry.namespace != "aten" or q in _rules:
            continue
        schema = entry.schema
        if _is_out_variant(schema):
            continue
        names = [a.name for a in schema.arguments]
        if "pointwise" in entry.tags and all(not a.is_list for a in schema.arguments
                                             if a.base == "Tensor"):
            register(q, pointwise_rule(entry), "pointwise")
        elif "reduction" in entry.tags and "dim" in names:
            register(q, reduction_rule(entry), "reduction")
    for table, extra, tensors in ((_DIM_SELF, 0, "self"), (_DIM_SELF_PLUS1, 1, "self"),
                                  (_DIM_ALL, 0, "all"), (_DIM_ALL_PLUS1, 1, "all")):
        for q, dims in table.items():
            entry = _d.get_entry(q)
            if entry is not None:
                register(q, dim_rule(entry, dims, extra, tensors), "dims")
    # the view-copy ops (CompositeExplicitAutogradNonFunctional) batch through their composite
    # kernel, a view and a clone (PyTorch's FuncTorchBatchedDecomposition)
    for q, entry in list(_d._operators.items()):
        k = entry._kernel(K.CompositeExplicitAutogradNonFunctional)
        if "view_copy" in entry.tags and k is not None and q not in _rules:
            register(q, k.fn, "decomposition")
    for q in _SAME_BDIM:
        entry = _d.get_entry(q)
        if entry is not None:
            register(q, same_bdim_rule(entry), "same batch dim")
    for q in _TRAILING_ANY:
        entry = _d.get_entry(q)
        if entry is not None:
            register(q, trailing_rule(entry), "trailing dims")
    for q, keep in _TRAILING_KEEP.items():
        entry = _d.get_entry(q)
        if entry is not None:
            register(q, trailing_rule(entry, keep), "trailing dims")
    for q in ("aten::item", "aten::_local_scalar_dense"):
        register(q, lambda *a: raise_item(), "error")
    for q in ("aten::is_nonzero", "aten::equal", "aten::allclose"):
        register(q, lambda *a: raise_data_dependent(), "error")
    from . import rules  # noqa: F401  (hand-written rules register themselves)
    _install_forced_fallbacks()


# ops whose decomposition cannot run batched (quantile reads .item()): the loop-and-stack
# fallback, with its warning
_FORCED_FALLBACK = ("aten::quantile",
                    "aten::quantile.scalar", "aten::nanquantile", "aten::nanquantile.scalar")


def _install_forced_fallbacks():
    for q in _FORCED_FALLBACK:
        entry = _d.get_entry(q)
        if entry is not None:
            op = entry.overload
            entry.register(K.FuncTorchBatched, _d.Kernel(
                (lambda op: lambda *args: loop_fallback(op, args))(op), _d.PLAIN,
                "batching: loop-and-stack fallback (decomposition unsafe under vmap)"))


def coverage():
    """Which path each aten overload takes under vmap (out= overloads excluded): a dict with
    ``"rule"`` (a batching rule: {op: family}), ``"decomposition"`` (CompositeImplicitAutograd),
    ``"randomness"`` (handled by the randomness kernels) and ``"fallback"`` (loop and stack)."""
    install()
    out = {"rule": {}, "decomposition": [], "randomness": [], "fallback": []}
    for q, entry in sorted(_d._operators.items()):
        if entry.namespace != "aten" or _is_out_variant(entry.schema):
            continue
        if entry.has_kernel(K.FuncTorchVmapMode):
            out["randomness"].append(q)
        elif q in _FORCED_FALLBACK:
            out["fallback"].append(q)
        elif q in _rules:
            out["rule"][q] = _rules[q]
        elif entry.has_kernel(K.CompositeImplicitAutograd):
            out["decomposition"].append(q)
        else:
            out["fallback"].append(q)
    return out
