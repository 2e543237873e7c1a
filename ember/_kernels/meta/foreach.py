"""Meta kernels of the in-place foreach ops: they return nothing, so only their arguments are checked.
The functional foreach ops are composites, see ``composite/foreach.py``."""
from ..rules.foreach import _check_lengths, check_scalar_list, check_scalar_tensor


def meta_foreach_inplace(self, *args):
    lists = [a for a in args if isinstance(a, (list, tuple))]
    _check_lengths(self, *(a for a in lists if a and hasattr(a[0], "_keyset")))
    for scalars in (a for a in lists if a and not hasattr(a[0], "_keyset")):
        check_scalar_list(self, scalars)
    return None


def meta_foreach_inplace_scalar_tensor(self, other):
    _check_lengths(self)
    check_scalar_tensor(other)
    return None
