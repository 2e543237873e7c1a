"""Meta kernel of hash_tensor: the rule's shape, uint64."""
from ..._core import dtype as D
from ..._core.device import META
from ..._tensor import empty_tensor
from ..rules.hash_tensor import check_hash_tensor


def meta_hash_tensor(self, dim=(), keepdim=False, mode=0):
    return empty_tensor(check_hash_tensor(self, dim, keepdim, mode)[1], D.uint64, META)
