"""The foreach ops (PyTorch's ForeachOps) as their single-tensor op over the lists: one table row
per overload names that op, and the kernels are generated from it. A list argument (``Tensor[]``,
``Scalar[]``) gives each call its i-th element; every other argument goes to every call.

* A functional overload is a decomposition (CompositeImplicitAutograd): PyTorch derives its
  gradient from the single op per element, and decomposing gives ember the same gradients. The
  ``EXPLICIT`` ones are CompositeExplicitAutograd: the maximum/minimum of numbers (clamp_min/
  clamp_max over the list) with their own ``derivatives.yaml`` entries, as in PyTorch, and those
  PyTorch records no gradient for. ``_foreach_norm`` and ``_foreach_powsum`` are written out.
* An in-place overload's kernel is PyTorch's slow path (CompositeExplicitAutograd, so every backend
  has it): the single in-place op per tensor, below ADInplaceOrView (the foreach op bumps each
  tensor's version once). The optimizers' overloads also have fast CPU kernels
  (``cpu/foreach.py``) and CUDA kernels (``cuda/foreach.py``). Their autograd is the single op's,
  one node per tensor: ``inplace_reference`` is what ``ember/autograd/derivatives.py`` runs when a
  gradient is to be recorded.
"""
import itertools

from ..._dispatch.tls import ExcludeDispatchKeyGuard
from ..._ops.overload import ops
from ..registration import register
from ..rules.foreach import (_check_lengths, check_packed_scalars, check_scalar_list,
                             check_scalar_tensor, foreach_max_check, foreach_norm_check,
                             foreach_powsum_check)

_aten = ops.aten  # ops resolve when called: the op table is built after the kernels load

_UNARY = ("abs acos asin atan ceil cos cosh erf erfc exp expm1 floor frac lgamma log log10 log1p "
          "log2 neg reciprocal round rsqrt sigmoid sign sin sinh sqrt tan tanh trunc").split()

# foreach overload -> (functional single op, in-place single op), as PyTorch's slow paths call
# them (maximum/minimum of a number or numbers are clamp_min/clamp_max there too)
SINGLE = {}
for _name in _UNARY:
    SINGLE[f"_foreach_{_name}"] = (f"{_name}.default", f"{_name}_.default")
for _name in ("add", "sub", "mul", "div"):
    SINGLE[f"_foreach_{_name}.Scalar"] = (f"{_name}.Scalar", f"{_name}_.Scalar")
    SINGLE[f"_foreach_{_name}.ScalarList"] = (f"{_name}.Scalar", f"{_name}_.Scalar")
    SINGLE[f"_foreach_{_name}.List"] = (f"{_name}.Tensor", f"{_name}_.Tensor")
    if _name != "sub":
        SINGLE[f"_foreach_{_name}.Tensor"] = (f"{_name}.Tensor", f"{_name}_.Tensor")
for _name, _clamp in (("clamp_min", "clamp_min"), ("clamp_max", "clamp_max"),
                      ("maximum", "clamp_min"), ("minimum", "clamp_max")):
    SINGLE[f"_foreach_{_name}.Scalar"] = (f"{_clamp}.default", f"{_clamp}_.default")
    SINGLE[f"_foreach_{_name}.ScalarList"] = (f"{_clamp}.default", f"{_clamp}_.default")
    SINGLE[f"_foreach_{_name}.List"] = (f"{_name}.default" if _name != _clamp else
                                        f"{_clamp}.Tensor", f"{_clamp}_.Tensor")
for _name in ("addcmul", "addcdiv"):
    for _ov in ("Scalar", "ScalarList", "Tensor"):
        SINGLE[f"_foreach_{_name}.{_ov}"] = (f"{_name}.default", f"{_name}_.default")
SINGLE.update({
    "_foreach_pow.Scalar": ("pow.Tensor_Scalar", "pow_.Scalar"),
    "_foreach_pow.ScalarList": ("pow.Tensor_Scalar", "pow_.Scalar"),
    "_foreach_pow.List": ("pow.Tensor_Tensor", "pow_.Tensor"),
    "_foreach_pow.ScalarAndTensor": ("pow.Scalar", None),
    "_foreach_lerp.Scalar": ("lerp.Scalar", "lerp_.Scalar"),
    "_foreach_lerp.ScalarList": ("lerp.Scalar", "lerp_.Scalar"),
    "_foreach_lerp.List": ("lerp.Tensor", "lerp_.Tensor"),
    "_foreach_zero": ("zero.default", "zero_.default"),
    "_foreach_copy": ("copy.default", "copy_.default"),
    "_foreach_clone": ("clone.default", None),
    "_foreach_mm": ("mm.default", None),
})
# functional overloads that are CompositeExplicitAutograd: the maximum/minimum of numbers have
# their own derivatives.yaml entries, as in PyTorch (half the gradient at a tie, which
# clamp_min/clamp_max's formulas do not give); the others PyTorch records no gradient for
EXPLICIT = {"_foreach_maximum.Scalar", "_foreach_maximum.ScalarList", "_foreach_minimum.Scalar",
            "_foreach_minimum.ScalarList", "_foreach_addcmul.Tensor", "_foreach_addcdiv.Tensor",
            "_foreach_copy", "_foreach_zero"}
# in-place overloads PyTorch records no gradient for (its NotImplemented node)
NOT_DIFFERENTIABLE = {"_foreach_copy_", "_foreach_addcmul_.Tensor", "_foreach_addcdiv_.Tensor",
                      "_foreach_maximum_.Scalar", "_foreach_maximum_.ScalarList",
                      "_foreach_minimum_.Scalar", "_foreach_minimum_.ScalarList"}


def _op(qualified):
    base, _, overload = qualified.partition(".")
    return getattr(getattr(_aten, base), overload)


def _single_call(qualified):
    """A call of the single op with all its arguments: those the foreach op does not have get
    their defaults (``add.Scalar``'s alpha)."""
    op = _op(qualified)
    defaults = tuple(a.default for a in op._schema.arguments)
    call = op._call
    return lambda args: call(*args, *defaults[len(args):])


def _inplace_name(name):
    base, dot, overload = name.partition(".")
    return f"{base}_{dot}{overload}"


def _schema_args(name):
    return _op(name if "." in name else name + ".default")._schema.arguments


def _calls(name, args):
    """Each tensor's argument tuple for the single op, after the foreach op's own checks."""
    schema = _schema_args(name)
    tensor_lists = [a for a, s in zip(args, schema) if s.is_list and s.base == "Tensor"]
    _check_lengths(*tensor_lists)
    self = tensor_lists[0]
    args = list(args)
    for i, (a, s) in enumerate(zip(args, schema)):
        if s.is_list and s.base == "Scalar":
            check_scalar_list(self, a)
        elif not s.is_list and s.base == "Tensor" and s.name == "other":
            check_scalar_tensor(a)
        elif not s.is_list and s.base == "Tensor" and s.name == "scalars":
            check_packed_scalars(self, a)
            args[i] = a.tolist()
    n = len(self)
    return list(zip(*[a if isinstance(a, (list, tuple)) else itertools.repeat(a, n)
                      for a in args]))


def _functional(name, single):
    op = None

    def kernel(*args):
        nonlocal op
        calls = _calls(name, args)
        op = op or _single_call(single)
        return tuple(op(call) for call in calls)
    kernel.__name__ = kernel.__qualname__ = name.replace(".", "_")
    return kernel


def _reference(name, single):
    """The in-place overload ``name`` as its single in-place op per tensor, at the caller's
    dispatch level (each call bumps its tensor's version and records its own gradient)."""
    op = None

    def reference(*args):
        nonlocal op
        calls = _calls(name, args)
        op = op or _single_call(single)
        for call in calls:
            op(call)
    return reference


def _copy_reference(name, single):
    """maximum_/minimum_ of lists: PyTorch's gradient is maximum's/minimum's (half at a tie), and
    there is no in-place maximum: the values come from the functional op and are copied in."""
    op = None

    def reference(*args):
        nonlocal op
        calls = _calls(name, args)
        op = op or _single_call(single)
        for call in calls:  # (of a copy of self, which the formula saves)
            call[0].copy_(op((call[0].clone(),) + call[1:]))
    return reference


def _slow_path(reference, name):
    def kernel(*args):
        with ExcludeDispatchKeyGuard("ADInplaceOrView"):
            reference(*args)
    kernel.__name__ = kernel.__qualname__ = name.replace(".", "_")
    return kernel


_REFERENCES = {}
FUNCTIONAL = {}  # overload name -> its kernel here (the CUDA kernels' fallbacks call them)
for _name, (_single, _single_) in SINGLE.items():
    _key = "CompositeExplicitAutograd" if _name in EXPLICIT else "CompositeImplicitAutograd"
    FUNCTIONAL[_name] = _functional(_name, _single)
    register(_name, _key, FUNCTIONAL[_name])
    if _single_ is not None:
        _inplace = _inplace_name(_name)
        _ref = _reference(_inplace, _single_)
        register(_inplace, "CompositeExplicitAutograd", _slow_path(_ref, _inplace))
        if _inplace in ("_foreach_maximum_.List", "_foreach_minimum_.List"):
            _ref = _copy_reference(_inplace, _single)
        if _inplace not in NOT_DIFFERENTIABLE:
            _REFERENCES[_inplace] = _ref

def inplace_reference(name):
    """The single-op path of in-place foreach overload ``name`` ("_foreach_add_.Scalar"), or None
    for those PyTorch records no gradient for."""
    return _REFERENCES.get(name)


def _foreach_norm_Scalar(self, ord=2, dtype=None):
    """PyTorch's slow path (``foreach_tensor_norm_slow``): each tensor's vector norm, one
    dispatcher call each, so every backend that has ``linalg_vector_norm`` has this op. Its
    gradient is its own ``derivatives.yaml`` entry, as in PyTorch."""
    foreach_norm_check(self, ord)
    return tuple(_aten.linalg_vector_norm.default._call(t, ord, None, False, dtype) for t in self)


def _foreach_max(self):
    """Each tensor's largest element (``foreach_tensor_max_slow``); its gradient is max's."""
    foreach_max_check(self)
    return tuple(_aten.max.default._call(t) for t in self)


def _foreach_powsum(self, ord=2, dtype=None):
    """Each tensor's sum of ``|x| ** ord`` (the norm before its root). PyTorch defines no
    gradient for it."""
    foreach_powsum_check(self)
    out = []
    for t in self:
        x = t if dtype is None else _aten._to_copy.default(t, dtype=dtype)
        out.append(_aten.sum.default._call(_aten.pow.Tensor_Scalar._call(
            _aten.abs.default._call(x), ord), None))
    return tuple(out)


register("_foreach_max", "CompositeImplicitAutograd", _foreach_max)
register("_foreach_powsum.Scalar", "CompositeExplicitAutograd", _foreach_powsum)
