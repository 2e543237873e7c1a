"""The symbolic values of Dynamo's bytecode interpreter (PyTorch's torch._dynamo.variables)."""
from .base import NullVariable, VariableTracker  # noqa: F401
from .builder import VariableBuilder, wrap_constant_like  # noqa: F401
from .builtin import BuiltinVariable  # noqa: F401
from .constant import ConstantVariable  # noqa: F401
from .dicts import ConstDictVariable  # noqa: F401
from .functions import (CellVariable, NestedUserFunctionVariable, UserFunctionVariable,  # noqa: F401
                        UserMethodVariable)
from .lists import (ListIteratorVariable, ListVariable, NamedTupleVariable,  # noqa: F401
                    SizeVariable, TupleVariable)
from .misc import (AutocastVariable, GradModeVariable, PythonModuleVariable,  # noqa: F401
                   SkippedFunctionVariable, SuperVariable, TorchInGraphFunctionVariable,
                   UserDefinedClassVariable, UserDefinedObjectVariable, WithExitVariable)
from .nn_module import NNModuleVariable  # noqa: F401
from .tensor import TensorVariable  # noqa: F401
