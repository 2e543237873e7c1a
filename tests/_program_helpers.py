"""What the library programs (``tests/_more_libs*_programs.py``) share: seeded NumPy inputs,
the seeding of every generator a library draws from, and parameter snapshots. They run under
PyTorch and under ember alike, so the ``torch`` module is passed in."""
import random

import numpy as np


def x(rs, *shape):
    return rs.randn(*shape).astype(np.float32)


def seed(torch, value=0):
    random.seed(value)
    np.random.seed(value)
    torch.manual_seed(value)


def params(model, prefix):
    return {prefix + k: v.detach().numpy().copy() for k, v in model.state_dict().items()}
