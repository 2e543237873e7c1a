"""``ember.optim``: optimizers, learning-rate schedulers and weight averaging (``swa_utils``)."""
from . import lr_scheduler, swa_utils  # noqa: F401
from ._algorithms import (SGD, Adadelta, Adagrad, Adam, Adamax, AdamW, NAdam, RAdam,  # noqa: F401
                          RMSprop)
from .lbfgs import LBFGS  # noqa: F401
from .optimizer import Optimizer  # noqa: F401
from .sparse_adam import SparseAdam  # noqa: F401
