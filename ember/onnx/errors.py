"""ONNX exporter exceptions (``torch.onnx.errors``): importable without the ``onnx`` package."""

__all__ = ["OnnxExporterWarning", "OnnxExporterError", "UnsupportedOperatorError"]


class OnnxExporterWarning(UserWarning):
    """Warnings in the ONNX exporter."""


class OnnxExporterError(RuntimeError):
    """Errors raised by the ONNX exporter. This is the base class for all exporter errors."""


class UnsupportedOperatorError(OnnxExporterError):
    """Raised when an operator is unsupported by the exporter."""

    def __init__(self, name, version, supported_version):
        if supported_version is not None:
            msg = (f"Exporting the operator '{name}' to ONNX opset version {version} "
                   "is not supported. Support for this operator was added in version "
                   f"{supported_version}, try exporting with this version")
        elif name.startswith(("aten::", "prim::", "quantized::")):
            msg = (f"Exporting the operator '{name}' to ONNX opset version {version} "
                   "is not supported")
        else:
            msg = (f"ONNX export failed on an operator with unrecognized namespace {name}. "
                   "If you are trying to export a custom operator, make sure you registered it "
                   "with the right domain and version.")
        super().__init__(msg)
