"""``ember.optim``: optimizers, learning-rate schedulers and weight averaging (``swa_utils``).

As PyTorch's: each optimizer lives in its own module with its functional form
(``ember.optim.adam`` holds ``Adam`` and ``adam``), ``_functional`` gathers the functional forms.
"""
from . import _functional, lr_scheduler, swa_utils  # noqa: F401
from ._adafactor import Adafactor  # noqa: F401
from ._muon import Muon  # noqa: F401
from .adadelta import Adadelta  # noqa: F401
from .adagrad import Adagrad  # noqa: F401
from .adam import Adam  # noqa: F401
from .adamax import Adamax  # noqa: F401
from .adamw import AdamW  # noqa: F401
from .asgd import ASGD  # noqa: F401
from .lbfgs import LBFGS  # noqa: F401
from .nadam import NAdam  # noqa: F401
from .optimizer import Optimizer  # noqa: F401
from .radam import RAdam  # noqa: F401
from .rmsprop import RMSprop  # noqa: F401
from .rprop import Rprop  # noqa: F401
from .sgd import SGD  # noqa: F401
from .sparse_adam import SparseAdam  # noqa: F401

# As PyTorch: the private modules' optimizers present themselves as the package's, and the
# public per-optimizer modules stay importable by path but are not attributes of the package.
Adafactor.__module__ = "ember.optim"
Muon.__module__ = "ember.optim"
del adadelta, adagrad, adam, adamax, adamw, asgd, nadam, radam, rmsprop, rprop, sgd  # noqa: F821

# PyTorch's list less swap_in_optimizer_params_and_state, which ember does not have.
__all__ = ["Adafactor", "Adadelta", "Adagrad", "Adam", "Adamax", "AdamW", "ASGD", "LBFGS",
           "lr_scheduler", "Muon", "NAdam", "Optimizer", "RAdam", "RMSprop", "Rprop", "SGD",
           "SparseAdam", "swa_utils"]
