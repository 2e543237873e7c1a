"""Matrix products under ``max-autotune`` (PyTorch's ``torch._inductor.kernel.mm``).

``mm``, ``addmm`` and ``bmm`` of float32/float64 operands pick, through
``select_algorithm``, between the eager op (an extern BLAS call from the wrapper, as in the
default mode) and the C GEMM template (a ``TemplateBuffer``, which the scheduler gives the
product's pointwise consumers as epilogue). ``addmm`` is the template's product plus a lazy
pointwise ``beta * bias + alpha * acc``, so the bias add is the first op of the epilogue.

Without ``config.max_autotune`` / ``max_autotune_gemm``, or for other dtypes, the lowerings
decline and the op runs eagerly, as it always has.
"""
import ember

from ..._core.strides import contiguous_strides
from .. import config, ir
from ..codegen.cpp_gemm_template import CppGemmTemplate, Operand, gemm_configs
from ..lowering import pointwise, register_lowering
from ..select_algorithm import CppTemplateChoice, ExternKernelChoice, autotune_select_algorithm
from ..virtualized import V, ops

aten = ember.ops.aten

__all__ = ["tuned_mm", "tuned_addmm", "tuned_bmm"]


def _layout(x):
    """``(size, stride, offset)`` of an IR operand, the offset counted from the data pointer
    the kernel receives (a view's from its buffer's)."""
    lay = x.layout
    base = x.data.layout.offset if isinstance(x, ir.ReinterpretView) else lay.offset
    # a size-1 dim is never stepped along: its stride is irrelevant (and 0 keeps keys equal)
    stride = tuple(0 if n == 1 else s for n, s in zip(lay.size, lay.stride))
    return tuple(lay.size), stride, lay.offset - base


def _operand(x):
    size, stride, offset = _layout(x)
    if len(size) == 2:
        stride = (0,) + stride
    return Operand(x.get_name(), offset, *stride)


def _backends():
    names = {b.strip().upper() for b in config.max_autotune_gemm_backends.split(",")}
    unknown = names - {"ATEN", "CPP", ""}
    if unknown:
        raise RuntimeError(f"config.max_autotune_gemm_backends: unknown backend "
                           f"{sorted(unknown)[0]!r} (ember's are ATEN and CPP)")
    return names


def _threads():
    return config.threads or ember.get_num_threads()


def _tuned(args, kwargs, a, b):
    """The product ``a @ b`` of the current node (``args``/``kwargs`` are its IR arguments): a
    ``TemplateBuffer`` when the template wins, else ``None`` after registering the eager
    call, whose result the graph then has."""
    if not (config.max_autotune or config.max_autotune_gemm):
        raise NotImplementedError("matrix products call the eager op unless max_autotune")
    node = V.graph.current_node
    val = node.meta["val"]
    dtype = val.dtype
    if dtype not in (ember.float32, ember.float64) or a.get_dtype() != dtype \
            or b.get_dtype() != dtype:
        raise NotImplementedError(f"the GEMM template computes float32/float64, not {dtype}")
    *batch, m, k = a.get_size()
    n = b.get_size()[-1]
    batch = batch[0] if batch else 1
    backends = _backends()
    name = V.graph.new_name()
    size = (batch, m, n) if len(a.get_size()) == 3 else (m, n)
    # mm and bmm store the product as traced; addmm's product is an intermediate
    stride = tuple(val.stride()) if node.target is not aten.addmm.default \
        else contiguous_strides(size)
    out = ir.Layout(size, stride, dtype)
    template = CppGemmTemplate(_operand(a), _operand(b), _operand(ir.Buffer(name, out)),
                               batch, m, n, k, dtype)
    choices = []
    if "ATEN" in backends:
        choices.append(ExternKernelChoice(node.target, kwargs))
    if "CPP" in backends:
        choices += [CppTemplateChoice(template, cfg)
                    for cfg in gemm_configs(dtype, m, n, k, _threads())]
    if not choices:
        raise RuntimeError("config.max_autotune_gemm_backends names no backend")
    op = str(node.target.overloadpacket).split(".")[-1]
    inputs = [_layout(x) for x in args if isinstance(x, ir.IRNode)]
    choice = autotune_select_algorithm(op, choices, inputs, (size, stride), dtype, _threads())
    if isinstance(choice, ExternKernelChoice):
        return V.graph.fallback(node, args, kwargs)
    return V.graph.register_buffer(ir.TemplateBuffer(name, out, [a, b], template,
                                                     choice.config, (node,)))


@register_lowering(aten.mm, lazy_inputs=False)
def tuned_mm(a, b):
    return _tuned((a, b), {}, a, b)


@register_lowering(aten.bmm, lazy_inputs=False)
def tuned_bmm(a, b):
    return _tuned((a, b), {}, a, b)


@register_lowering(aten.addmm, lazy_inputs=False)
def tuned_addmm(bias, a, b, *, beta=1, alpha=1):
    kwargs = {k: v for k, v in (("beta", beta), ("alpha", alpha)) if v != 1}
    product = _tuned((bias, a, b), kwargs, a, b)
    if not isinstance(product, ir.TemplateBuffer):
        return product

    def scaled(acc):
        return acc if alpha == 1 else ops.mul(acc, ops.constant(alpha, acc.dtype))
    if beta == 0:  # the bias is ignored, NaN and all, as the eager op does
        return pointwise(scaled, product)

    def epilogue(acc, c):
        c = c if beta == 1 else ops.mul(c, ops.constant(beta, c.dtype))
        return ops.add(scaled(acc), c)
    return pointwise(epilogue, product, bias)
