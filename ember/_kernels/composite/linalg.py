"""Linear-algebra ops that PyTorch decomposes (CompositeImplicitAutograd), in ember ops as ATen
writes them: products (inner, outer, tensordot, kron, multi_dot, chain_matmul, einsum), the
checked forms of the *_ex solvers (linalg_inv, linalg_solve, linalg_cholesky raise LinAlgError
on a non-zero info), det/slogdet/svd/eigh wrappers, norms, pinv, matrix_rank, matrix_power.

einsum contracts two operands at a time with one ``bmm`` each, in the order ``opt_einsum``
chooses when ``ember.backends.opt_einsum`` is enabled (left to right otherwise), as PyTorch."""
import math
import warnings

from ..._core import dtype as D
from ..._core import strides as _st
from ..._ops.overload import ops
from ..generic import resize_output
from ..rules.linalg import (check_float, check_lstsq_matrix_rank_dtype, check_pinv_dtype,
                            check_square)


A = ops.aten


def _reshape(t, shape):
    return A.reshape.default._call(t, tuple(shape))


def _mH(t):
    """The conjugate transpose (PyTorch's ``mH``: a lazy conjugate of the transpose)."""
    return A.conj.default._call(A.transpose.int._call(t, -2, -1))


def _check_errors(info, api_name, is_matrix):
    A._linalg_check_errors.default._call(info, api_name, is_matrix)


# -- products ------------------------------------------------------------------------------------

def tensordot(self, other, dims_self, dims_other):
    if len(dims_self) != len(dims_other):
        raise RuntimeError("both dimension lists should have same length")
    ds = [_st.wrap_dim(d, self.dim()) for d in dims_self]
    do = [_st.wrap_dim(d, other.dim()) for d in dims_other]
    for a, b in zip(ds, do):
        if self._size[a] != other._size[b]:
            raise RuntimeError(f"contracted dimensions need to match, but first has size "
                               f"{self._size[a]} in dim {a} and second has size "
                               f"{other._size[b]} in dim {b}")
    free_s = [d for d in range(self.dim()) if d not in ds]
    free_o = [d for d in range(other.dim()) if d not in do]
    k = math.prod(self._size[d] for d in ds)
    ls = _reshape(A.permute.default._call(self, free_s + ds),
                  (math.prod(self._size[d] for d in free_s), k))
    ro = _reshape(A.permute.default._call(other, do + free_o),
                  (k, math.prod(other._size[d] for d in free_o)))
    r = A.mm.default._call(ls, ro)
    return _reshape(r, [self._size[d] for d in free_s] + [other._size[d] for d in free_o])


def inner(self, other):
    if self.dim() == 0 or other.dim() == 0:
        return A.mul.Tensor._call(self, other)
    if self._size[-1] != other._size[-1]:
        raise RuntimeError(f"inner() the last dimension must match on both input tensors but "
                           f"got shapes {_st._fmt_list(self._size)} and "
                           f"{_st._fmt_list(other._size)}")
    if self.dim() == 1 and other.dim() == 1:  # (ATen's tensordot of two vectors: a view of dot)
        return A.view.default._call(A.dot.default._call(self, other), ())
    return tensordot(self, other, [-1], [-1])


def outer(self, vec2):
    for t, name in ((self, "self"), (vec2, "vec2")):
        if t.dim() != 1:
            raise RuntimeError(f"outer: Expected 1-D argument {name}, but got {t.dim()}-D")
    return A.mul.Tensor._call(_reshape(self, (self._size[0], 1)), vec2)


def ger(self, vec2):
    return outer(self, vec2)


def kron(self, other):
    n = max(self.dim(), other.dim())
    sa = (1,) * (n - self.dim()) + tuple(self._size)
    sb = (1,) * (n - other.dim()) + tuple(other._size)
    a = _reshape(self, [x for s in sa for x in (s, 1)])
    b = _reshape(other, [x for s in sb for x in (1, s)])
    product, shape = A.mul.Tensor._call(a, b), [x * y for x, y in zip(sa, sb)]
    # ATen's _unsafe_view of the fresh product: the result is not a view
    if _st.compute_view_stride(product._size, product._stride, shape) is None:
        return _reshape(product, shape)
    return A._unsafe_view.default._call(product, shape)


def _chain_order(dims):
    """Matrix-chain order by dynamic programming: split[i][j] of the cheapest product."""
    n = len(dims) - 1
    cost = [[0] * n for _ in range(n)]
    split = [[0] * n for _ in range(n)]
    for length in range(1, n):
        for i in range(n - length):
            j = i + length
            cost[i][j] = math.inf
            for k in range(i, j):
                c = cost[i][k] + cost[k + 1][j] + dims[i] * dims[k + 1] * dims[j + 1]
                if c < cost[i][j]:
                    cost[i][j], split[i][j] = c, k
    return split


def linalg_multi_dot(tensors):
    n = len(tensors)
    if n < 2:
        raise RuntimeError(f"multi_dot(): expected at least 2 tensors but got {n}")
    first, last = tensors[0], tensors[-1]
    for t in (first, last):
        if t.dim() not in (1, 2):
            raise RuntimeError(f"multi_dot(): the first and last tensors should be 1D or 2D but "
                               f"got {t.dim()}D")
    for i, t in enumerate(tensors[1:-1], 1):
        if t.dim() != 2:
            raise RuntimeError(f"multi_dot(): tensor {i} must be 2D but got {t.dim()}D")
    for i, t in enumerate(tensors[1:], 1):
        if t._dtype is not first._dtype:
            raise RuntimeError(f"multi_dot(): all tensors must have be the same dtype but tensor 0 "
                               f"is {first._dtype._short} and tensor {i} is {t._dtype._short}")
    mats = list(tensors)
    if first.dim() == 1:
        mats[0] = A.unsqueeze.default._call(first, 0)
    if last.dim() == 1:
        mats[-1] = A.unsqueeze.default._call(last, 1)
    for i in range(n - 1):
        if mats[i]._size[1] != mats[i + 1]._size[0]:
            raise RuntimeError(f"multi_dot(): tensors {i} and {i + 1} with shapes "
                               f"{_st._fmt_list(mats[i]._size)} and "
                               f"{_st._fmt_list(mats[i + 1]._size)} cannot be multiplied")
    split = _chain_order([m._size[0] for m in mats] + [mats[-1]._size[1]])

    r = _chain_product(mats, split, 0, n - 1)
    shape = ([] if first.dim() == 1 else [r._size[0]]) + ([] if last.dim() == 1 else [r._size[1]])
    return A.view.default._call(r, shape)  # (a view even of the same shape, as ATen's)


def _chain_product(mats, split, i, j):
    """mats[i] @ ... @ mats[j] in the order ``split`` chose (module-level: a nested function
    calling itself would keep the matrices alive in a reference cycle)."""
    if i == j:
        return mats[i]
    k = split[i][j]
    return A.mm.default._call(_chain_product(mats, split, i, k),
                              _chain_product(mats, split, k + 1, j))


def chain_matmul(matrices):
    warnings.warn("torch.chain_matmul is deprecated and will be removed in a future PyTorch "
                  "release. Use torch.linalg.multi_dot instead, which accepts a list of two or "
                  "more tensors rather than multiple parameters.", UserWarning, stacklevel=3)
    if len(matrices) == 0:
        raise RuntimeError("chain_matmul(): Expected one or more matrices")
    for t in matrices:
        if t.dim() != 2:
            raise RuntimeError(f"Tensor dimension is {t.dim()}, expected 2 instead.")
    if len(matrices) == 1:
        return A.clone.default._call(matrices[0], None)
    return linalg_multi_dot(matrices)


# -- einsum ----------------------------------------------------------------------------------------

def _einsum_parse(equation, tensors):
    eq = equation.replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    inputs = lhs.split(",")
    if len(inputs) > len(tensors):
        raise RuntimeError("einsum(): fewer operands were provided than specified in the "
                           "equation")
    if len(inputs) < len(tensors):
        raise RuntimeError("einsum(): more operands were provided than specified in the equation")
    n_ell = max([t.dim() - len(s.replace("...", "")) for s, t in zip(inputs, tensors)
                 if "..." in s] + [0])
    ell = [chr(0x100 + i) for i in range(n_ell)]  # placeholder labels for the ellipsis dims
    subs = []
    for i, (s, t) in enumerate(zip(inputs, tensors)):
        for c in s.replace("...", ""):
            if not c.isalpha():
                raise RuntimeError(f"einsum(): invalid subscript given at index "
                                   f"{eq.index(c)} in the equation string, subscripts must be in "
                                   f"[a-zA-Z]")
        if "..." in s:
            k = t.dim() - len(s.replace("...", ""))
            s = s.replace("...", "".join(ell[n_ell - k:]) if k else "")
        elif len(s) != t.dim():
            raise RuntimeError(f"einsum(): the number of subscripts in the equation ({len(s)}) "
                               f"does not match the number of dimensions ({t.dim()}) for operand "
                               f"{i} and no ellipsis was given")
        subs.append(s)
    if arrow:
        out = rhs.replace("...", "".join(ell))
        for c in out:
            if c not in "".join(subs):
                raise RuntimeError(f"einsum(): output subscript {c} does not appear in the "
                                   f"equation for any input operand")
    else:
        counts = {}
        for s in subs:
            for c in s:
                counts[c] = counts.get(c, 0) + 1
        out = "".join(ell) + "".join(sorted(c for c, n in counts.items()
                                            if n == 1 and c not in ell))
    return subs, out


def _einsum_diagonals(t, labels):
    """Repeated labels within one operand take the diagonal (moved to the last dim)."""
    while len(set(labels)) != len(labels):
        c = next(c for c in labels if labels.count(c) > 1)
        i = labels.index(c)
        j = labels.index(c, i + 1)
        t = A.diagonal.default._call(t, 0, i, j)
        labels = [x for k, x in enumerate(labels) if k not in (i, j)] + [c]
    return t, labels


def _sum_labels(t, labels, drop):
    dims = [i for i, c in enumerate(labels) if c in drop]
    if not dims:
        return t, labels
    t = A.sum.dim_IntList._call(t, dims, False, None)
    return t, [c for c in labels if c not in drop]


def _align(t, labels, target):
    """A view of ``t`` (dims ``labels``) with one dim per label of ``target``, in its order:
    size 1 where ``t`` lacks the label."""
    t = A.permute.default._call(t, [labels.index(c) for c in target if c in labels])
    sizes = iter(t._size)
    return _reshape(t, [next(sizes) if c in labels else 1 for c in target])


def _contract(a, la, b, lb, keep, sizes, out):
    """One pairwise contraction as a bmm: batch (shared, kept), a-only, b-only, and contracted
    (shared, not kept) labels; as a product when nothing is contracted."""
    a, la = _sum_labels(a, la, {c for c in la if c not in lb and c not in keep})
    b, lb = _sum_labels(b, lb, {c for c in lb if c not in la and c not in keep})
    batch = [c for c in la if c in lb and c in keep]
    con = [c for c in la if c in lb and c not in keep]
    ao = [c for c in la if c not in lb]
    bo = [c for c in lb if c not in la]
    if not con:
        # nothing summed: ATen's sumproduct_pair multiplies, its operands laid out in the
        # output's label order first, so the product (a new tensor) needs no permuting after
        labels = [c for c in out if c in la or c in lb]
        labels += [c for c in batch + ao + bo if c not in labels]
        return A.mul.Tensor._call(_align(a, la, labels), _align(b, lb, labels)), labels
    pa = A.permute.default._call(a, [la.index(c) for c in batch + ao + con])
    pb = A.permute.default._call(b, [lb.index(c) for c in batch + con + bo])
    pa = A.expand.default._call(pa, tuple(sizes[c] for c in batch + ao + con), False)
    pb = A.expand.default._call(pb, tuple(sizes[c] for c in batch + con + bo), False)
    nb, na, nc, nbo = (math.prod(sizes[c] for c in g) for g in (batch, ao, con, bo))
    r = A.bmm.default._call(_reshape(pa, (nb, na, nc)), _reshape(pb, (nb, nc, nbo)))
    labels = batch + ao + bo
    return _reshape(r, [sizes[c] for c in labels]), labels


def _einsum_path(subs, out, tensors):
    """Pairs of operand positions to contract, each result appended last (opt_einsum's format)."""
    from ... import backends
    n = len(subs)
    if n > 2 and backends.opt_einsum.enabled and backends.opt_einsum.is_available():
        oe = backends.opt_einsum.get_opt_einsum()
        letters = {}
        for c in "".join(subs) + out:  # opt_einsum wants plain letters for the ellipsis labels
            letters.setdefault(c, oe.get_symbol(len(letters)))
        eq = ",".join("".join(letters[c] for c in s) for s in subs) + "->" + \
            "".join(letters[c] for c in out)
        path, _ = oe.contract_path(eq, *[tuple(t._size) for t in tensors], shapes=True,
                                   optimize=backends.opt_einsum.strategy)
        return [tuple(p) for p in path]
    return [(0, 1)] * (n - 1)


def einsum(equation, tensors, path=None):
    subs, out = _einsum_parse(equation, tensors)
    sizes = {}
    for i, (s, t) in enumerate(zip(subs, tensors)):
        for c, n in zip(s, t._size):
            if c in sizes and sizes[c] != n and 1 not in (sizes[c], n):
                raise RuntimeError(f"einsum(): subscript {c} has size {n} for operand {i} which "
                                   f"does not broadcast with previously seen size {sizes[c]}")
            sizes[c] = max(sizes.get(c, n), n)
    operands = [_einsum_diagonals(t, list(s)) for s, t in zip(subs, tensors)]
    if len(operands) == 1:
        t, labels = operands[0]
        t, labels = _sum_labels(t, labels, {c for c in labels if c not in out})
    else:
        steps = [tuple(p) for p in path] if path is not None else \
            _einsum_path(subs, out, tensors)
        for step in steps:
            i, j = sorted(step)
            b, lb = operands.pop(j)
            a, la = operands.pop(i)
            keep = set(out)
            for _, lab in operands:
                keep.update(lab)
            operands.append(_contract(a, la, b, lb, keep, sizes, out))
        t, labels = operands[0]
        t, labels = _sum_labels(t, labels, {c for c in labels if c not in out})
    order = [labels.index(c) for c in out]
    # an operand's labels put in the output's order are a view of it (ATen's permute); a
    # computed result already in that order is returned as it is, not as a view of itself
    if order != list(range(len(order))) or any(t is x for x in tensors):
        t = A.permute.default._call(t, order)
    shape = tuple(sizes[c] for c in out)
    return t if tuple(t._size) == shape else A.expand.default._call(t, shape, False)


# -- checked solvers -----------------------------------------------------------------------------

def linalg_inv(A_):
    inv, info = A.linalg_inv_ex.default._call(A_, False)
    _check_errors(info, "linalg.inv", A_.dim() == 2)
    return inv


def inverse(self):
    return linalg_inv(self)


def linalg_det(A_):
    return A._linalg_det.default._call(A_)[0]


def det(self):
    return linalg_det(self)


def linalg_slogdet(A_):
    sign, logabsdet, _, _ = A._linalg_slogdet.default._call(A_)
    return sign, logabsdet


def slogdet(self):
    return linalg_slogdet(self)


def logdet(self):
    check_square("logdet", self)
    check_float("logdet", self)
    sign, logabsdet = linalg_slogdet(self)
    if self._dtype.is_complex:  # log(sign) + log|det|: complex, with its phase
        return A.add.Tensor._call(A.log.default._call(sign), logabsdet, 1)
    nan = A.full_like.default._call(logabsdet, math.nan, None, None, None, None, None)
    return A.where.self._call(A.eq.Scalar._call(sign, -1), nan, logabsdet)


def linalg_solve_ex(A_, B, left=True, check_errors=False):
    result, _, _, info = A._linalg_solve_ex.default._call(A_, B, left, check_errors)
    return result, info


def linalg_solve(A_, B, left=True):
    result, info = linalg_solve_ex(A_, B, left, False)
    _check_errors(info, "torch.linalg.solve", A_.dim() == 2)
    return result


def linalg_cholesky(self, upper=False):
    L, info = A.linalg_cholesky_ex.default._call(self, upper, False)
    _check_errors(info, "linalg.cholesky", self.dim() == 2)
    return L


# -- spectral -----------------------------------------------------------------------------------

def linalg_svd(A_, full_matrices=True, driver=None):
    return A._linalg_svd.default._call(A_, full_matrices, True, driver)


def linalg_svdvals(A_, driver=None):
    # singular vectors are needed for the backward pass only
    return A._linalg_svd.default._call(A_, False, A_.requires_grad, driver)[1]


def svd(self, some=True, compute_uv=True):
    U, S, Vh = A._linalg_svd.default._call(self, not some, True, None)
    if compute_uv:
        return U, S, _mH(Vh)
    m, n = self._size[-2:]
    return (A.new_zeros.default._call(self, self._size[:-2] + (m, m), None, None, None, None), S,
            A.new_zeros.default._call(self, self._size[:-2] + (n, n), None, None, None, None))


def svd_out(self, some, compute_uv, U, S, V):
    """PyTorch's svd_out: linalg_svd's out= form writing Vh into V transposed (so a V of the
    wrong shape is resized, and warned about, as that transpose), then V turned back and
    conjugated; without compute_uv, S from linalg_svdvals and U, V zeros of the full square
    shapes in the input's dtype."""
    if compute_uv:
        if V.dim() >= 2:
            A.transpose_.default._call(V, -2, -1)
        A.linalg_svd.U._call(self, not some, None, U, S, V)
        A.transpose_.default._call(V, -2, -1)
        if V._dtype.is_complex:
            A.conj_physical_.default._call(V)
        return U, S, V
    for t in (U, V):
        if t._dtype is not self._dtype:
            raise RuntimeError(f"torch.svd: Expected out tensor to have dtype "
                               f"{self._dtype._short} but got {t._dtype._short} instead")
    A.linalg_svdvals.out._call(self, None, S)
    batch, (m, n) = tuple(self._size[:-2]), self._size[-2:]
    resize_output("svd", U, batch + (m, m))
    A.zero_.default._call(U)
    resize_output("svd", V, batch + (n, n))
    A.zero_.default._call(V)
    return U, S, V


def linalg_eigvals(self):
    return A.linalg_eig.default._call(self)[0]


def linalg_eigh(self, UPLO="L"):
    return A._linalg_eigh.default._call(self, UPLO, True)


def linalg_eigvalsh(self, UPLO="L"):
    return A._linalg_eigh.default._call(self, UPLO, self.requires_grad)[0]


# -- norms -----------------------------------------------------------------------------------------

def _vector_norm(t, ord, dim, keepdim, dtype):
    return A.linalg_vector_norm.default._call(t, ord, dim, keepdim, dtype)


def linalg_matrix_norm(self, ord, dim=(-2, -1), keepdim=False, dtype=None):
    if len(dim) != 2:
        raise RuntimeError(f"linalg.matrix_norm: dim must be a 2-tuple. Got "
                           f"{' '.join(map(str, dim))}")
    if self.dim() < 2:
        raise RuntimeError("linalg.matrix_norm: The input tensor A must have at least 2 "
                           "dimensions.")
    # (the spectral norms' SVD has no low-precision kernel)
    check_float("linalg.matrix_norm", self, low_precision=abs(float(ord)) != 2)
    d0, d1 = (_st.wrap_dim(d, self.dim()) for d in dim)
    if d0 == d1:
        raise RuntimeError(f"linalg.matrix_norm: dims must be different. Got ({dim[0]}, "
                           f"{dim[1]})")
    ord = float(ord)
    if abs(ord) == 2:
        rest = [d for d in range(self.dim()) if d not in (d0, d1)]
        t = A.permute.default._call(self, rest + [d0, d1])
        if dtype is not None:
            t = A._to_copy.default._call(t, dtype, None, None, None, False, None)
        s = linalg_svdvals(t)
        r = (A.amax if ord > 0 else A.amin).default._call(s, [-1], False)
        if keepdim:
            for d in sorted((d0, d1)):
                r = A.unsqueeze.default._call(r, d)
        return r
    if abs(ord) not in (1, math.inf):
        raise RuntimeError(f"linalg.matrix_norm: Order {ord:g} not supported.")
    # 1-norm: largest column sum (sum over d0, reduce over d1); inf-norm: the transpose
    sum_dim, red_dim = (d0, d1) if abs(ord) == 1 else (d1, d0)
    s = _vector_norm(self, 1, [sum_dim], True, dtype)
    r = (A.amax if ord > 0 else A.amin).default._call(s, [red_dim], True)
    if not keepdim:
        r = A.squeeze.dims._call(r, [d0, d1])
    return r


def linalg_matrix_norm_str_ord(self, ord="fro", dim=(-2, -1), keepdim=False, dtype=None):
    if len(dim) != 2:
        raise RuntimeError(f"linalg.matrix_norm: dim must be a 2-tuple. Got "
                           f"{' '.join(map(str, dim))}")
    if self.dim() < 2:
        raise RuntimeError("linalg.matrix_norm: The input tensor A must have at least 2 "
                           "dimensions.")
    check_float("linalg.matrix_norm", self, low_precision=ord != "nuc")
    if ord == "fro":
        return _vector_norm(self, 2, list(dim), keepdim, dtype)
    if ord == "nuc":
        d0, d1 = (_st.wrap_dim(d, self.dim()) for d in dim)
        rest = [d for d in range(self.dim()) if d not in (d0, d1)]
        t = A.permute.default._call(self, rest + [d0, d1])
        r = A.sum.dim_IntList._call(linalg_svdvals(t), [-1], False, None)
        if keepdim:
            for d in sorted((d0, d1)):
                r = A.unsqueeze.default._call(r, d)
        return r
    raise RuntimeError(f"linalg.matrix_norm: Order {ord} not supported.")


def linalg_norm(self, ord=None, dim=None, keepdim=False, dtype=None):
    if dim is not None:
        if len(dim) not in (1, 2):
            raise RuntimeError(f"linalg.norm: If dim is specified, it must be of length 1 or 2. "
                               f"Got {_st._fmt_list(dim)}")
    elif ord is not None and self.dim() not in (1, 2):
        raise RuntimeError(f"linalg.norm: If dim is not specified but ord is, the input must be "
                           f"1D or 2D. Got {self.dim()}D.")
    if ord is not None and ((dim is not None and len(dim) == 2) or
                            (dim is None and self.dim() == 2)):
        return linalg_matrix_norm(self, ord, dim if dim is not None else (0, 1), keepdim, dtype)
    return _vector_norm(self, 2 if ord is None else ord, dim, keepdim, dtype)


def linalg_norm_ord_str(self, ord, dim=None, keepdim=False, dtype=None):
    if dim is not None:
        if len(dim) not in (1, 2):
            raise RuntimeError(f"linalg.norm: If dim is specified, it mut be of length 1 or 2. "
                               f"Got {_st._fmt_list(dim)}")
    elif self.dim() not in (1, 2):
        raise RuntimeError(f"linalg.norm: If dim is not specified but ord is, the input must be "
                           f"1D or 2D. Got {self.dim()}D.")
    return linalg_matrix_norm_str_ord(self, ord, dim if dim is not None else (0, 1), keepdim,
                                      dtype)


# -- pinv, rank, powers ------------------------------------------------------------------------------

def _tolerance(S, atol, rtol, m, n):
    """max(atol, rtol * largest singular value), with PyTorch's default rtol."""
    if rtol is None:
        rtol = 0.0 if (atol is not None and atol > 0) else \
            D.finfo(S._dtype).eps * max(m, n)
    if S._size[-1]:
        smax = A.amax.default._call(S, [-1], True)
    else:  # no singular values: nothing to compare, any tolerance will do
        smax = A.zeros.default._call(S._size[:-1] + (1,), S._dtype, None, S._device, None)
    tol = A.mul.Scalar._call(smax, rtol)
    if atol is not None:
        tol = A.clamp_min.default._call(tol, atol)
    return tol


def linalg_pinv_atol_rtol_float(self, atol=None, rtol=None, hermitian=False):
    check_pinv_dtype(self)
    m, n = self._size[-2:]
    if hermitian:
        L, V = linalg_eigh(self)
        S = A.abs.default._call(L)
        tol = _tolerance(S, atol, rtol, m, n)
        inv = A.where.self._call(A.gt.Tensor._call(S, tol), A.reciprocal.default._call(L),
                                 A.zeros_like.default._call(L, None, None, None, None, None))
        return A.matmul.default._call(A.mul.Tensor._call(V, A.unsqueeze.default._call(inv, -2)),
                                      _mH(V))
    U, S, Vh = linalg_svd(self, False)
    tol = _tolerance(S, atol, rtol, m, n)
    inv = A.where.self._call(A.gt.Tensor._call(S, tol), A.reciprocal.default._call(S),
                             A.zeros_like.default._call(S, None, None, None, None, None))
    return A.matmul.default._call(A.mul.Tensor._call(_mH(Vh), A.unsqueeze.default._call(inv, -2)),
                                  _mH(U))


def linalg_pinv(self, rcond, hermitian=False):
    return linalg_pinv_atol_rtol_float(self, 0.0, rcond, hermitian)


def linalg_matrix_rank_atol_rtol_float(self, atol=None, rtol=None, hermitian=False):
    if self.dim() < 2:
        raise RuntimeError("linalg.matrix_rank: The input tensor input must have at least 2 "
                           "dimensions.")
    check_lstsq_matrix_rank_dtype(self)  # (its default tolerance's epsilon)
    m, n = self._size[-2:]
    if hermitian:
        S = A.abs.default._call(A._linalg_eigh.default._call(self, "L", False)[0])
    else:
        S = A._linalg_svd.default._call(self, False, False, None)[1]
    tol = _tolerance(S, atol, rtol, m, n)
    return A.sum.dim_IntList._call(A.gt.Tensor._call(S, tol), [-1], False, None)


def linalg_matrix_rank(self, tol, hermitian=False):
    return linalg_matrix_rank_atol_rtol_float(self, tol, 0.0, hermitian)


def linalg_matrix_power(self, n):
    if self.dim() < 2:
        raise RuntimeError("linalg.matrix_power: The input tensor A must have at least 2 "
                           "dimensions.")
    if self._size[-1] != self._size[-2]:
        raise RuntimeError("linalg.matrix_power: A must be batches of square matrices, but they "
                           f"are {self._size[-2]} by {self._size[-1]} matrices")
    if n == 0:  # identities written over a copy of self (so the result stays in its graph)
        eye = A.eye.default._call(self._size[-1], self._dtype, None, self._device, None)
        r = A.clone.default._call(self, None)
        return A.copy_.default._call(r, A.expand.default._call(eye, self._size, False), False)
    t = self
    if n < 0:
        t = linalg_inv(self)
        n = -n
    result, base = None, t
    while n:  # repeated squaring
        if n & 1:
            result = base if result is None else A.matmul.default._call(result, base)
        n >>= 1
        if n:
            base = A.matmul.default._call(base, base)
    return result if result is not t else A.clone.default._call(result, None)


def matrix_power(self, n):
    return linalg_matrix_power(self, n)


# -- issue 18: the checked LU/LDL factorizations, cond, tensorinv/tensorsolve, vander, vecdot and
# the legacy names (qr, pinverse, lu_solve, matrix_exp, orgqr), decomposed as ATen does ----------

def _warn_once(key, msg):
    from ..cpu.linalg import warn_once
    warn_once(key, msg)


def linalg_lu_factor(A_, pivot=True):
    LU, pivots, info = A.linalg_lu_factor_ex.default._call(A_, pivot, False)
    _check_errors(info, "torch.linalg.lu_factor", A_.dim() == 2)
    return LU, pivots


def _lu_with_info(self, pivot=True, check_errors=True):
    _warn_once("lu", "torch.lu is deprecated in favor of torch.linalg.lu_factor / "
               "torch.linalg.lu_factor_ex and will be removed in a future PyTorch release.\n"
               "LU, pivots = torch.lu(A, compute_pivots)\nshould be replaced with\n"
               "LU, pivots = torch.linalg.lu_factor(A, compute_pivots)\nand\n"
               "LU, pivots, info = torch.lu(A, compute_pivots, get_infos=True)\n"
               "should be replaced with\n"
               "LU, pivots, info = torch.linalg.lu_factor_ex(A, compute_pivots)")
    # check_errors is ignored, as in ATen: torch.lu reports failures through get_infos only
    return A.linalg_lu_factor_ex.default._call(self, pivot, False)


def lu_solve(self, LU_data, LU_pivots):
    _warn_once("lu_solve", "torch.lu_solve is deprecated in favor of torch.linalg.lu_solve"
               "and will be removed in a future PyTorch release.\nNote that torch.linalg.lu_solve "
               "has its arguments reversed.\nX = torch.lu_solve(B, LU, pivots)\nshould be "
               "replaced with\nX = torch.linalg.lu_solve(LU, pivots, B)")
    return A.linalg_lu_solve.default._call(LU_data, LU_pivots, self, True, False)


def linalg_ldl_factor(self, hermitian=False):
    LD, pivots, info = A.linalg_ldl_factor_ex.default._call(self, hermitian, False)
    _check_errors(info, "torch.linalg.ldl_factor", self.dim() == 2)
    return LD, pivots


def qr(self, some=True):
    _warn_once("qr", "torch.qr is deprecated in favor of torch.linalg.qr and will be removed in "
               "a future PyTorch release.\nThe boolean parameter 'some' has been replaced with a "
               "string parameter 'mode'.\nQ, R = torch.qr(A, some)\nshould be replaced with\n"
               "Q, R = torch.linalg.qr(A, 'reduced' if some else 'complete')")
    return A.linalg_qr.default._call(self, "reduced" if some else "complete")


def pinverse(self, rcond=1e-15):
    if self.dim() < 2:
        raise RuntimeError("linalg.pinv(" + self._dtype._short + "{" + _st._fmt_list(self._size)[1:-1]
                           + "}): expected a tensor with 2 or more dimensions of float, double, "
                           "cfloat or cdouble types")
    return linalg_pinv(self, rcond, False)


def matrix_exp(self):
    return A.linalg_matrix_exp.default._call(self)


def matrix_exp_backward(self, grad):
    """The adjoint of exp's differential at ``self`` applied to ``grad``: the upper-right block
    of exp([[A^H, G], [0, A^H]]) (ATen's differential_analytic_matrix_function)."""
    Ah = A.conj.default._call(A.transpose.int._call(self, -2, -1))
    n = self.size(-1)
    top = A.cat.default._call([Ah, grad], -1)
    bottom = A.cat.default._call([A.zeros_like.default._call(Ah, None, None, None, None, None),
                                  Ah], -1)
    big = A.linalg_matrix_exp.default._call(A.cat.default._call([top, bottom], -2))
    return A.narrow.default._call(A.narrow.default._call(big, -2, 0, n), -1, n, n)


def orgqr(self, input2):
    return A.linalg_householder_product.default._call(self, input2)


def linalg_diagonal(A_, offset=0, dim1=-2, dim2=-1):
    return A.diagonal.default._call(A_, offset, dim1, dim2)


def linalg_matmul(self, other):
    return A.matmul.default._call(self, other)


def linalg_vecdot(x, y, dim=-1):
    if not (x._dtype.is_floating_point or x._dtype.is_complex):
        raise RuntimeError(f"linalg.vecdot: Expected a floating point or complex tensor as input. "
                           f"Got {x._dtype._short}")
    if x._dtype is not y._dtype:
        raise RuntimeError(f"linalg.vecdot: Expected x and y to have the same dtype, but found x "
                           f"of type {x._dtype._short} and y of type {y._dtype._short} instead")
    if x.dim() == 1 and y.dim() == 1:  # ATen takes vdot's path (and its size message) here
        return A.vdot.default._call(x, y)
    xc = A.conj.default._call(x) if x._dtype.is_complex else x
    return A.sum.dim_IntList._call(A.mul.Tensor._call(xc, y), [dim], False, None)


def linalg_vander(x, N=None):
    t = x._dtype
    if not (t in (D.float32, D.float64, D.complex64, D.complex128) or
            (not t.is_floating_point and not t.is_complex and t is not D.bool_)):
        raise RuntimeError(f"linalg.vander supports floating point, complex, and integer tensors, "
                           f"but got {t._short}")
    x_ = A.unsqueeze.default._call(x, -1) if x.dim() == 0 else x
    shape = list(x_._size)
    n = shape[-1] if N is None else N
    if n <= 1:
        raise RuntimeError("N must be greater than 1.")
    # powers 1..n-1 as a running product; the column of ones first
    powers = A.cumprod.default._call(
        A.expand.default._call(A.unsqueeze.default._call(x_, -1), shape + [n - 1], False), -1,
        None)
    ones = A.new_ones.default._call(powers, shape + [1], None, None, None, None)
    return A.cat.default._call([ones, powers], -1)


def linalg_tensorinv(self, ind=2):
    if ind <= 0:
        raise RuntimeError(f"Expected a strictly positive integer for 'ind', but got {ind}")
    start, end = list(self._size[:ind]), list(self._size[ind:])
    p_start, p_end = math.prod(start), math.prod(end)
    if p_start != p_end:
        raise RuntimeError(f"Expected self to satisfy the requirement prod(self.shape[ind:]) == "
                           f"prod(self.shape[:ind]), but got {p_end} != {p_start}")
    inv, info = A.linalg_inv_ex.default._call(_reshape(self, (p_start, p_end)), False)
    _check_errors(info, "inv", True)
    return _reshape(inv, end + start)


def linalg_tensorsolve(self, other, dims=None):
    n = self.dim()
    s = self
    if dims is not None:
        dest = list(range(n - len(dims), n))
        s = A.movedim.intlist._call(s, list(dims), dest)
    result_shape = list(s._size[other.dim():])
    rp, op = math.prod(result_shape), math.prod(other._size)
    if rp != op:
        raise RuntimeError(f"Expected self to satisfy the requirement prod(self.shape[other.ndim:]) "
                           f"== prod(self.shape[:other.ndim]), but got {rp} != {op}")
    r = linalg_solve(_reshape(s, (rp, rp)), _reshape(other, (op,)))
    return _reshape(r, result_shape)


_COND_ORDS = (2, -2, 1, -1, math.inf, -math.inf)


def _cond_empty(self):
    dt = self._dtype.to_real() if self._dtype.is_complex else self._dtype
    return A.zeros.default._call(self._size[:-2], dt, None, self._device, None)


def _cond_helper(self, ord):
    inverse, info = A.linalg_inv_ex.default._call(self, False)
    bad = A.gt.Scalar._call(A.unsqueeze.default._call(A.unsqueeze.default._call(info, -1), -1), 0)
    inf = A.full_like.default._call(inverse, math.inf, None, None, None, None, None)
    inverse = A.where.self._call(bad, inf, inverse)
    if isinstance(ord, str):
        na = linalg_matrix_norm_str_ord(self, ord)
        ni = linalg_matrix_norm_str_ord(inverse, ord)
    else:
        na = linalg_matrix_norm(self, ord)
        ni = linalg_matrix_norm(inverse, ord)
    # 0 * inf is NaN: NumPy reports an infinite condition number there
    return A.nan_to_num.default._call(A.mul.Tensor._call(na, ni), math.inf, math.inf, -math.inf)


def _cond_square(self, label):
    name = f"linalg.cond(ord={label})"
    if self.dim() < 2:
        raise RuntimeError(f"{name}: The input tensor A must have at least 2 dimensions.")
    if self._size[-1] != self._size[-2]:
        raise RuntimeError(f"{name}: A must be batches of square matrices, but they are "
                           f"{self._size[-2]} by {self._size[-1]} matrices")


def linalg_cond(self, p=None):
    if self.dim() < 2:
        raise RuntimeError("linalg.cond: The input tensor must have at least 2 dimensions.")
    ord = 2 if p is None else p
    if ord not in _COND_ORDS:
        raise RuntimeError(f"linalg.cond got an invalid norm type: {ord:g}" if isinstance(ord, float)
                           else f"linalg.cond got an invalid norm type: {ord}")
    if self.numel() == 0:
        return _cond_empty(self)
    if abs(ord) == 2:
        s = linalg_svdvals(self)
        smax = A.narrow.default._call(s, -1, 0, 1)
        smin = A.narrow.default._call(s, -1, s._size[-1] - 1, 1)
        r = A.div.Tensor._call(smin, smax) if ord == -2 else A.div.Tensor._call(smax, smin)
        return A.squeeze.dim._call(r, -1)
    # the label C++'s std::to_string prints: "1" for an int, "1.000000" / "inf" for a float
    label = (("inf" if ord > 0 else "-inf") if math.isinf(ord) else f"{ord:f}") \
        if isinstance(ord, float) else str(ord)
    _cond_square(self, label)
    return _cond_helper(self, ord)


def linalg_cond_p_str(self, p):
    _cond_square(self, p)
    if p not in ("fro", "nuc"):
        raise RuntimeError(f"linalg.cond got an invalid norm type: {p}")
    if self.numel() == 0:
        return _cond_empty(self)
    if p == "nuc":  # from the singular values (matrix_norm's nuc raises on infinities)
        s = linalg_svdvals(self)
        return A.mul.Tensor._call(A.sum.dim_IntList._call(s, [-1], False, None),
                                  A.sum.dim_IntList._call(A.reciprocal.default._call(s), [-1],
                                                          False, None))
    return _cond_helper(self, p)
