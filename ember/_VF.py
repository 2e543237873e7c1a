"""``torch._VF``: PyTorch's handle on the functions of the ``torch`` namespace as its C++
bindings define them (``torch._C._VariableFunctions``), which PyTorch's own Python modules and
older user code call (``_VF.lstm``, ``_VF.einsum``): the op table's generated bindings (where
the ``torch`` namespace has a Python-level function of the same name, as ``einsum``, ``_VF``
keeps the binding: ``_VF.einsum(equation, [operands])``), else ember's function of that name."""
import sys
import types


class VFModule(types.ModuleType):
    def __getattr__(self, name):
        import ember
        if name.startswith("__"):
            raise AttributeError(name)
        fn = ember._variable_functions.get(name)
        return fn if fn is not None else getattr(ember, name)


sys.modules[__name__] = VFModule(__name__)
