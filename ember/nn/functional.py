"""``nn.functional``: the stateless forms of the layers.

(Placeholder holding ``linear`` only; the op-library helper owns this file and fills it in.)
"""
__all__ = ["linear"]


def linear(input, weight, bias=None):
    """``input @ weight.T + bias``, as ATen's linear: one fused addmm for 2-D input with bias."""
    from .. import addmm, matmul
    if input.dim() == 2 and bias is not None:
        return addmm(bias, input, weight.t())
    output = matmul(input, weight.t())
    if bias is not None:
        output = output + bias
    return output
