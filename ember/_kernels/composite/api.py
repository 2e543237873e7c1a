"""CompositeImplicitAutograd kernels of the PyTorch API-surface ops that decompose into other
ops: the aliases (``absolute`` = ``abs``, ``divide`` = ``div``, ``concat`` = ``cat``, ...), each
overload calling the same overload of the op it aliases through the dispatcher, so autograd,
out= and in-place behaviour are the base op's."""
import math as _math

from ..._core import dtype as _D
from ..._ops.overload import ops

__all__ = []

_aten = ops.aten
_BOOL = _D.bool_

# alias -> (the op it aliases, the overloads both declare); PyTorch's alias overloads take exactly
# the base overload's arguments
_UNARY = ("default", "out")
_DIVIDE = ("Tensor", "Scalar", "Tensor_mode", "Scalar_mode", "out", "out_mode")
_DIVIDE_ = ("Tensor", "Scalar", "Tensor_mode", "Scalar_mode")
_COMPARE = ("Tensor", "Scalar", "Tensor_out", "Scalar_out")
_ALIASES = {
    "absolute": ("abs", _UNARY), "absolute_": ("abs_", ("default",)),
    "arccos": ("acos", _UNARY), "arccos_": ("acos_", ("default",)),
    "arccosh": ("acosh", _UNARY), "arccosh_": ("acosh_", ("default",)),
    "arcsin": ("asin", _UNARY), "arcsin_": ("asin_", ("default",)),
    "arcsinh": ("asinh", _UNARY), "arcsinh_": ("asinh_", ("default",)),
    "arctan": ("atan", _UNARY), "arctan_": ("atan_", ("default",)),
    "arctanh": ("atanh", _UNARY), "arctanh_": ("atanh_", ("default",)),
    "arctan2": ("atan2", _UNARY), "arctan2_": ("atan2_", ("default",)),
    "negative": ("neg", _UNARY), "negative_": ("neg_", ("default",)),
    "fix": ("trunc", _UNARY), "fix_": ("trunc_", ("default",)),
    "divide": ("div", _DIVIDE), "divide_": ("div_", _DIVIDE_),
    "multiply": ("mul", ("Tensor", "Scalar", "out")), "multiply_": ("mul_", ("Tensor", "Scalar")),
    "subtract": ("sub", ("Tensor", "Scalar", "out")), "subtract_": ("sub_", ("Tensor", "Scalar")),
    "greater": ("gt", _COMPARE), "greater_": ("gt_", ("Tensor", "Scalar")),
    "greater_equal": ("ge", _COMPARE), "greater_equal_": ("ge_", ("Tensor", "Scalar")),
    "less": ("lt", _COMPARE), "less_": ("lt_", ("Tensor", "Scalar")),
    "less_equal": ("le", _COMPARE), "less_equal_": ("le_", ("Tensor", "Scalar")),
    "not_equal": ("ne", _COMPARE), "not_equal_": ("ne_", ("Tensor", "Scalar")),
    "concat": ("cat", _UNARY), "concatenate": ("cat", _UNARY),
}


def _alias_kernel(base, overload):
    def kernel(*args):
        return getattr(getattr(_aten, base), overload)._call(*args)
    return kernel


for _name, (_base, _overloads) in _ALIASES.items():
    for _ov in _overloads:
        # the registry's kernel name: "<op>" for the default overload, else "<op>_<overload>"
        _kname = _name if _ov == "default" else f"{_name}_{_ov}"
        globals()[_kname] = _alias_kernel(_base, _ov)
        __all__.append(_kname)


# -- tensor predicates and metadata (CompositeImplicitAutograd in PyTorch) -----------------------

def numel(self):
    return self.numel()


def is_floating_point(self):
    return self.dtype.is_floating_point


def is_complex(self):
    return self.dtype.is_complex


def is_signed(self):
    return self.dtype.is_signed


def is_inference(self):
    return self.is_inference()


def is_nonzero(self):
    n = self.numel()
    if n == 0:
        raise RuntimeError("Boolean value of Tensor with no values is ambiguous")
    if n > 1:
        raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
    return bool(_aten.item.default._call(self))


def is_same_size(self, other):
    return tuple(self.shape) == tuple(other.shape)


def _result_type(*operands):
    from ..._core.promotion import result_type_of
    return result_type_of(operands)


result_type_Tensor = result_type_Scalar = result_type_Scalar_Tensor = _result_type
result_type_Scalar_Scalar = _result_type


def broadcast_tensors(tensors):
    from ..._core.strides import broadcast_shapes
    shape = list(broadcast_shapes(*[tuple(t.shape) for t in tensors]))
    return [_aten.expand.default._call(t, shape, False) for t in tensors]


__all__ += ["numel", "is_floating_point", "is_complex", "is_signed", "is_inference", "is_nonzero",
            "is_same_size", "result_type_Tensor", "result_type_Scalar", "result_type_Scalar_Tensor",
            "result_type_Scalar_Scalar", "broadcast_tensors"]


# -- the atleast / stack / split family ----------------------------------------------------------

def atleast_1d(self):
    return _aten.reshape.default._call(self, [1]) if self.dim() == 0 else self


def atleast_2d(self):
    if self.dim() == 0:
        return _aten.reshape.default._call(self, [1, 1])
    return _aten.unsqueeze.default._call(self, 0) if self.dim() == 1 else self


def atleast_3d(self):
    unsqueeze = _aten.unsqueeze.default._call
    if self.dim() == 0:
        return _aten.reshape.default._call(self, [1, 1, 1])
    if self.dim() == 1:
        return unsqueeze(unsqueeze(self, 0), -1)
    return unsqueeze(self, -1) if self.dim() == 2 else self


def atleast_1d_Sequence(tensors):
    return [atleast_1d(t) for t in tensors]


def atleast_2d_Sequence(tensors):
    return [atleast_2d(t) for t in tensors]


def atleast_3d_Sequence(tensors):
    return [atleast_3d(t) for t in tensors]


def _column_stack_inputs(tensors):
    if len(tensors) == 0:
        raise RuntimeError("column_stack expects a non-empty TensorList")
    return [_aten.reshape.default._call(t, [t.numel(), 1]) if t.dim() <= 1 else t
            for t in tensors]


def column_stack(tensors):
    return _aten.hstack.default._call(_column_stack_inputs(tensors))


def column_stack_out(tensors, out):
    return _aten.hstack.out._call(_column_stack_inputs(tensors), out)


def row_stack(tensors):
    return _aten.vstack.default._call(tensors)


def row_stack_out(tensors, out):
    return _aten.vstack.out._call(tensors, out)


_SPLIT_DIM = {"hsplit": (1, 1), "vsplit": (2, 0), "dsplit": (3, 2)}  # op -> (min dims, dim)


def _split_dim(name, self):
    min_dims, dim = _SPLIT_DIM[name]
    if self.dim() < min_dims:
        raise RuntimeError(f"torch.{name} requires a tensor with at least {min_dims} dimension, "
                           f"but got a tensor with {self.dim()} dimensions!")
    return 0 if name == "hsplit" and self.dim() == 1 else dim


def _split_int(name):
    def kernel(self, sections):
        dim = _split_dim(name, self)
        size = self.shape[dim]
        if sections == 0 or size % sections != 0:
            raise RuntimeError(f"torch.{name} attempted to split along dimension {dim}, but the "
                               f"size of the dimension {size} is not divisible by the split_size "
                               f"{sections}!")
        return _aten.tensor_split.sections._call(self, sections, dim)
    return kernel


def _split_array(name):
    def kernel(self, indices):
        return _aten.tensor_split.indices._call(self, indices, _split_dim(name, self))
    return kernel


for _name in _SPLIT_DIM:
    globals()[f"{_name}_int"] = _split_int(_name)
    globals()[f"{_name}_array"] = _split_array(_name)
    __all__ += [f"{_name}_int", f"{_name}_array"]


def ravel(self):
    from ..._core.device import contiguous_format
    return _aten.view.default._call(_aten.contiguous.default._call(self, contiguous_format), [-1])


__all__ += ["atleast_1d", "atleast_2d", "atleast_3d", "atleast_1d_Sequence", "atleast_2d_Sequence",
            "atleast_3d_Sequence", "column_stack", "column_stack_out", "row_stack", "row_stack_out",
            "ravel"]


# -- diff, trapezoid, cov, corrcoef, vander ------------------------------------------------------

def _wrap(dim, ndim):
    from ..._core.strides import wrap_dim
    return wrap_dim(dim, ndim)


def _diff_input(self, n, dim, prepend, append):
    """PyTorch's diff checks, and self with prepend/append concatenated along ``dim``."""
    if self.dim() == 0:
        raise RuntimeError("diff expects input to be at least one-dimensional")
    if n < 0:
        raise RuntimeError(f"order must be non-negative but got {n}")
    dim = _wrap(dim, self.dim())
    parts = [self]
    for t, first in ((prepend, True), (append, False)):
        if t is None:
            continue
        if t.dim() != self.dim():
            raise RuntimeError("diff expects prepend or append to be the same dimension as input")
        for i in range(self.dim()):
            if i != dim and t.shape[i] != self.shape[i]:
                raise RuntimeError(
                    f"diff expects the shape of tensor to prepend or append to match that of "
                    f"input except along the differencing dimension; input.size({i}) = "
                    f"{self.shape[i]}, but got tensor.size({i}) = {t.shape[i]}")
        parts.insert(0 if first else len(parts), t)
    return (self if len(parts) == 1 else _aten.cat.default._call(parts, dim)), dim


def diff(self, n=1, dim=-1, prepend=None, append=None):
    x, dim = _diff_input(self, n, dim, prepend, append)
    if n == 0:  # PyTorch returns the input itself, without prepend and append
        return _aten.clone.default._call(self, None)
    length = x.shape[dim]
    narrow = _aten.narrow.default._call
    # bool differences are xor, as in PyTorch; n past the length leaves an empty dim
    step = _aten.logical_xor.default._call if (x.dtype is _BOOL) else \
        (lambda a, b: _aten.sub.Tensor._call(a, b, 1))
    for _ in range(min(n, length)):
        length -= 1
        x = step(narrow(x, dim, 1, length), narrow(x, dim, 0, length))
    return x


def _zeros_except(y, dim):
    shape = [s for i, s in enumerate(y.shape) if i != dim]
    return _aten.zeros.default._call(shape, y.dtype, None, y.device, None)


def _slices(y, dim):
    """(y[..., 1:], y[..., :-1]) along ``dim``."""
    sl = _aten.slice.Tensor._call
    return sl(y, dim, 1, None, 1), sl(y, dim, 0, -1, 1)


def _x_spacing(name, y, x, dim):
    """The differences of the sample points ``x``, viewed to broadcast against y's slices."""
    if (y.dtype is _BOOL) or (x.dtype is _BOOL):
        raise RuntimeError(f"{name}: received a bool input for `x` or `y`, but bool is not "
                           f"supported")
    if x.dim() == 1:
        if x.shape[0] != y.shape[dim]:
            raise RuntimeError(f"{name}: There must be one `x` value for each sample point")
        sizes = [1] * y.dim()
        sizes[dim] = x.shape[0]
        x = _aten.view.default._call(x, sizes)
    elif x.dim() < y.dim():
        x = _aten.view.default._call(x, [1] * (y.dim() - x.dim()) + list(x.shape))
    right, left = _slices(x, dim)
    return _aten.sub.Tensor._call(right, left, 1)


def _check_dx(name, y, dx):
    if (y.dtype is _BOOL):
        raise RuntimeError(f"{name}: received a bool input for `y`, but bool is not supported")
    if isinstance(dx, (bool, complex)):
        raise RuntimeError(f"{name}: Currently, we only support dx as a real number.")


def trapezoid_x(y, x, dim=-1):
    dim = _wrap(dim, y.dim())
    if y.shape[dim] == 0:
        return _zeros_except(y, dim)
    dx = _x_spacing("trapezoid", y, x, dim)
    right, left = _slices(y, dim)
    total = _aten.add.Tensor._call(left, right, 1)
    s = _aten.sum.dim_IntList._call(_aten.mul.Tensor._call(dx, total), [dim], False, None)
    return _aten.div.Tensor._call(s, 2.0)


def trapezoid_dx(y, dx=1, dim=-1):
    dim = _wrap(dim, y.dim())
    if y.shape[dim] == 0:
        return _zeros_except(y, dim)
    _check_dx("trapezoid", y, dx)
    sel = _aten.select.int._call
    ends = _aten.add.Tensor._call(sel(y, dim, 0), sel(y, dim, -1), 1)
    s = _aten.sum.dim_IntList._call(y, [dim], False, None)
    inner = _aten.sub.Tensor._call(s, _aten.mul.Tensor._call(ends, 0.5), 1)
    return _aten.mul.Tensor._call(inner, float(dx))


def trapz_x(y, x, dim=-1):
    return trapezoid_x(y, x, dim)


def trapz_dx(y, dx=1.0, dim=-1):
    return trapezoid_dx(y, dx, dim)


def cumulative_trapezoid_x(y, x, dim=-1):
    dim = _wrap(dim, y.dim())
    dx = _x_spacing("cumulative_trapezoid", y, x, dim)
    right, left = _slices(y, dim)
    total = _aten.mul.Tensor._call(_aten.add.Tensor._call(left, right, 1), dx)
    return _aten.div.Tensor._call(_aten.cumsum.default._call(total, dim, None), 2.0)


def cumulative_trapezoid_dx(y, dx=1, dim=-1):
    dim = _wrap(dim, y.dim())
    _check_dx("cumulative_trapezoid", y, dx)
    right, left = _slices(y, dim)
    total = _aten.mul.Tensor._call(_aten.add.Tensor._call(left, right, 1), float(dx) / 2.0)
    return _aten.cumsum.default._call(total, dim, None)


def _is_true(t):
    """A one-element bool tensor's value; data-dependent, so Meta tensors raise (as PyTorch)."""
    if t.device.type == "meta":
        raise NotImplementedError("cov: a data-dependent check cannot run on Meta tensors")
    return bool(_aten.item.default._call(t))


def _check_weights(kind, w, n, integral):
    if w.dim() > 1:
        raise RuntimeError(f"cov(): expected {kind} to have one or fewer dimensions but got {kind} "
                           f"with {w.dim()} dimensions")
    ok = (not w.dtype.is_floating_point and not w.dtype.is_complex and not (w.dtype is _BOOL)) \
        if integral else w.dtype.is_floating_point
    if not ok:
        want = "integral" if integral else "floating point"
        raise RuntimeError(f"cov(): expected {kind} to have {want} dtype but got {kind} with "
                           f"{w.dtype._short} dtype")
    if w.numel() != n:
        raise RuntimeError(f"cov(): expected {kind} to have the same numel as there are "
                           f"observations in the input but got {w.numel()} != {n}")
    if n and _is_true(_aten.lt.Scalar._call(_aten.min.default._call(w), 0)):
        raise RuntimeError(f"cov(): {kind} cannot be negative")


def cov(self, correction=1, fweights=None, aweights=None):
    """ATen's cov (Correlation.cpp): rows are variables, columns observations."""
    if self.dim() > 2:
        raise RuntimeError(f"cov(): expected input to have two or fewer dimensions but got an "
                           f"input with {self.dim()} dimensions")
    if (self.dtype is _BOOL):
        raise RuntimeError("cov(): bool dtype is not supported for input")
    a = _aten
    x = a.view.default._call(self, [1, -1]) if self.dim() < 2 else self
    n = x.shape[1]
    w = None
    if fweights is not None:
        _check_weights("fweights", fweights, n, True)
        w = fweights
    if aweights is not None:
        _check_weights("aweights", aweights, n, False)
        w = aweights if w is None else a.mul.Tensor._call(w, aweights)
    if w is None:
        w_sum = a.scalar_tensor.default._call(n, _long(), None,
                                              x.device, None)
    else:
        w_sum = a.sum.default._call(w, None)
        if not _is_true(a.ne.Scalar._call(w_sum, 0)):
            raise RuntimeError("cov(): weights sum to zero, can't be normalized")
    xw = x if w is None else a.mul.Tensor._call(x, w)
    avg = a.div.Tensor._call(a.sum.dim_IntList._call(xw, [1], False, None), w_sum)
    if w is not None and aweights is not None and correction != 0:
        corr = a.div.Tensor._call(a.mul.Tensor._call(a.sum.default._call(
            a.mul.Tensor._call(w, aweights), None), correction), w_sum)
        norm_factor = a.sub.Tensor._call(w_sum, corr, 1)
    else:
        norm_factor = a.sub.Tensor._call(w_sum, correction, 1)
    if _is_true(a.le.Scalar._call(norm_factor, 0)):
        import warnings
        warnings.warn("cov(): degrees of freedom is <= 0. Correction should be strictly less "
                      "than the number of observations.")
        norm_factor = a.zeros_like.default._call(norm_factor, None, None, None, None, None)
    x = a.sub.Tensor._call(x, a.unsqueeze.default._call(avg, 1), 1)
    xw = x if w is None else a.mul.Tensor._call(x, w)
    c = a.mm.default._call(x, a.conj.default._call(a.t.default._call(xw)))
    return a.squeeze.default._call(a.true_divide.Tensor._call(c, norm_factor))


def _long():
    return _D.int64


def corrcoef(self):
    if self.dim() > 2:
        raise RuntimeError(f"corrcoef(): expected input to have two or fewer dimensions but got "
                           f"an input with {self.dim()} dimensions")
    a = _aten
    c = cov(self, 1, None, None)
    if c.dim() == 0:
        return a.div.Tensor._call(c, c)
    d = a.diagonal.default._call(c, 0, 0, 1)
    std = a.sqrt.default._call(a.real.default._call(d) if d.dtype.is_complex else d)
    c = a.div.Tensor._call(c, a.view.default._call(std, [-1, 1]))
    c = a.div.Tensor._call(c, a.view.default._call(std, [1, -1]))
    if c.dtype.is_complex:  # real and imaginary parts clipped separately
        parts = a.clip.default._call(a.view_as_real.default._call(c), -1, 1)
        return a.view_as_complex.default._call(parts)
    return a.clip.default._call(c, -1, 1)


def vander(x, N=None, increasing=False):
    from ..._core.promotion import promote_types
    if x.dim() != 1:
        raise RuntimeError("x must be a one-dimensional tensor.")
    n = x.shape[0] if N is None else N
    if n < 0:
        raise RuntimeError("N must be non-negative.")
    # integer inputs give int64 (PyTorch builds the powers with cumprod, which promotes them)
    dt = promote_types(x.dtype, _long())
    a = _aten
    rows = x.shape[0]
    parts = [a.ones.default._call([rows, min(n, 1)], dt, None, x.device, None)]
    if n > 1:
        col = a.expand.default._call(a.unsqueeze.default._call(x, 1), [rows, n - 1], False)
        parts.append(a.cumprod.default._call(col, 1, dt))
    result = a.cat.default._call(parts, 1)
    return result if increasing else a.flip.default._call(result, [1])


__all__ += ["diff", "trapezoid_x", "trapezoid_dx", "trapz_x", "trapz_dx",
            "cumulative_trapezoid_x", "cumulative_trapezoid_dx", "cov", "corrcoef", "vander"]


# -- distances: aten composites (nn.functional's distance functions call these) ------------------

_CDIST_MODE_NAMES = {None: "use_mm_for_euclid_dist_if_necessary", 1: "use_mm_for_euclid_dist",
                     2: "donot_use_mm_for_euclid_dist"}


def p_norm(x, p, dim, keepdim=False):
    """The vector p-norm over ``dim`` (an int or ints), in ops whose gradients PyTorch's distance
    kernels give (p=2 as the square root of a sum of squares; p=0 a count, with its zero
    gradient)."""
    a = _aten
    dim = [dim] if isinstance(dim, int) else list(dim)
    if p == 2:
        return a.sqrt.default._call(a.sum.dim_IntList._call(a.mul.Tensor._call(x, x), dim,
                                                            keepdim, None))
    ab = a.abs.default._call(x)
    if p == _math.inf:
        return a.amax.default._call(ab, dim, keepdim)
    if p == 1:
        return a.sum.dim_IntList._call(ab, dim, keepdim, None)
    if p == 0:
        return a.linalg_vector_norm.default._call(x, 0, dim, keepdim, None)
    return a.pow.Tensor_Scalar._call(
        a.sum.dim_IntList._call(a.pow.Tensor_Scalar._call(ab, p), dim, keepdim, None), 1.0 / p)


def _cdist_checks(x1, x2):
    if x1.dim() < 2 or x2.dim() < 2:
        raise RuntimeError(f"cdist only supports at least 2D tensors, X1 got: {x1.dim()}D")
    if x1.size(-1) != x2.size(-1):
        raise RuntimeError(f"X1 and X2 must have the same number of columns. X1: {x1.size(-1)} "
                           f"X2: {x2.size(-1)}")


def cdist(x1, x2, p=2.0, compute_mode=None):
    """Distances between the rows of x1 and x2 (batched); p=2 through one matmul,
    ||a||^2 + ||b||^2 - 2 a.b, as PyTorch's mm path does."""
    if compute_mode not in _CDIST_MODE_NAMES:
        raise RuntimeError(f"{compute_mode} is not a valid value for compute_mode")
    _cdist_checks(x1, x2)
    a = _aten
    if p == 2 and compute_mode != 2:
        n1 = a.sum.dim_IntList._call(a.mul.Tensor._call(x1, x1), [-1], True, None)
        n2 = a.sum.dim_IntList._call(a.mul.Tensor._call(x2, x2), [-1], True, None)
        cross = a.matmul.default._call(x1, a.transpose.int._call(x2, -1, -2))
        d2 = a.add.Tensor._call(a.sub.Tensor._call(n1, cross, 2),
                                a.transpose.int._call(n2, -1, -2), 1)
        zero = a.zeros.default._call([], d2._dtype, None, d2._device, None)
        return a.sqrt.default._call(a.maximum.default._call(d2, zero))
    diff = a.sub.Tensor._call(a.unsqueeze.default._call(x1, -2),
                              a.unsqueeze.default._call(x2, -3), 1)
    return p_norm(diff, p, -1)


def pdist(self, p=2.0):
    if self.dim() != 2:
        raise RuntimeError(f"pdist only supports 2D tensors, got: {self.dim()}D")
    a = _aten
    n = self.size(0)
    ij = a.triu_indices.default._call(n, n, 1, _D.int64, None, self._device, None)
    rows = a.index.Tensor._call(self, [a.select.int._call(ij, 0, 0)])
    cols = a.index.Tensor._call(self, [a.select.int._call(ij, 0, 1)])
    return p_norm(a.sub.Tensor._call(rows, cols, 1), p, -1)


def cosine_similarity(x1, x2, dim=1, eps=1e-08):
    x1, x2 = broadcast_tensors([x1, x2])  # ATen broadcasts before reducing over dim
    a = _aten
    epst = a.full.default._call([], eps, x1._dtype, None, x1._device, None)

    def norm(x):
        return a.maximum.default._call(p_norm(x, 2, dim, True), epst)
    return a.sum.dim_IntList._call(
        a.mul.Tensor._call(a.div.Tensor._call(x1, norm(x1)), a.div.Tensor._call(x2, norm(x2))),
        [dim], False, None)


def pairwise_distance(x1, x2, p=2.0, eps=1e-06, keepdim=False):
    a = _aten
    d = a.add.Scalar._call(a.sub.Tensor._call(x1, x2, 1), eps, 1)
    return p_norm(d, p, -1, keepdim) if d.dim() else a.abs.default._call(d)


def kl_div(self, target, reduction=1, log_target=False):
    """aten::kl_div (Loss.cpp): pointwise target * (log target - input), reduced by the
    integer ``reduction`` (0 none, 1 mean, 2 sum)."""
    a = _aten
    if log_target:
        loss = a.mul.Tensor._call(a.exp.default._call(target),
                                  a.sub.Tensor._call(target, self, 1))
    else:
        loss = a.sub.Tensor._call(a.xlogy.Tensor._call(target, target),
                                  a.mul.Tensor._call(target, self), 1)
    if reduction == 1:
        return a.mean.default._call(loss, None)
    return a.sum.default._call(loss, None) if reduction == 2 else loss


def dist(self, other, p=2):
    return _aten.norm.Scalar._call(_aten.sub.Tensor._call(self, other, 1), p)


__all__ += ["cdist", "pdist", "cosine_similarity", "pairwise_distance", "kl_div", "dist"]


# -- pointwise decompositions -------------------------------------------------------------------

def isreal(self):
    if not self.dtype.is_complex:
        return _aten.ones_like.default._call(self, _BOOL, None, None, None, None)
    return _aten.eq.Scalar._call(_aten.imag.default._call(self), 0)


def _deg_rad(factor):
    def functional(self):
        if self.dtype.is_complex:
            raise RuntimeError(f"{'deg2rad' if factor < 1 else 'rad2deg'} is not supported for "
                               f"complex tensors.")
        if not self.dtype.is_floating_point:  # integers and bool give the default float dtype
            self = _aten._to_copy.default._call(self, _D.get_default_dtype(), None, None, None,
                                                False, None)
        return _aten.mul.Tensor._call(self, factor)
    return functional


deg2rad = _deg_rad(_math.pi / 180.0)
rad2deg = _deg_rad(180.0 / _math.pi)


def ldexp_Tensor(self, other):
    return _aten.mul.Tensor._call(self, _aten.exp2.default._call(other))


def ldexp_(self, other):
    return _aten.mul_.Tensor._call(self, _aten.exp2.default._call(other))


def ldexp_out(self, other, out):
    return _aten.mul.out._call(self, _aten.exp2.default._call(other), out)


def renorm(self, p, dim, maxnorm):
    """Each slice along ``dim`` scaled down to norm ``maxnorm`` where its p-norm exceeds it
    (factor maxnorm / (norm + 1e-7), as ATen's renorm)."""
    if self.dtype.is_complex:
        raise RuntimeError("renorm: Norm of complex type is not supported")
    if not p > 0:
        raise RuntimeError("renorm: non-positive-norm not supported")
    if maxnorm < 0:
        raise RuntimeError(f"renorm: expected maxnorm to be >= 0 but got {maxnorm}")
    ndim = self.dim()
    if ndim <= 1:
        raise RuntimeError(f"renorm: input needs at least 2 dimensions, got {ndim} dimensions")
    dim = _wrap(dim, ndim)
    reduce = [d for d in range(ndim) if d != dim]
    a = _aten
    norm = a.linalg_vector_norm.default._call(self, p, reduce, True, None)
    scale = a.div.Tensor._call(maxnorm, a.add.Tensor._call(norm, 1e-7, 1))
    factor = a.where.ScalarOther._call(a.gt.Scalar._call(norm, maxnorm), scale, 1.0)
    return a.mul.Tensor._call(self, a._to_copy.default._call(factor, self.dtype, None, None,
                                                             None, False, None))


__all__ += ["isreal", "deg2rad", "rad2deg", "ldexp_Tensor", "ldexp_", "ldexp_out", "renorm"]


# -- scatter into a view, and the *_copy form of each view op -----------------------------------

def _scatter_into(self, src, view):
    """A copy of self with ``view(copy)`` overwritten by src (shapes must match exactly)."""
    out = _aten.clone.default._call(self, None)
    target = view(out)
    if tuple(target.shape) != tuple(src.shape):
        raise RuntimeError(f"expected src to have a size equal to the slice of self. src size = "
                           f"{list(src.shape)}, slice size = {list(target.shape)}")
    _aten.copy_.default._call(target, src, False)
    return out


def select_scatter(self, src, dim, index):
    return _scatter_into(self, src, lambda t: _aten.select.int._call(t, dim, index))


def slice_scatter(self, src, dim=0, start=None, end=None, step=1):
    return _scatter_into(self, src, lambda t: _aten.slice.Tensor._call(t, dim, start, end, step))


def diagonal_scatter(self, src, offset=0, dim1=0, dim2=1):
    return _scatter_into(self, src,
                         lambda t: _aten.diagonal.default._call(t, offset, dim1, dim2))


def as_strided_scatter(self, src, size, stride, storage_offset=None):
    return _scatter_into(self, src, lambda t: _aten.as_strided.default._call(
        t, size, stride, storage_offset))


__all__ += ["select_scatter", "slice_scatter", "diagonal_scatter", "as_strided_scatter"]

# view-copy op -> the view overload it copies (PyTorch's functionalization "*_copy" ops)
_VIEW_COPIES = {
    "alias_copy": "alias.default", "as_strided_copy": "as_strided.default",
    "detach_copy": "detach.default", "diagonal_copy": "diagonal.default",
    "expand_copy": "expand.default", "narrow_copy": "narrow.default",
    "permute_copy": "permute.default", "select_copy_int": "select.int",
    "slice_copy_Tensor": "slice.Tensor", "split_copy_Tensor": "split.Tensor",
    "split_with_sizes_copy": "split_with_sizes.default", "squeeze_copy": "squeeze.default",
    "squeeze_copy_dim": "squeeze.dim", "squeeze_copy_dims": "squeeze.dims",
    "t_copy": "t.default", "transpose_copy_int": "transpose.int",
    "unbind_copy_int": "unbind.int", "unfold_copy": "unfold.default",
    "unsqueeze_copy": "unsqueeze.default",
    "view_copy": "reshape.default",  # takes any strides, as PyTorch's: the copy needs no view
    "view_copy_dtype": "view.dtype", "view_as_real_copy": "view_as_real.default",
    "view_as_complex_copy": "view_as_complex.default",
}


def _view_copy(view):
    name, _, overload = view.partition(".")

    def kernel(*args):
        from ..._core.device import contiguous_format
        res = getattr(getattr(_aten, name), overload)._call(*args)
        clone = _aten.clone.default._call
        if isinstance(res, (list, tuple)):
            return [clone(r, contiguous_format) for r in res]
        return clone(res, contiguous_format)
    return kernel


for _kname, _view in _VIEW_COPIES.items():
    globals()[_kname] = _view_copy(_view)
    __all__.append(_kname)

_narrow_view_copy = narrow_copy  # noqa: F821  (defined by the loop above)


def narrow_copy(self, dim, start, length):
    """narrow's copy; ATen's narrow_copy_dense_cpu checks a non-negative dim with TORCH_CHECK
    (RuntimeError) before narrow's own checks (IndexError for a negative one)."""
    if self.dim() > 0 and dim >= self.dim():
        raise RuntimeError("Expected dim < static_cast<int64_t>(self_sizes.size()) to be true, "
                           "but got false.  (Could this error message be improved?  If so, "
                           "please report an enhancement request to PyTorch.)")
    return _narrow_view_copy(self, dim, start, length)
