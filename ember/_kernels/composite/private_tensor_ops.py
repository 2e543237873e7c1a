"""Kernels of PyTorch's private Tensor ops that user code meets (``_lazy_clone``,
``_is_all_true``/``_is_any_true``, ``_addmm_activation``, and ``lift_fresh``, through which
``torch.tensor`` hands a mode its new constant), written in ember ops."""
from ..._core import dtype as D
from ..._ops.overload import ops

_aten = ops.aten


def _lazy_clone(self):
    return _aten.clone.default._call(self, None)


def _check_bool(self):
    # PyTorch's TORCH_INTERNAL_ASSERT, message and all (less the source location)
    if self._dtype is not D.bool_:
        raise RuntimeError("self.scalar_type() == at::kBool INTERNAL ASSERT FAILED")


def _is_all_true(self):
    _check_bool(self)
    return _aten.all.default._call(self)


def _is_any_true(self):
    _check_bool(self)
    return _aten.any.default._call(self)


def _addmm_activation(self, mat1, mat2, beta=1, alpha=1, use_gelu=False):
    out = _aten.addmm.default._call(self, mat1, mat2, beta, alpha)
    if use_gelu:
        return _aten.gelu.default._call(out, "none")
    return _aten.relu.default._call(out)


def lift_fresh(self):
    return self  # below the modes a fresh tensor is already what it should be
