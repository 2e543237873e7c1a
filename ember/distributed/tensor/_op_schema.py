"""The records sharding propagation works on: ``OpSchema`` (an op call with its DTensor
arguments replaced by their ``DTensorSpec``s), ``OpSpec`` (one way to run it: the input layouts
it needs, the output layouts it gives, what redistributing the inputs costs) and
``OutputSharding`` (the chosen way)."""
from dataclasses import dataclass

from ._dtensor_spec import DTensorSpec


def _walk_specs(values):
    for v in values:
        if isinstance(v, DTensorSpec):
            yield v
        elif isinstance(v, (list, tuple)):
            for x in v:
                if isinstance(x, DTensorSpec):
                    yield x


def _to_meta(value):
    if isinstance(value, DTensorSpec):
        return value.tensor_meta
    if isinstance(value, (list, tuple)) and any(isinstance(x, DTensorSpec) for x in value):
        return type(value)(_to_meta(x) for x in value)
    return value


def _hashable(value):
    """``value`` as a cache key part: lists as tuples, and numbers with their type (``x * 2``
    and ``x * 2.0`` may give different dtypes)."""
    if isinstance(value, (list, tuple)):
        return tuple(_hashable(v) for v in value)
    if isinstance(value, (bool, int, float, complex)):
        return (type(value), value)
    return value


class OpSchema:
    """``op`` with ``args_schema``/``kwargs_schema``: DTensor arguments (also inside lists)
    replaced by their specs, everything else as passed."""

    def __init__(self, op, args_schema, kwargs_schema=None):
        self.op = op
        self.args_schema = tuple(args_schema)
        self.kwargs_schema = dict(kwargs_schema or {})

    @property
    def args_spec(self):
        """The specs of every tensor argument, in order (list elements in place, then tensor
        keyword arguments)."""
        return list(_walk_specs(self.args_schema)) + list(_walk_specs(
            self.kwargs_schema.values()))

    @property
    def args_meta(self):
        return tuple(_to_meta(a) for a in self.args_schema)

    @property
    def kwargs_meta(self):
        return {k: _to_meta(v) for k, v in self.kwargs_schema.items()}

    def is_inplace_op(self):
        name = self.op._schema.base_name
        return name.endswith("_") and not name.endswith("__") and not self.op._schema.kind_is_out

    def get_mesh_from_args(self):
        return self.args_spec[0].mesh

    def _key(self):
        return (self.op, _hashable(self.args_schema),
                tuple(sorted((k, _hashable(v)) for k, v in self.kwargs_schema.items())))

    def __hash__(self):
        return hash(self._key())

    def __eq__(self, other):
        return isinstance(other, OpSchema) and self._key() == other._key()

    def __str__(self):
        args = ", ".join(str(a) for a in self.args_schema)
        specs = self.args_spec
        return f"{self.op}({args}) on {specs[0].mesh if specs else None})"


@dataclass
class OpSpec:
    """One way to run an op: output spec(s) (None for no tensor output), the spec each tensor
    input must have (None: the output spec), and the cost of getting the inputs there."""
    output_specs: object
    input_specs: list = None
    redistribute_cost: list = None

    @property
    def output_spec(self):
        if isinstance(self.output_specs, DTensorSpec):
            return self.output_specs
        raise ValueError(f"function output_spec expects a single DTensorSpec but got: "
                         f"{self.output_specs}")


@dataclass
class OutputSharding:
    """The chosen way: output spec(s), and the call to run when the inputs must be
    redistributed first (their target specs, and for some ops local shape arguments)."""
    output_spec: object
    redistribute_schema: OpSchema = None
    needs_redistribute: bool = False
    use_val_from_redistribute_schema: bool = False
