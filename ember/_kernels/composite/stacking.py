"""The atleast / stack / split family (``atleast_1d``, ``column_stack``, ``hsplit`` ...):
CompositeImplicitAutograd kernels written in ember ops."""
from ..._ops.overload import ops
from ..registration import register

_aten = ops.aten


def atleast_1d(self):
    return _aten.reshape.default._call(self, [1]) if self.dim() == 0 else self


def atleast_2d(self):
    if self.dim() == 0:
        return _aten.reshape.default._call(self, [1, 1])
    return _aten.unsqueeze.default._call(self, 0) if self.dim() == 1 else self


def atleast_3d(self):
    unsqueeze = _aten.unsqueeze.default._call
    if self.dim() == 0:
        return _aten.reshape.default._call(self, [1, 1, 1])
    if self.dim() == 1:
        return unsqueeze(unsqueeze(self, 0), -1)
    return unsqueeze(self, -1) if self.dim() == 2 else self


def atleast_1d_Sequence(tensors):
    return [atleast_1d(t) for t in tensors]


def atleast_2d_Sequence(tensors):
    return [atleast_2d(t) for t in tensors]


def atleast_3d_Sequence(tensors):
    return [atleast_3d(t) for t in tensors]


def _column_stack_inputs(tensors):
    if len(tensors) == 0:
        raise RuntimeError("column_stack expects a non-empty TensorList")
    return [_aten.reshape.default._call(t, [t.numel(), 1]) if t.dim() <= 1 else t
            for t in tensors]


def column_stack(tensors):
    return _aten.hstack.default._call(_column_stack_inputs(tensors))


def column_stack_out(tensors, out):
    return _aten.hstack.out._call(_column_stack_inputs(tensors), out)


def row_stack(tensors):
    return _aten.vstack.default._call(tensors)


def row_stack_out(tensors, out):
    return _aten.vstack.out._call(tensors, out)


_SPLIT_DIM = {"hsplit": (1, 1), "vsplit": (2, 0), "dsplit": (3, 2)}  # op -> (min dims, dim)


def _split_dim(name, self):
    min_dims, dim = _SPLIT_DIM[name]
    if self.dim() < min_dims:
        raise RuntimeError(f"torch.{name} requires a tensor with at least {min_dims} dimension, "
                           f"but got a tensor with {self.dim()} dimensions!")
    return 0 if name == "hsplit" and self.dim() == 1 else dim


def _split_int(name):
    def kernel(self, sections):
        dim = _split_dim(name, self)
        size = self.shape[dim]
        if sections == 0 or size % sections != 0:
            raise RuntimeError(f"torch.{name} attempted to split along dimension {dim}, but the "
                               f"size of the dimension {size} is not divisible by the split_size "
                               f"{sections}!")
        return _aten.tensor_split.sections._call(self, sections, dim)
    return kernel


def _split_array(name):
    def kernel(self, indices):
        return _aten.tensor_split.indices._call(self, indices, _split_dim(name, self))
    return kernel


for _name in _SPLIT_DIM:
    register(f"{_name}.int", "CompositeImplicitAutograd", _split_int(_name))
    register(f"{_name}.array", "CompositeImplicitAutograd", _split_array(_name))


def ravel(self):
    from ..._core.device import contiguous_format
    return _aten.view.default._call(_aten.contiguous.default._call(self, contiguous_format), [-1])
