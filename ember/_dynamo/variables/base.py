"""VariableTracker: the symbolic value the bytecode interpreter keeps on its stack and in its
locals in place of a real Python value. Subclasses model tensors (an fx node plus a FakeTensor),
constants, containers, functions, modules and context managers; each knows how to read an
attribute, be called, and be rebuilt by the residual code (``reconstruct``)."""
from ..exc import Unsupported

__all__ = ["VariableTracker", "NullVariable", "unimplemented"]


def unimplemented(msg):
    raise Unsupported(msg)


class VariableTracker:
    def __init__(self, source=None):
        self.source = source

    def python_type(self):
        unimplemented(f"python_type of {self}")

    def as_python_constant(self):
        unimplemented(f"{self} is not a Python constant")

    def is_python_constant(self):
        try:
            self.as_python_constant()
            return True
        except Unsupported:
            return False

    def var_getattr(self, tx, name):
        unimplemented(f"getattr({type(self).__name__}, {name!r})")

    def call_function(self, tx, args, kwargs):
        unimplemented(f"call {self}")

    def call_method(self, tx, name, args, kwargs):
        return self.var_getattr(tx, name).call_function(tx, args, kwargs)

    def has_unpack_var_sequence(self, tx):
        return False

    def unpack_var_sequence(self, tx):
        unimplemented(f"iterate over {self}")

    def truth(self, tx):
        """``bool(self)`` for a jump, when it is known at capture time."""
        return bool(self.as_python_constant())

    def reconstruct(self, cg):
        if self.source is not None:
            return cg.source_expr(self.source)
        unimplemented(f"cannot rebuild {self} in residual code")

    def __repr__(self):
        return f"{type(self).__name__}()"


class NullVariable(VariableTracker):
    """The NULL that 3.11+ pushes below a callable."""

    def __repr__(self):
        return "NULL"
