"""``torch.special``'s CompositeImplicitAutograd ops: the aliases of existing ops
(``special_expit`` is ``sigmoid``, ``special_gammainc`` is ``igamma`` ...) and ``special_ndtr``,
which PyTorch defines as ``(1 + erf(x / sqrt(2))) / 2``. Every call goes through the
dispatcher, so autograd records the ops they decompose into."""
import math

from ..._ops.overload import ops
from ..registration import register

_aten = ops.aten


def _alias(target):
    base, overload = target.split(".")

    def kernel(*args):  # looked up when called: the target may be declared after this op
        return getattr(getattr(_aten, base), overload)._call(*args)
    return kernel


# op overload -> the overload it is an alias of
_ALIASES = {
    "special_expm1": "expm1.default", "special_exp2": "exp2.default",
    "special_psi": "digamma.default", "special_digamma": "digamma.default",
    "special_gammaln": "lgamma.default", "special_erf": "erf.default",
    "special_erfc": "erfc.default", "special_erfinv": "erfinv.default",
    "special_xlogy": "xlogy.Tensor", "special_xlogy.self_scalar": "xlogy.Scalar_Self",
    "special_xlogy.other_scalar": "xlogy.Scalar_Other", "special_i0": "i0.default",
    "special_logit": "logit.default", "special_polygamma": "polygamma.default",
    "special_logsumexp": "logsumexp.default", "special_expit": "sigmoid.default",
    "special_sinc": "sinc.default", "special_log1p": "log1p.default",
    "special_round": "round.decimals", "special_log_softmax": "log_softmax.int",
    "special_softmax": "softmax.int", "special_gammainc": "igamma.default",
    "special_gammaincc": "igammac.default", "special_multigammaln": "mvlgamma.default",
}
for _op, _target in _ALIASES.items():
    register(_op, "CompositeImplicitAutograd", _alias(_target))


def special_ndtr(self):
    x = _aten.mul.Tensor._call(self, math.sqrt(0.5))
    return _aten.mul.Tensor._call(_aten.add.Tensor._call(_aten.erf.default._call(x), 1, 1), 0.5)
