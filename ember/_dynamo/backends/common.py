"""``ember._dynamo.backends.common``: ``aot_autograd(fw_compiler=, bw_compiler=, partition_fn=,
decompositions=)``, the helper PyTorch's custom backends build on (a backend that hands the
captured graph to AOTAutograd with the given compilers)."""
from ..._functorch.aot_autograd import aot_autograd

__all__ = ["aot_autograd"]
