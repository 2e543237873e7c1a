"""Imported first by a forkserver's server process while ember.as_torch is installed (see
``as_torch._Children``): installs the alias, so the children it forks import the program's main
module, and its ``import torch``, as the parent did."""
from .as_torch import install

install()
