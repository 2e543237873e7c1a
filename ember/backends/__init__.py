"""Backend switches, as ``torch.backends``: ``ember.backends.opt_einsum`` chooses whether (and
how) einsum orders its contractions with the opt_einsum package."""
from . import opt_einsum  # noqa: F401
