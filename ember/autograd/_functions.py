"""``torch.autograd._functions``: the Python autograd Function behind the deprecated
non-inplace ``Tensor.resize``/``resize_as`` (a reshape that keeps the element count)."""
import math

from .function import Function

__all__ = ["Resize"]


class Resize(Function):
    @staticmethod
    def forward(ctx, tensor, sizes):
        ctx.sizes = sizes
        ctx.numel = math.prod(sizes)
        if tensor.numel() != ctx.numel:
            raise RuntimeError(
                f"requested resize to {'x'.join(map(str, sizes))} ({ctx.numel} elements in "
                f"total), but the given tensor has a size of "
                f"{'x'.join(map(str, tensor.size()))} ({tensor.numel()} elements). autograd's "
                f"resize can only change the shape of a given tensor, while preserving the "
                f"number of elements. ")
        ctx.input_sizes = tensor.size()
        if tensor.is_contiguous():
            return tensor.new(tensor).contiguous().view(*sizes)
        return tensor.contiguous().view(*sizes)

    @staticmethod
    def backward(ctx, grad_output):
        if grad_output.numel() != ctx.numel:
            raise AssertionError(f"grad_output.numel() ({grad_output.numel()}) != ctx.numel "
                                 f"({ctx.numel})")
        return grad_output.contiguous().view(ctx.input_sizes), None
