"""``ember.backends.quantized``: the quantized engine setting (PyTorch's ``QEngine``). ember has
no quantized kernels, so, as in a PyTorch build without FBGEMM/QNNPACK/oneDNN, the only
supported engine is "none" and choosing another raises PyTorch's error."""
import sys
import types

_ENGINES = {"none": 0, "": 0, "fbgemm": 1, "qnnpack": 2, "onednn": 3, "x86": 4}
_NAMES = {0: "none", 1: "fbgemm", 2: "qnnpack", 3: "onednn", 4: "x86"}
_SUPPORTED = ["none"]


def _get_qengine_id(qengine: str) -> int:
    if qengine is None or qengine in _ENGINES:
        return _ENGINES.get(qengine, 0)
    raise RuntimeError(f"{qengine} is not a valid value for quantized engine")


def _get_qengine_str(qengine: int) -> str:
    return _NAMES.get(qengine, "*undefined")


class _QEngineProp:
    def __get__(self, obj, objtype) -> str:
        from .._context import ctx
        return ctx.qengine

    def __set__(self, obj, val: str) -> None:
        from .._context import ctx
        name = _get_qengine_str(_get_qengine_id(val))
        if name not in _SUPPORTED:
            raise RuntimeError(f"quantized engine {name} is not supported")
        ctx.qengine = name


class _SupportedQEnginesProp:
    def __get__(self, obj, objtype) -> list:
        return list(_SUPPORTED)

    def __set__(self, obj, val) -> None:
        raise RuntimeError("Assignment not supported")


class QuantizedEngine(types.ModuleType):
    def __init__(self, m, name):
        super().__init__(name)
        self.m = m

    def __getattr__(self, attr):
        return self.m.__getattribute__(attr)

    engine = _QEngineProp()
    supported_engines = _SupportedQEnginesProp()


sys.modules[__name__] = QuantizedEngine(sys.modules[__name__], __name__)
