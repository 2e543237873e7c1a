"""Tensors during capture: an fx node of the graph being built plus its FakeTensor
(``node.meta['val']``). Metadata reads (shape, dtype, ...) are constants of the trace (the
tensor guard pins them); ops become graph nodes; reading the data (``item``, ``tolist``,
``bool``) is a graph break."""
import operator

from ..._core.symint import SymInt
from ..exc import FUNDAMENTAL_HINT, format_graph_break_message
from .base import VariableTracker, unimplemented
from .constant import ConstantVariable

__all__ = ["TensorVariable", "SymNodeVariable", "constant_or_specialized"]

# Methods that read tensor data into Python: a graph break, with PyTorch's reasons.
_DATA_METHODS = {"tolist": "Tensor.tolist", "numpy": "Tensor.numpy",
                 "__bool__": "Tensor.__bool__", "__int__": "Tensor.__int__",
                 "__float__": "Tensor.__float__", "data_ptr": "Tensor.data_ptr",
                 "backward": "Tensor.backward", "__index__": "Tensor.__index__",
                 "register_hook": "Tensor.register_hook", "untyped_storage": "Tensor.storage",
                 "storage": "Tensor.storage", "cpu_numpy": "Tensor.numpy"}
# Methods whose answer is metadata: computed on the FakeTensor, a constant of the trace.
_META_METHODS = {"size", "dim", "ndimension", "numel", "nelement", "stride", "is_contiguous",
                 "element_size", "is_floating_point", "is_complex", "get_device",
                 "storage_offset", "type_as_dtype", "is_signed", "has_names"}
_META_ATTRS = {"shape", "dtype", "device", "ndim", "requires_grad", "is_cuda", "is_leaf",
               "is_sparse", "is_quantized", "is_meta", "layout", "is_nested", "itemsize"}


class TensorVariable(VariableTracker):
    def __init__(self, node, example, source=None):
        super().__init__(source)
        self.node = node
        self.example = example

    def python_type(self):
        return self.example_class

    @property
    def example_class(self):
        from ..._tensor import Tensor
        from ...nn.parameter import Parameter
        if self.source is not None and self.node.op == "placeholder":
            return self.node.meta.get("real_type", Tensor)
        return Parameter if isinstance(self.example, Parameter) else Tensor

    def as_proxy(self):
        return self.node

    def truth(self, tx):
        unimplemented(data_dependent_branching(self))

    def var_getattr(self, tx, name):
        from .builder import wrap_constant_like
        ex = self.example
        if name in _META_ATTRS:
            v = getattr(ex, name)
            if name == "shape":
                from .lists import SizeVariable
                return SizeVariable([tx.output.wrap_int(tx, s) for s in v])
            if name == "device":
                return ConstantVariable(v)
            return wrap_constant_like(tx, v)
        if name in ("T", "mT", "H", "mH", "real", "imag"):
            return tx.output.call_graph(tx, "call_function", getattr, [self, ConstantVariable(name)], {})
        if name == "grad" and self.source is not None and self.node.op == "placeholder":
            # an input's gradient (an optimizer's or a clipping step's): read through its own
            # source, so it is a graph input (or None) guarded as any other
            from .builder import VariableBuilder
            from ..source import AttrSource
            real = next(v for n, v in tx.output.real_inputs if n is self.node)
            return VariableBuilder(tx, AttrSource(self.source, "grad"))(real.grad)
        if name in ("grad", "data", "grad_fn", "_base", "_version"):
            unimplemented(f"Tensor.{name} read in a captured region")
        if not hasattr(self.python_type(), name):
            real = self.node.meta.get("real")  # a module's parameter or buffer
            if real is None:
                if self.source is not None and self.node.op == "placeholder":
                    real = next((v for n, v in tx.output.real_inputs if n is self.node), None)
                    if real is not None and hasattr(real, name):
                        unimplemented(f"attribute {name!r} set on an input tensor")
                # what eager raises, in the captured code (guarded absent on an input)
                from .misc import raise_attribute_error
                raise_attribute_error(tx, self if real is not None else None, name,
                                      f"'{self.python_type().__name__}' object has no "
                                      f"attribute '{name}'")
            if not hasattr(real, name):
                from .misc import raise_attribute_error
                raise_attribute_error(tx, None, name, f"'{self.python_type().__name__}' "
                                                      f"object has no attribute '{name}'")
        return GetAttrMethod(self, name)

    def call_method(self, tx, name, args, kwargs):
        if name in ("backward", "register_hook"):
            unimplemented(f"Tensor.{name}: autograd's backward pass and hooks are not captured")
        if name == "item":
            unimplemented(format_graph_break_message(
                "Unsupported Tensor.item() call with capture_scalar_outputs=False",
                f"call_method {self} item {tuple(args)} {kwargs}",
                "Dynamo does not support tracing `Tensor.item()` with "
                "config.capture_scalar_outputs=False.",
                ["ember does not capture scalar outputs (it has no "
                 "`capture_scalar_outputs = True`): keep the value a tensor (a 0-dim tensor "
                 "broadcasts in ops) to stay in one graph."]))
        if name in _DATA_METHODS:
            unimplemented(f"{_DATA_METHODS[name]}: reading tensor data into Python "
                          f"(graph break: data-dependent output)")
        if name in _META_METHODS:
            from .builder import wrap_constant_like
            cargs = [a.as_python_constant() for a in args]
            ckw = {k: v.as_python_constant() for k, v in kwargs.items()}
            res = getattr(self.example, name)(*cargs, **ckw)
            if name == "size" and not cargs:
                from .lists import SizeVariable
                return SizeVariable([tx.output.wrap_int(tx, s) for s in res])
            if name == "stride" and not cargs:
                from .lists import TupleVariable
                return TupleVariable([tx.output.wrap_int(tx, s) for s in res])
            if isinstance(res, SymInt):
                return tx.output.wrap_int(tx, res)
            return wrap_constant_like(tx, res)
        if name == "__len__":
            return tx.output.wrap_int(tx, self.example.shape[0])
        if name == "__getitem__":
            return tx.output.call_graph(tx, "call_function", operator.getitem, [self] + args, kwargs)
        if name == "__setitem__":
            tx.output.call_graph(tx, "call_function", operator.setitem, [self] + args, kwargs)
            return ConstantVariable(None)
        if name in ("requires_grad_", "retain_grad") or name.startswith("register_"):
            unimplemented(f"Tensor.{name} in a captured region")
        res = tx.output.call_graph(tx, "call_method", name, [self] + args, kwargs)
        if name.endswith("_") and not name.endswith("__") and isinstance(res, TensorVariable) \
                and res.example is self.example:
            return self  # an in-place method returns its receiver
        return res

    def has_unpack_var_sequence(self, tx):
        return self.example.dim() > 0

    def unpack_var_sequence(self, tx):
        n = int(self.example.shape[0])  # unpacking needs the length: specialised
        return [tx.output.call_graph(tx, "call_function", operator.getitem,
                                     [self, ConstantVariable(i)], {}) for i in range(n)]

    def reconstruct(self, cg):
        return cg.tensor_expr(self)

    def __repr__(self):
        return f"TensorVariable({self.node.name})"


class GetAttrMethod(VariableTracker):
    """``tensor.method`` read but not yet called (3.11's LOAD_ATTR of a method)."""

    def __init__(self, obj, name):
        super().__init__()
        self.obj, self.name = obj, name

    def call_function(self, tx, args, kwargs):
        return self.obj.call_method(tx, self.name, args, kwargs)

    def reconstruct(self, cg):
        return f"{cg.reconstruct(self.obj)}.{self.name}"


class SymNodeVariable(VariableTracker):
    """A symbolic size during capture: a graph node computing it (``aten.sym_size.int``,
    ``operator.mul`` ...) and its SymInt (``example``). Arithmetic with ints and other sizes
    adds graph nodes; a comparison the program branches on is decided by the ShapeEnv (a
    guard); where a plain Python int is required (``range``, slices) it is specialised
    (:meth:`specialize`, a guard ``s == value``)."""

    def __init__(self, node, example, source=None):
        super().__init__(source)
        self.node, self.example = node, example

    def python_type(self):
        return int

    def as_proxy(self):
        return self.node

    def is_python_constant(self):
        return False

    def as_python_constant(self):
        unimplemented(f"symbolic size {self.example} used as a Python constant")

    def specialize(self):
        return int(self.example)

    def truth(self, tx):
        return bool(self.example)

    def call_method(self, tx, name, args, kwargs):
        op = {"__add__": operator.add, "__sub__": operator.sub, "__mul__": operator.mul,
              "__floordiv__": operator.floordiv, "__mod__": operator.mod}.get(name)
        if op is not None:
            return tx.output.call_graph(tx, "call_function", op, [self] + args, kwargs)
        if name == "__index__" or name == "__int__":
            return ConstantVariable(self.specialize())
        unimplemented(f"int.{name} on a symbolic size")

    def reconstruct(self, cg):
        # the residual code recomputes the size from the inputs' sizes
        return f"({self.example.node.shape_env.python_expr(self.example.node.expr)})"

    def __repr__(self):
        return f"SymNodeVariable({self.node.name}, {self.example})"


def data_dependent_branching(value):
    """PyTorch's message for a jump on a tensor's value."""
    return format_graph_break_message(
        "Data-dependent branching", f"attempted to jump with {value}",
        "Detected data-dependent branching (e.g. `if my_tensor.sum() > 0:`). Dynamo does not "
        "support tracing dynamic control flow.",
        [FUNDAMENTAL_HINT, "Use `torch.cond` to express dynamic control flow."])


def constant_or_specialized(v):
    """A VariableTracker's Python value; a symbolic size is specialised (guarded)."""
    if isinstance(v, SymNodeVariable):
        return v.specialize()
    return v.as_python_constant()
