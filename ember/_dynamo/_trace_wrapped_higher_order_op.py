"""``TransformGetItemToIndex`` (PyTorch's home for it): indexing by 0-dim tensors as a gather.

flex_attention's score and mask functions, and the masks libraries build by vmapping such
functions (HuggingFace's ``masking_utils``), index tables with 0-dim index tensors:
``bias[q_idx]``. Plain ``__getitem__`` reads such an index with ``.item()``, which vmap cannot
map; under this mode it is ``aten.index``, which vmap batches like any other op.
"""
import ember
from ember import Tensor

from ..overrides import TorchFunctionMode
from ..utils._pytree import tree_leaves


class TransformGetItemToIndex(TorchFunctionMode):
    """``A[q_idx]`` with 0-dim index tensors as ``aten.index`` (a gather) instead of an
    integer select. Integers among the indices become 0-dim tensors too, so ``A[0, q_idx]`` is
    one gather."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        if func is Tensor.__getitem__:
            tensor_to_index = args[0]
            index_args = tree_leaves(args[1])
            if all(isinstance(x, (Tensor, int)) for x in index_args):
                converted = [ember.tensor(x, dtype=ember.int64, device=tensor_to_index.device)
                             if isinstance(x, int) else x for x in index_args]
                return ember.ops.aten.index(tensor_to_index, converted)
        return func(*args, **(kwargs or {}))
