"""``CustomDecompTable``: the decomposition table ``ExportedProgram.run_decompositions`` takes.

It starts as ember's Core ATen table (``ember._decomp.core_aten_decompositions()``: every
registered decomposition of a non-core op); deleting an entry keeps that op in the program, and
setting one replaces (or adds) the decomposition of an op. Unlike PyTorch's, the table holds no
CompositeImplicitAutograd ops: ember's trace records the ops such an op runs (its kernel is a
decomposition that runs above the tracer), so no graph holds one to preserve or decompose.
"""
from .._decomp import core_aten_decompositions

__all__ = ["CustomDecompTable"]


class CustomDecompTable(dict):
    """``{OpOverload: decomposition}``, filled with the Core ATen decompositions."""

    def __init__(self):
        super().__init__(core_aten_decompositions())

    def copy(self):
        new = CustomDecompTable.__new__(CustomDecompTable)
        dict.update(new, self)
        return new

    def materialize(self):
        """The table as a plain dict (what a retrace reads)."""
        return dict(self)
