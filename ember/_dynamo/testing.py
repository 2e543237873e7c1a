"""Helpers for tests of compiled code (PyTorch's ``torch._dynamo.testing``): backends that count
and record the graphs they are given."""
__all__ = ["CompileCounter", "CompileCounterWithBackend", "EagerAndRecordGraphs", "same"]


def _ops(gm):
    return sum(1 for n in gm.graph.nodes if n.op in ("call_function", "call_method",
                                                     "call_module"))


class CompileCounter:
    """Counts graphs (``frame_count``) and their ops (``op_count``); runs them eagerly."""

    def __init__(self):
        self.clear()

    def __call__(self, gm, example_inputs):
        self.frame_count += 1
        self.op_count += _ops(gm)
        self.graphs.append(gm)
        return gm.forward

    def clear(self):
        self.frame_count = 0
        self.op_count = 0
        self.graphs = []


class CompileCounterWithBackend(CompileCounter):
    def __init__(self, backend):
        self.backend = backend
        super().__init__()

    def __call__(self, gm, example_inputs):
        from .backends.registry import lookup_backend
        self.frame_count += 1
        self.op_count += _ops(gm)
        self.graphs.append(gm)
        return lookup_backend(self.backend)(gm, example_inputs)


class EagerAndRecordGraphs:
    def __init__(self):
        self.graphs = []

    def __call__(self, gm, example_inputs):
        self.graphs.append(gm)
        return gm.forward


def same(a, b):
    """Exact equality of nested outputs (tensors compared by value, dtype and shape)."""
    from .._tensor import Tensor
    if isinstance(a, Tensor) and isinstance(b, Tensor):
        return a.dtype == b.dtype and a.shape == b.shape and bool((a == b).all()) or (
            a.numel() == b.numel() == 0)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    return a == b
