"""``biject_to(c)`` and ``transform_to(c)``: from a constraint to a transform taking
unconstrained real space onto it (bijective for ``biject_to``, for HMC-style samplers; merely
onto for ``transform_to``, for optimisers). Factories are keyed by the constraint's class."""
import numbers

from . import constraints, transforms

__all__ = ["ConstraintRegistry", "biject_to", "transform_to"]


class ConstraintRegistry:
    def __init__(self):
        self._registry = {}

    def register(self, constraint, factory=None):
        """Register ``factory(constraint) -> Transform`` for a constraint class (or the class
        of a constraint instance); usable as a decorator."""
        if factory is None:
            return lambda f: self.register(constraint, f)
        if isinstance(constraint, constraints.Constraint):
            constraint = type(constraint)
        if not (isinstance(constraint, type) and issubclass(constraint, constraints.Constraint)):
            raise TypeError("Expected constraint to be either a Constraint subclass or instance, "
                            f"but got {constraint}")
        self._registry[constraint] = factory
        return factory

    def __call__(self, constraint):
        try:
            factory = self._registry[type(constraint)]
        except KeyError:
            raise NotImplementedError(f"Cannot transform {type(constraint).__name__} "
                                      "constraints") from None
        return factory(constraint)


biject_to = ConstraintRegistry()
transform_to = ConstraintRegistry()

C, T = constraints, transforms


def _both(constraint_class, factory):
    biject_to.register(constraint_class, factory)
    transform_to.register(constraint_class, factory)


_both(C._Real, lambda c: T.identity_transform)


def _independent(registry):
    def factory(c):
        inner = registry(c.base_constraint)
        return T.IndependentTransform(inner, c.reinterpreted_batch_ndims)
    return factory


biject_to.register(C._IndependentConstraint, _independent(biject_to))
transform_to.register(C._IndependentConstraint, _independent(transform_to))


def _lower_bounded(c):
    # exp maps R onto (0, inf); shift it to start at the bound
    if isinstance(c, C._GreaterThan) and type(c) in (C._GreaterThan, C._GreaterThanEq) and \
            isinstance(c.lower_bound, numbers.Number) and c.lower_bound == 0:
        return T.ExpTransform()
    return T.ComposeTransform([T.ExpTransform(), T.AffineTransform(c.lower_bound, 1)])


def _upper_bounded(c):
    return T.ComposeTransform([T.ExpTransform(), T.AffineTransform(c.upper_bound, -1)])


def _interval(c):
    lo, hi = c.lower_bound, c.upper_bound
    if isinstance(lo, numbers.Number) and isinstance(hi, numbers.Number) and lo == 0 and hi == 1:
        return T.SigmoidTransform()
    return T.ComposeTransform([T.SigmoidTransform(), T.AffineTransform(lo, hi - lo)])


for _cls in (C._GreaterThan, C._GreaterThanEq):
    _both(_cls, _lower_bounded)
_both(C._LessThan, _upper_bounded)
for _cls in (C._Interval, C._HalfOpenInterval):
    _both(_cls, _interval)

biject_to.register(C._Simplex, lambda c: T.StickBreakingTransform())
transform_to.register(C._Simplex, lambda c: T.SoftmaxTransform())
# onto, not one-to-one on the whole space of square matrices: transform_to only
transform_to.register(C._LowerCholesky, lambda c: T.LowerCholeskyTransform())
transform_to.register(C._PositiveDefinite, lambda c: T.PositiveDefiniteTransform())
transform_to.register(C._PositiveSemidefinite, lambda c: T.PositiveDefiniteTransform())
_both(C._CorrCholesky, lambda c: T.CorrCholeskyTransform())


def _cat(registry):
    return lambda c: T.CatTransform([registry(x) for x in c.cseq], c.dim, c.lengths)


def _stack(registry):
    return lambda c: T.StackTransform([registry(x) for x in c.cseq], c.dim)


biject_to.register(C._Cat, _cat(biject_to))
transform_to.register(C._Cat, _cat(transform_to))
biject_to.register(C._Stack, _stack(biject_to))
transform_to.register(C._Stack, _stack(transform_to))
