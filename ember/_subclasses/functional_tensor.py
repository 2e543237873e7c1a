"""``FunctionalTensor`` and ``FunctionalTensorMode``: functionalization driven from Python.

PyTorch 2.x's ``torch._subclasses.functional_tensor``. A :class:`FunctionalTensor` is a
``__torch_dispatch__`` wrapper subclass around ``elem``, a FunctionalTensorWrapper (the
``Functionalize`` key's tensor, ember._functorch.functional_wrapper). It carries autograd keys,
so autograd records on FunctionalTensors; :class:`FunctionalTensorMode` then sees each op below
autograd, unwraps the FunctionalTensors to their ``elem``, runs the op with the Functionalize
key switched on (so the key's kernel removes mutations and tracks views, and factory results
join the alias tracking), and wraps the results back. Used on its own, outside the mode, a
FunctionalTensor raises PyTorch's error.
"""
from .._dispatch import tls as _dtls
from .._dispatch.keys import K, bit
from .._functorch import functional_wrapper as _fw
from .._tensor import Tensor
from ..utils import _pytree as pytree
from ..utils._python_dispatch import TorchDispatchMode, _get_current_dispatch_mode_stack

__all__ = ["FunctionalTensor", "FunctionalTensorMode"]

_FUNC = bit(K.Functionalize)


class FunctionalTensor(Tensor):
    """A tensor whose ops go through functionalization under a FunctionalTensorMode."""
    __slots__ = ("elem", "_mode")

    def __new__(cls, elem, mode):
        if not _fw.is_functional(elem):
            raise AssertionError("FunctionalTensor expects a functional tensor (a "
                                 "FunctionalTensorWrapper) as its elem")
        out = Tensor._make_wrapper_subclass(
            cls, elem.shape, strides=elem.stride(), storage_offset=elem.storage_offset(),
            dtype=elem.dtype, device=elem.device, requires_grad=elem.requires_grad)
        out.elem = elem
        out._mode = mode
        return out

    def __init__(self, elem, mode):
        pass

    @classmethod
    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
        if any(t not in (Tensor, FunctionalTensor) and not _is_fake_type(t) for t in types):
            return NotImplemented
        raise RuntimeError("Attempting to use FunctionalTensor on its own. Instead, please use "
                           "it with a corresponding FunctionalTensorMode()")

    def __repr__(self, *, tensor_contents=None):
        return f"FunctionalTensor({self.elem!r})"

    @staticmethod
    def to_functional(x):
        """Wrap plain tensor ``x`` (inside an active FunctionalTensorMode)."""
        if _fw.is_functional(x):
            raise AssertionError("to_functional expects a tensor that is not functional")
        mode = _current_mode()
        if mode is None:
            raise AssertionError("FunctionalTensor.to_functional needs an active "
                                 "FunctionalTensorMode")
        out = FunctionalTensor(_fw.to_functional(x, 0), mode)
        if x.requires_grad:
            out.requires_grad_(True)
        return out

    def from_functional(self):
        """The synced plain value."""
        _fw.sync(self.elem)
        return _fw.from_functional(self.elem)

    def sync(self):
        _fw.sync(self.elem)

    def replace_(self, output):
        _fw._functionalize_replace(self.elem, output)

    def commit_update(self):
        _fw._functionalize_commit_update(self.elem)

    def tolist(self):
        return self.from_functional().tolist()

    def _nd(self):
        return self.from_functional()._nd()


def _is_fake_type(t):
    from .fake_tensor import FakeTensor
    return issubclass(t, FakeTensor)


def _current_mode():
    for m in reversed(_get_current_dispatch_mode_stack()):
        if isinstance(m, FunctionalTensorMode):
            return m
    return None


class FunctionalTensorMode(TorchDispatchMode):
    """Functionalize every op on FunctionalTensors (and every factory op) in the block."""

    def __init__(self, pre_dispatch=False, export=False, _allow_token_discovery=False):
        super().__init__()
        self.pre_dispatch = pre_dispatch
        self.export = export
        self._allow_token_discovery = _allow_token_discovery
        self.reapply_views = True  # views stay views (view_copy only with the functorch API)

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if any(t not in (Tensor, FunctionalTensor) and not _is_fake_type(t) for t in types):
            return NotImplemented

        def unwrap(x):
            if isinstance(x, FunctionalTensor):
                return x.elem
            return x
        args_u, kwargs_u = pytree.tree_map(unwrap, (tuple(args), dict(kwargs)))
        st = _dtls.state
        # the Python handler runs with every key above Python excluded: switch the
        # Functionalize key back on, and open a level-0 layer so factory results are tracked
        saved = st.included, st.excluded
        st.included, st.excluded = saved[0] | _FUNC, saved[1] & ~_FUNC
        try:
            with _fw.push_layer(0, self.reapply_views):
                out = func(*args_u, **kwargs_u)
        finally:
            st.included, st.excluded = saved

        # results that are argument wrappers (an in-place op's self) come back as the argument
        # FunctionalTensor, its metadata refreshed (an in-place view op or a resize changes it)
        mine = {}
        for a in pytree.tree_leaves((tuple(args), dict(kwargs))):
            if isinstance(a, FunctionalTensor):
                mine[id(a.elem)] = a

        def wrap(x):
            if not _fw.is_functional(x):
                return x
            ft = mine.get(id(x))
            if ft is None:
                return FunctionalTensor(x, self)
            ft._size, ft._stride, ft._offset = x._size, x._stride, x._offset
            return ft
        return pytree.tree_map(wrap, out)

    @classmethod
    def is_infra_mode(cls):
        return True
