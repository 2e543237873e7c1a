"""``HigherOrderOperator`` (``torch._ops.HigherOrderOperator``): an operator whose arguments
include functions, so it has no schema for the dispatcher's table; its kernels are Python
functions registered per dispatch key with ``py_impl``.

A call runs the kernel of the highest key, among its tensor arguments' keys and the thread's
included keys less the excluded ones, that has a kernel: keys without one are passed over (a
CompositeExplicitAutograd kernel written with ember's ops is differentiated by them). A kernel that runs the operator again
below its key excludes its key first (``ember._C._ExcludeDispatchKeyGuard``). Kernels for
Python modes and tensor subclasses (PyTorch's ``py_impl(TorchDispatchMode)``) are not
supported: ``py_impl`` takes dispatch keys only. ember's own ``cond`` and ``while_loop`` are
functions that the compiler recognises by identity; this class is for operators that
programs and libraries define, and what libraries test calls against (``isinstance(func,
HigherOrderOperator)``).
"""
from .._dispatch import tls as _tls
from .._dispatch.keys import ALIAS_EXPANSION, DispatchKey, DispatchKeySet, parse_key

__all__ = ["HigherOrderOperator"]


class HigherOrderOperator:
    namespace = "higher_order"

    def __init__(self, name, *, cacheable=False):
        self._name = self.__name__ = name
        self._cacheable = cacheable
        self.py_kernels = {}  # runtime DispatchKey -> Python function

    def name(self):
        return self._name

    def cacheable(self):
        return self._cacheable

    def __repr__(self):
        return f"{self._name}"

    def py_impl(self, key):
        """Decorator: the function is this operator's kernel at ``key`` (an alias key, such as
        ``CompositeExplicitAutograd`` or ``Autograd``, covers its runtime keys not registered
        by themselves)."""
        if not isinstance(key, (DispatchKey, str)):
            raise TypeError(f"HigherOrderOperator.py_impl: ember takes dispatch keys only, got "
                            f"{key!r}")
        key = parse_key(key)

        def register(fn):
            if key in ALIAS_EXPANSION:
                for k in ALIAS_EXPANSION[key]:
                    self.py_kernels.setdefault(k, fn)
            else:
                self.py_kernels[key] = fn
            return fn
        return register

    def __call__(self, *args, **kwargs):
        from ..utils._pytree import tree_flatten
        ks = 0
        for a in tree_flatten((args, kwargs))[0]:
            ks |= getattr(a, "_keyset", 0)
        ks = (ks | _tls.state.included) & ~_tls.state.excluded
        for key in reversed(list(DispatchKeySet(ks))):
            kernel = self.py_kernels.get(key)
            if kernel is not None:
                return kernel(*args, **kwargs)
        raise NotImplementedError(f"could not find kernel for HigherOrderOperator {self._name} "
                                  f"for dispatch keys {DispatchKeySet(ks)}")
