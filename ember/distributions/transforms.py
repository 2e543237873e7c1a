"""Transforms: differentiable maps y = f(x) with ``inv`` and ``log_abs_det_jacobian``, used to
build distributions from simpler ones (``TransformedDistribution``) and to map unconstrained
space onto a constraint's set (``constraint_registry``)."""
import math
import numbers

import ember
import ember.nn.functional as F

from . import constraints
from .utils import _sum_rightmost

__all__ = ["AbsTransform", "AffineTransform", "CatTransform", "ComposeTransform",
           "CorrCholeskyTransform", "CumulativeDistributionTransform", "ExpTransform",
           "IndependentTransform", "LowerCholeskyTransform", "PositiveDefiniteTransform",
           "PowerTransform", "ReshapeTransform", "SigmoidTransform", "SoftplusTransform",
           "TanhTransform", "SoftmaxTransform", "StackTransform", "StickBreakingTransform",
           "Transform", "identity_transform"]


class Transform:
    """Base class. A subclass gives ``_call``, ``_inverse``, ``log_abs_det_jacobian`` and its
    ``domain``/``codomain``; ``cache_size=1`` remembers the last (x, y) pair so inverting a
    value just produced returns the original x exactly."""
    bijective = False
    domain = constraints.real
    codomain = constraints.real

    def __init__(self, cache_size=0):
        if cache_size not in (0, 1):
            raise ValueError("cache_size must be 0 or 1")
        self._cache_size = cache_size
        self._cached = (None, None)
        self._inv = None

    @property
    def event_dim(self):
        if self.domain.event_dim == self.codomain.event_dim:
            return self.domain.event_dim
        raise ValueError("Please use either .domain.event_dim or .codomain.event_dim")

    @property
    def inv(self):
        if self._inv is None:
            self._inv = _InverseTransform(self)
        return self._inv

    @property
    def sign(self):
        raise NotImplementedError

    def with_cache(self, cache_size=1):
        if self._cache_size == cache_size:
            return self
        if type(self).__init__ is Transform.__init__:
            return type(self)(cache_size=cache_size)
        raise NotImplementedError(f"{type(self)}.with_cache is not implemented")

    def __eq__(self, other):
        # stateless transforms are equal to any instance of their class
        if type(self).__init__ is Transform.__init__:
            return type(other) is type(self)
        return self is other

    def __ne__(self, other):
        return not self.__eq__(other)

    __hash__ = object.__hash__

    def __call__(self, x):
        if not self._cache_size:
            return self._call(x)
        if self._cached[0] is x:
            return self._cached[1]
        y = self._call(x)
        self._cached = (x, y)
        return y

    def _inv_call(self, y):
        if not self._cache_size:
            return self._inverse(y)
        if self._cached[1] is y:
            return self._cached[0]
        x = self._inverse(y)
        self._cached = (x, y)
        return x

    def _call(self, x):
        raise NotImplementedError

    def _inverse(self, y):
        raise NotImplementedError

    def log_abs_det_jacobian(self, x, y):
        raise NotImplementedError

    def forward_shape(self, shape):
        return shape

    def inverse_shape(self, shape):
        return shape

    def __repr__(self):
        return f"{type(self).__name__}()"


class _InverseTransform(Transform):
    """``t.inv``: swaps the roles of x and y of the transform it wraps (and shares its cache)."""

    def __init__(self, transform):
        super().__init__(cache_size=transform._cache_size)
        self._inv = transform

    domain = property(lambda self: self._inv.codomain)
    codomain = property(lambda self: self._inv.domain)
    bijective = property(lambda self: self._inv.bijective)
    sign = property(lambda self: self._inv.sign)
    inv = property(lambda self: self._inv)

    def with_cache(self, cache_size=1):
        return self._inv.with_cache(cache_size).inv

    def __eq__(self, other):
        return isinstance(other, _InverseTransform) and self._inv == other._inv

    __hash__ = object.__hash__

    def __call__(self, x):
        return self._inv._inv_call(x)

    def log_abs_det_jacobian(self, x, y):
        return -self._inv.log_abs_det_jacobian(y, x)

    def forward_shape(self, shape):
        return self._inv.inverse_shape(shape)

    def inverse_shape(self, shape):
        return self._inv.forward_shape(shape)

    def __repr__(self):
        return f"_InverseTransform({self._inv!r})"


class ComposeTransform(Transform):
    """``parts`` applied left to right; an empty list is the identity."""

    def __init__(self, parts, cache_size=0):
        if cache_size:
            parts = [p.with_cache(cache_size) for p in parts]
        super().__init__(cache_size=cache_size)
        self.parts = list(parts)

    def __eq__(self, other):
        return isinstance(other, ComposeTransform) and self.parts == other.parts

    __hash__ = object.__hash__

    def _widest_event_dim(self, forward):
        """Event dim of the whole chain at its input (forward) or output end: each part may
        raise the number of dims the parts after/before it treat as one event."""
        parts = self.parts if forward else self.parts[::-1]
        ins = [(p.domain, p.codomain) if forward else (p.codomain, p.domain) for p in parts]
        event_dim = ins[-1][1].event_dim
        for a, b in reversed(ins):
            event_dim = max(event_dim + a.event_dim - b.event_dim, a.event_dim)
        return event_dim

    @property
    def domain(self):
        if not self.parts:
            return constraints.real
        base = self.parts[0].domain
        extra = self._widest_event_dim(True) - base.event_dim
        return constraints.independent(base, extra) if extra > 0 else base

    @property
    def codomain(self):
        if not self.parts:
            return constraints.real
        base = self.parts[-1].codomain
        extra = self._widest_event_dim(False) - base.event_dim
        return constraints.independent(base, extra) if extra > 0 else base

    @property
    def bijective(self):
        return all(p.bijective for p in self.parts)

    @property
    def sign(self):
        s = 1
        for p in self.parts:
            s = s * p.sign
        return s

    @property
    def inv(self):
        if self._inv is None:
            self._inv = ComposeTransform([p.inv for p in reversed(self.parts)])
            self._inv._inv = self
        return self._inv

    def with_cache(self, cache_size=1):
        return self if self._cache_size == cache_size else ComposeTransform(self.parts,
                                                                           cache_size)

    def __call__(self, x):
        for p in self.parts:
            x = p(x)
        return x

    def _inv_call(self, y):
        return self.inv(y)

    def log_abs_det_jacobian(self, x, y):
        if not self.parts:
            return ember.zeros_like(x)
        values = [x]
        for p in self.parts[:-1]:
            values.append(p(values[-1]))
        values.append(y)
        total, event_dim = 0, self.domain.event_dim
        for p, a, b in zip(self.parts, values, values[1:]):
            term = p.log_abs_det_jacobian(a, b)
            total = total + _sum_rightmost(term, event_dim - p.domain.event_dim)
            event_dim += p.codomain.event_dim - p.domain.event_dim
        return total

    def forward_shape(self, shape):
        for p in self.parts:
            shape = p.forward_shape(shape)
        return shape

    def inverse_shape(self, shape):
        for p in reversed(self.parts):
            shape = p.inverse_shape(shape)
        return shape

    def __repr__(self):
        inner = ",\n    ".join(repr(p) for p in self.parts)
        return f"{type(self).__name__}(\n    {inner}\n)"


identity_transform = ComposeTransform([])


class IndependentTransform(Transform):
    """A base transform whose rightmost ``reinterpreted_batch_ndims`` dims form one event."""

    def __init__(self, base_transform, reinterpreted_batch_ndims, cache_size=0):
        super().__init__(cache_size=cache_size)
        self.base_transform = base_transform.with_cache(cache_size)
        self.reinterpreted_batch_ndims = reinterpreted_batch_ndims

    def with_cache(self, cache_size=1):
        if self._cache_size == cache_size:
            return self
        return IndependentTransform(self.base_transform, self.reinterpreted_batch_ndims,
                                    cache_size)

    domain = property(lambda self: constraints.independent(self.base_transform.domain,
                                                           self.reinterpreted_batch_ndims))
    codomain = property(lambda self: constraints.independent(self.base_transform.codomain,
                                                             self.reinterpreted_batch_ndims))
    bijective = property(lambda self: self.base_transform.bijective)
    sign = property(lambda self: self.base_transform.sign)

    def _call(self, x):
        if x.dim() < self.domain.event_dim:
            raise ValueError("Too few dimensions on input")
        return self.base_transform(x)

    def _inverse(self, y):
        if y.dim() < self.codomain.event_dim:
            raise ValueError("Too few dimensions on input")
        return self.base_transform.inv(y)

    def log_abs_det_jacobian(self, x, y):
        return _sum_rightmost(self.base_transform.log_abs_det_jacobian(x, y),
                              self.reinterpreted_batch_ndims)

    def forward_shape(self, shape):
        return self.base_transform.forward_shape(shape)

    def inverse_shape(self, shape):
        return self.base_transform.inverse_shape(shape)

    def __repr__(self):
        return f"IndependentTransform({self.base_transform!r}, {self.reinterpreted_batch_ndims})"


class ReshapeTransform(Transform):
    """Reshape the rightmost ``in_shape`` dims into ``out_shape`` (unit Jacobian)."""
    bijective = True

    def __init__(self, in_shape, out_shape, cache_size=0):
        self.in_shape, self.out_shape = ember.Size(in_shape), ember.Size(out_shape)
        if self.in_shape.numel() != self.out_shape.numel():
            raise ValueError("in_shape, out_shape have different numbers of elements")
        super().__init__(cache_size=cache_size)

    domain = property(lambda self: constraints.independent(constraints.real, len(self.in_shape)))
    codomain = property(lambda self: constraints.independent(constraints.real,
                                                             len(self.out_shape)))

    def with_cache(self, cache_size=1):
        if self._cache_size == cache_size:
            return self
        return ReshapeTransform(self.in_shape, self.out_shape, cache_size=cache_size)

    def _call(self, x):
        return x.reshape(x.shape[:x.dim() - len(self.in_shape)] + self.out_shape)

    def _inverse(self, y):
        return y.reshape(y.shape[:y.dim() - len(self.out_shape)] + self.in_shape)

    def log_abs_det_jacobian(self, x, y):
        return x.new_zeros(x.shape[:x.dim() - len(self.in_shape)])

    def _reshape(self, shape, src, dst):
        if len(shape) < len(src):
            raise ValueError("Too few dimensions on input")
        cut = len(shape) - len(src)
        if tuple(shape[cut:]) != tuple(src):
            raise ValueError(f"Shape mismatch: expected {tuple(shape[cut:])} but got {tuple(src)}")
        return ember.Size(tuple(shape[:cut]) + tuple(dst))

    def forward_shape(self, shape):
        return self._reshape(shape, self.in_shape, self.out_shape)

    def inverse_shape(self, shape):
        return self._reshape(shape, self.out_shape, self.in_shape)


# ---- elementwise bijections --------------------------------------------------------------

def _clipped_sigmoid(x):
    info = ember.finfo(x.dtype)
    return ember.clamp(ember.sigmoid(x), min=info.tiny, max=1.0 - info.eps)


class ExpTransform(Transform):
    codomain, bijective, sign = constraints.positive, True, +1

    def _call(self, x):
        return x.exp()

    def _inverse(self, y):
        return y.log()

    def log_abs_det_jacobian(self, x, y):
        return x


class SigmoidTransform(Transform):
    codomain, bijective, sign = constraints.unit_interval, True, +1

    def _call(self, x):
        return _clipped_sigmoid(x)

    def _inverse(self, y):
        info = ember.finfo(y.dtype)
        y = y.clamp(min=info.tiny, max=1.0 - info.eps)
        return y.log() - (-y).log1p()

    def log_abs_det_jacobian(self, x, y):
        # log sigmoid'(x) = log sigmoid(x) + log sigmoid(-x)
        return -F.softplus(-x) - F.softplus(x)


class SoftplusTransform(Transform):
    codomain, bijective, sign = constraints.positive, True, +1

    def _call(self, x):
        return F.softplus(x)

    def _inverse(self, y):
        return (-y).expm1().neg().log() + y  # log(exp(y) - 1), stable for large y

    def log_abs_det_jacobian(self, x, y):
        return -F.softplus(-x)


class TanhTransform(Transform):
    codomain, bijective, sign = constraints.interval(-1.0, 1.0), True, +1

    def _call(self, x):
        return x.tanh()

    def _inverse(self, y):
        return ember.atanh(y)

    def log_abs_det_jacobian(self, x, y):
        # log(1 - tanh(x)^2) written without cancellation
        return 2.0 * (math.log(2.0) - x - F.softplus(-2.0 * x))


class AbsTransform(Transform):
    codomain = constraints.positive

    def _call(self, x):
        return x.abs()

    def _inverse(self, y):
        return y


class PowerTransform(Transform):
    """y = x ** exponent on the positive reals."""
    domain = codomain = constraints.positive
    bijective = True

    def __init__(self, exponent, cache_size=0):
        super().__init__(cache_size=cache_size)
        (self.exponent,) = _as_tensors(exponent)

    def with_cache(self, cache_size=1):
        return self if self._cache_size == cache_size else PowerTransform(self.exponent,
                                                                          cache_size)

    @property
    def sign(self):
        return self.exponent.sign()

    def __eq__(self, other):
        return isinstance(other, PowerTransform) and bool(self.exponent.eq(other.exponent).all())

    __hash__ = object.__hash__

    def _call(self, x):
        return x.pow(self.exponent)

    def _inverse(self, y):
        return y.pow(1 / self.exponent)

    def log_abs_det_jacobian(self, x, y):
        return (self.exponent * y / x).abs().log()

    def forward_shape(self, shape):
        return ember.broadcast_shapes(shape, self.exponent.shape)

    inverse_shape = forward_shape


def _as_tensors(*values):
    return [v if isinstance(v, ember.Tensor) else ember.tensor(v) for v in values]


class AffineTransform(Transform):
    """y = loc + scale * x, with the rightmost ``event_dim`` dims forming one event."""
    bijective = True

    def __init__(self, loc, scale, event_dim=0, cache_size=0):
        super().__init__(cache_size=cache_size)
        self.loc, self.scale, self._event_dim = loc, scale, event_dim

    event_dim = property(lambda self: self._event_dim)

    @property
    def domain(self):
        return constraints.independent(constraints.real, self._event_dim) if self._event_dim \
            else constraints.real

    codomain = domain

    def with_cache(self, cache_size=1):
        if self._cache_size == cache_size:
            return self
        return AffineTransform(self.loc, self.scale, self._event_dim, cache_size=cache_size)

    def __eq__(self, other):
        if not isinstance(other, AffineTransform):
            return False

        def same(a, b):
            if isinstance(a, numbers.Number) and isinstance(b, numbers.Number):
                return a == b
            return bool((ember.as_tensor(a) == ember.as_tensor(b)).all())
        return same(self.loc, other.loc) and same(self.scale, other.scale)

    __hash__ = object.__hash__

    @property
    def sign(self):
        if isinstance(self.scale, numbers.Real):
            return 1 if float(self.scale) > 0 else -1 if float(self.scale) < 0 else 0
        return self.scale.sign()

    def _call(self, x):
        return self.loc + self.scale * x

    def _inverse(self, y):
        return (y - self.loc) / self.scale

    def log_abs_det_jacobian(self, x, y):
        if isinstance(self.scale, numbers.Number):
            result = ember.full_like(x, math.log(abs(self.scale)))
        else:
            result = self.scale.abs().log()
        shape = x.shape
        if self._event_dim:
            result = _sum_rightmost(result, self._event_dim)
            shape = shape[:len(shape) - self._event_dim]
        return result.expand(shape)

    def _param_shapes(self):
        return [getattr(p, "shape", ()) for p in (self.loc, self.scale)]

    def forward_shape(self, shape):
        return ember.broadcast_shapes(shape, *self._param_shapes())

    inverse_shape = forward_shape


# ---- maps onto simplices and matrices ----------------------------------------------------

class SoftmaxTransform(Transform):
    """Real vectors onto the simplex (not injective: adding a constant changes nothing)."""
    domain, codomain = constraints.real_vector, constraints.simplex

    def _call(self, x):
        probs = (x - x.max(-1, keepdim=True)[0]).exp()
        return probs / probs.sum(-1, True)

    def _inverse(self, y):
        return y.log()

    def forward_shape(self, shape):
        if len(shape) < 1:
            raise ValueError("Too few dimensions on input")
        return shape

    inverse_shape = forward_shape


class StickBreakingTransform(Transform):
    """R^(K-1) onto the K-simplex: each coordinate, through a sigmoid shifted so that zero maps
    to the uniform point, takes its fraction of the stick left over by the previous ones."""
    domain, codomain, bijective = constraints.real_vector, constraints.simplex, True

    @staticmethod
    def _log_offset(n, like):
        # log(K - k) for k = 1..K-1 (K = n + 1): the shift centring each break
        return (n + 1 - ember.arange(1, n + 1, dtype=like.dtype)).log()

    def _call(self, x):
        z = _clipped_sigmoid(x - self._log_offset(x.shape[-1], x))
        left = (1 - z).cumprod(-1)
        ones = ember.ones(x.shape[:-1] + (1,), dtype=x.dtype)
        return ember.cat([z, ones], -1) * ember.cat([ones, left], -1)

    def _inverse(self, y):
        head = y[..., :-1]
        left = (1 - head.cumsum(-1)).clamp(min=ember.finfo(y.dtype).tiny)
        return head.log() - left.log() + self._log_offset(head.shape[-1], y)

    def log_abs_det_jacobian(self, x, y):
        x = x - self._log_offset(x.shape[-1], x)
        return (-x + F.logsigmoid(x) + y[..., :-1].log()).sum(-1)

    def forward_shape(self, shape):
        if len(shape) < 1:
            raise ValueError("Too few dimensions on input")
        return shape[:-1] + (shape[-1] + 1,)

    def inverse_shape(self, shape):
        if len(shape) < 1:
            raise ValueError("Too few dimensions on input")
        return shape[:-1] + (shape[-1] - 1,)


class LowerCholeskyTransform(Transform):
    """Square matrices onto lower-triangular ones with a positive (exponentiated) diagonal."""
    domain, codomain = constraints.independent(constraints.real, 2), constraints.lower_cholesky

    def _call(self, x):
        return x.tril(-1) + x.diagonal(dim1=-2, dim2=-1).exp().diag_embed()

    def _inverse(self, y):
        return y.tril(-1) + y.diagonal(dim1=-2, dim2=-1).log().diag_embed()


class PositiveDefiniteTransform(Transform):
    """Square matrices onto positive-definite ones: L L^T of their lower-Cholesky image."""
    domain = constraints.independent(constraints.real, 2)
    codomain = constraints.positive_definite

    def _call(self, x):
        low = LowerCholeskyTransform()(x)
        return low @ low.mT

    def _inverse(self, y):
        return LowerCholeskyTransform().inv(ember.linalg.cholesky(y))


class CorrCholeskyTransform(Transform):
    """Vectors of length D(D-1)/2 onto Cholesky factors of DxD correlation matrices: tanh maps
    each entry into (-1, 1), and each row is filled so its squared entries sum to one."""
    domain, codomain, bijective = constraints.real_vector, constraints.corr_cholesky, True

    def _call(self, x):
        from .utils import vec_to_tril_matrix
        r = vec_to_tril_matrix(ember.tanh(x).clamp(-1 + ember.finfo(x.dtype).eps,
                                                   1 - ember.finfo(x.dtype).eps), diag=-1)
        z = r.square()
        # row i: w_ij = r_ij * sqrt(1 - sum_{k<j} w_ik^2); the diagonal takes what is left
        n = r.shape[-1]
        eye = ember.eye(n, dtype=x.dtype)
        left = (1 - z).sqrt().cumprod(-1)
        shifted = ember.cat([ember.ones(left.shape[:-1] + (1,), dtype=x.dtype), left[..., :-1]],
                            -1)
        return (r + eye) * shifted

    def _inverse(self, y):
        from .utils import tril_matrix_to_vec
        left = 1 - y.square().cumsum(-1)
        shifted = ember.cat([ember.ones(left.shape[:-1] + (1,), dtype=y.dtype), left[..., :-1]],
                            -1)
        r = tril_matrix_to_vec(y / shifted.sqrt(), diag=-1)
        return ember.atanh(r.clamp(-1 + ember.finfo(y.dtype).eps, 1 - ember.finfo(y.dtype).eps))

    def log_abs_det_jacobian(self, x, y, intermediates=None):
        from .utils import tril_matrix_to_vec
        # d w_ij / d r_ij = sqrt(1 - sum_{k<j} w_ik^2): half the log of the stick left before
        # column j, i.e. the cumulative sum up to column j-1 (the triangle below diagonal -1)
        left = 1 - y.square().cumsum(-1)
        stick = 0.5 * tril_matrix_to_vec(left, diag=-2).log()
        tanh_term = 2.0 * (math.log(2.0) - x - F.softplus(-2.0 * x))
        return stick.sum(-1) + tanh_term.sum(-1)

    def forward_shape(self, shape):
        if len(shape) < 1:
            raise ValueError("Too few dimensions on input")
        n = shape[-1]
        d = round((0.25 + 2 * n) ** 0.5 + 0.5)
        if d * (d - 1) // 2 != n:
            raise ValueError("Input is not a flattened lower-diagonal number")
        return shape[:-1] + (d, d)

    def inverse_shape(self, shape):
        if len(shape) < 2:
            raise ValueError("Too few dimensions on input")
        if shape[-2] != shape[-1]:
            raise ValueError("Input is not square")
        d = shape[-1]
        return shape[:-2] + (d * (d - 1) // 2,)


# ---- transforms of pieces of a tensor ----------------------------------------------------

class CatTransform(Transform):
    """``tseq[i]`` applied to the i-th block (``lengths[i]`` long) of dimension ``dim``."""

    def __init__(self, tseq, dim=0, lengths=None, cache_size=0):
        if cache_size:
            tseq = [t.with_cache(cache_size) for t in tseq]
        super().__init__(cache_size=cache_size)
        self.transforms = list(tseq)
        self.lengths = list(lengths) if lengths is not None else [1] * len(self.transforms)
        assert len(self.lengths) == len(self.transforms)
        self.dim = dim

    event_dim = property(lambda self: max(t.event_dim for t in self.transforms))
    length = property(lambda self: sum(self.lengths))
    bijective = property(lambda self: all(t.bijective for t in self.transforms))
    domain = property(lambda self: constraints.cat([t.domain for t in self.transforms],
                                                   self.dim, self.lengths))
    codomain = property(lambda self: constraints.cat([t.codomain for t in self.transforms],
                                                     self.dim, self.lengths))

    def with_cache(self, cache_size=1):
        if self._cache_size == cache_size:
            return self
        return CatTransform(self.transforms, self.dim, self.lengths, cache_size)

    def _map(self, value, fn):
        assert value.size(self.dim) == self.length
        return ember.cat([fn(t, v) for t, v in zip(self.transforms,
                                                    value.split(self.lengths, self.dim))],
                         self.dim)

    def _call(self, x):
        return self._map(x, lambda t, v: t(v))

    def _inverse(self, y):
        return self._map(y, lambda t, v: t.inv(v))

    def log_abs_det_jacobian(self, x, y):
        dim = self.dim if self.dim < 0 else self.dim - x.dim()  # counted from the right
        terms = []
        for t, xs, ys in zip(self.transforms, x.split(self.lengths, self.dim),
                             y.split(self.lengths, self.dim)):
            term = t.log_abs_det_jacobian(xs, ys)
            if t.event_dim < self.event_dim:
                term = _sum_rightmost(term, self.event_dim - t.event_dim)
            terms.append(term)
        if -dim <= self.event_dim:  # the cat dim is inside the event: the pieces add up
            return sum(terms)
        return ember.cat(terms, dim + self.event_dim)


class StackTransform(Transform):
    """``tseq[i]`` applied to index i of dimension ``dim``."""

    def __init__(self, tseq, dim=0, cache_size=0):
        if cache_size:
            tseq = [t.with_cache(cache_size) for t in tseq]
        super().__init__(cache_size=cache_size)
        self.transforms = list(tseq)
        self.dim = dim

    bijective = property(lambda self: all(t.bijective for t in self.transforms))
    domain = property(lambda self: constraints.stack([t.domain for t in self.transforms],
                                                     self.dim))
    codomain = property(lambda self: constraints.stack([t.codomain for t in self.transforms],
                                                       self.dim))

    def with_cache(self, cache_size=1):
        if self._cache_size == cache_size:
            return self
        return StackTransform(self.transforms, self.dim, cache_size)

    def _map(self, values, fn):
        assert values[0].size(self.dim) == len(self.transforms)
        return ember.stack([fn(t, *(v.select(self.dim, i) for v in values))
                            for i, t in enumerate(self.transforms)], self.dim)

    def _call(self, x):
        return self._map([x], lambda t, v: t(v))

    def _inverse(self, y):
        return self._map([y], lambda t, v: t.inv(v))

    def log_abs_det_jacobian(self, x, y):
        return self._map([x, y], lambda t, a, b: t.log_abs_det_jacobian(a, b))


class CumulativeDistributionTransform(Transform):
    """x -> F(x), the CDF of a univariate ``distribution``: onto the unit interval."""
    bijective, codomain, sign = True, constraints.unit_interval, +1

    def __init__(self, distribution, cache_size=0):
        super().__init__(cache_size=cache_size)
        self.distribution = distribution

    domain = property(lambda self: self.distribution.support)

    def with_cache(self, cache_size=1):
        if self._cache_size == cache_size:
            return self
        return CumulativeDistributionTransform(self.distribution, cache_size=cache_size)

    def _call(self, x):
        return self.distribution.cdf(x)

    def _inverse(self, y):
        return self.distribution.icdf(y)

    def log_abs_det_jacobian(self, x, y):
        return self.distribution.log_prob(x)
