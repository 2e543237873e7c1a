"""PyTorch's ``torch.export.graph_signature``: which graph inputs of an exported program are
parameters, buffers and user inputs, and which outputs are user outputs or buffer updates."""
import dataclasses
from enum import Enum, auto
from typing import Any, List, Optional

__all__ = ["ExportGraphSignature", "InputKind", "InputSpec", "OutputKind", "OutputSpec",
           "TensorArgument"]


class InputKind(Enum):
    USER_INPUT = auto()
    PARAMETER = auto()
    BUFFER = auto()
    CONSTANT_TENSOR = auto()


class OutputKind(Enum):
    USER_OUTPUT = auto()
    BUFFER_MUTATION = auto()


@dataclasses.dataclass
class TensorArgument:
    name: str


@dataclasses.dataclass
class InputSpec:
    kind: InputKind
    arg: Any
    target: Optional[str]
    persistent: Optional[bool] = None


@dataclasses.dataclass
class OutputSpec:
    kind: OutputKind
    arg: Any
    target: Optional[str]


@dataclasses.dataclass
class ExportGraphSignature:
    """Which graph inputs are parameters, buffers and user inputs, and which outputs are user
    outputs or new values of buffers."""
    input_specs: List[InputSpec]
    output_specs: List[OutputSpec]

    def _inputs(self, kind):
        return [s for s in self.input_specs if s.kind == kind]

    @property
    def parameters(self):
        return [s.target for s in self._inputs(InputKind.PARAMETER)]

    @property
    def buffers(self):
        return [s.target for s in self._inputs(InputKind.BUFFER)]

    @property
    def user_inputs(self):
        return [s.arg.name for s in self._inputs(InputKind.USER_INPUT)]

    @property
    def user_outputs(self):
        return [s.arg.name for s in self.output_specs if s.kind == OutputKind.USER_OUTPUT]

    @property
    def inputs_to_parameters(self):
        return {s.arg.name: s.target for s in self._inputs(InputKind.PARAMETER)}

    @property
    def inputs_to_buffers(self):
        return {s.arg.name: s.target for s in self._inputs(InputKind.BUFFER)}

    @property
    def buffers_to_mutate(self):
        return {s.arg.name: s.target for s in self.output_specs
                if s.kind == OutputKind.BUFFER_MUTATION}
