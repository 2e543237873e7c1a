"""Python constants (numbers, strings, None, dtypes, devices, slices, ...), folded at capture
time and guarded by value where they were read from the frame."""
import operator

from .base import VariableTracker, unimplemented

__all__ = ["ConstantVariable"]


class ConstantVariable(VariableTracker):
    def __init__(self, value, source=None):
        super().__init__(source)
        self.value = value

    def as_python_constant(self):
        return self.value

    def python_type(self):
        return type(self.value)

    def var_getattr(self, tx, name):
        try:
            v = getattr(self.value, name)
        except AttributeError as e:
            unimplemented(f"constant attribute error: {e}")
        from .builder import wrap_constant_like
        return wrap_constant_like(tx, v)

    def call_method(self, tx, name, args, kwargs):
        if all(a.is_python_constant() for a in args) and \
                all(v.is_python_constant() for v in kwargs.values()):
            fn = getattr(self.value, name, None)
            if fn is None:
                unimplemented(f"{type(self.value).__name__}.{name}")
            res = fn(*[a.as_python_constant() for a in args],
                     **{k: v.as_python_constant() for k, v in kwargs.items()})
            from .builder import wrap_constant_like
            return wrap_constant_like(tx, res)
        if name in ("__add__", "__mul__", "__radd__", "__rmul__", "__sub__"):
            from .builtin import binary_op
            op = getattr(operator, name.strip("_").lstrip("r"))
            return binary_op(tx, op, [self, args[0]] if not name.startswith("__r") else [args[0], self])
        unimplemented(f"{type(self.value).__name__}.{name} with non-constant arguments")

    def reconstruct(self, cg):
        v = self.value
        if isinstance(v, set):  # a fresh set per call
            return f"set({cg.const(frozenset(v))})"
        if v is None or isinstance(v, (bool, int, str, bytes)) or (
                isinstance(v, float) and v == v and v not in (float("inf"), float("-inf"))):
            return repr(v)
        return cg.const(v)

    def __repr__(self):
        return f"ConstantVariable({self.value!r})"
