"""Meta kernel of the in-place foreach ops: they return nothing, so only list lengths are checked.
(The functional foreach ops are composites, see ``composite/foreach.py``.)"""
from ..rules.foreach import _check_lengths


def meta_foreach_inplace(self, *args):
    _check_lengths(self, *(a for a in args if isinstance(a, (list, tuple))))
    return None
