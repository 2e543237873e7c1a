"""``ShapeProp``: run a GraphModule on example inputs and record each node's tensor metadata
(shape, dtype, requires_grad, stride, memory format, quantization) in ``meta['tensor_meta']``."""
from typing import NamedTuple

from ..._tensor import Tensor
from ..interpreter import Interpreter
from ..node import map_aggregate

__all__ = ["TensorMetadata", "ShapeProp"]


class TensorMetadata(NamedTuple):
    shape: object
    dtype: object
    requires_grad: bool
    stride: tuple
    memory_format: object
    is_quantized: bool
    qparams: dict


def _extract_tensor_metadata(result, include_contiguity=True):
    from ..._core import device as _dev
    shape = result.shape
    dtype = result.dtype
    requires_grad = result.requires_grad
    stride = result.stride()
    memory_format = None
    if include_contiguity:
        for query_format in (_dev.contiguous_format, _dev.channels_last,
                             _dev.channels_last_3d):
            if result.is_contiguous(memory_format=query_format):
                memory_format = query_format
                break
    return TensorMetadata(shape, dtype, requires_grad, stride, memory_format, False, {})


class ShapeProp(Interpreter):
    """``ShapeProp(gm).propagate(*args)`` runs ``gm`` and fills ``node.meta['tensor_meta']``
    (and ``node.meta['type']``) for every node producing tensors. With ``fake_mode`` the
    inputs are converted to FakeTensors first, so no data is computed."""

    def __init__(self, gm, fake_mode=None):
        super().__init__(gm)
        self.fake_module = None
        self.fake_mode = fake_mode
        self.real_module = self.module

    def run_node(self, n):
        try:
            result = super().run_node(n)
        except Exception as e:
            raise RuntimeError(f"ShapeProp error for: node={n.format_node()} with "
                               f"meta={n.meta}") from e
        found_tensor = False

        def extract_tensor_meta(obj):
            nonlocal found_tensor
            if isinstance(obj, Tensor):
                found_tensor = True
                return _extract_tensor_metadata(obj)
            return obj
        meta = map_aggregate(result, extract_tensor_meta)
        if found_tensor:
            n.meta["tensor_meta"] = meta
        n.meta["type"] = type(result)
        return result

    def propagate(self, *args):
        if self.fake_mode is not None:
            fake_args = [self.fake_mode.from_tensor(t) if isinstance(t, Tensor) else t
                         for t in args]
            with self.fake_mode:
                return super().run(*fake_args)
        return super().run(*args)

