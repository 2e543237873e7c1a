"""``ember.onnx``: export a module or function to an ONNX model (``torch.onnx``).

:func:`export` captures the model with ``ember.export`` (a Core ATen graph, parameters and
buffers as inputs), lowers each aten op to ONNX nodes through the table in ``_lowering.py`` and
returns an :class:`ONNXProgram`, written to ``f`` when one is given, as PyTorch's ``dynamo=True``
exporter does. The ``onnx`` package is needed only when :func:`export` runs (``import ember``
and ``ember.onnx.errors`` do without it).
"""
import sys
import types
import warnings

from . import errors, symbolic_helper  # noqa: F401
from ._program import ONNXProgram
from ._symbolic import (TensorProtoDataType, register_custom_op_symbolic,  # noqa: F401
                        unregister_custom_op_symbolic)
from .errors import OnnxExporterError

__all__ = ["errors", "export", "is_in_onnx_export", "OnnxExporterError", "ONNXProgram"]


def _opset_module_getattr(version):
    def __getattr__(name):
        raise AttributeError(
            f"torch.onnx.symbolic_opset{version}.{name}: ember has no TorchScript symbolic "
            f"library (its exporter lowers aten ops itself); a custom symbolic function must "
            f"emit its nodes with g.op")
    return __getattr__


# PyTorch's per-opset symbolic modules, importable because libraries import them beside their
# custom symbolic functions (torchvision: ``from torch.onnx import symbolic_opset11``); what
# such a module holds is TorchScript-specific and raises when used (see ``_symbolic``)
for _v in range(7, 21):
    _m = types.ModuleType(f"{__name__}.symbolic_opset{_v}", f"PyTorch's opset {_v} symbolic "
                          f"functions: not provided by ember (see ember/onnx/_symbolic.py).")
    _m.__getattr__ = _opset_module_getattr(_v)
    sys.modules[_m.__name__] = _m
    globals()[f"symbolic_opset{_v}"] = _m
del _v, _m


def export(model, args=(), f=None, *, kwargs=None, verbose=None, input_names=None,
           output_names=None, opset_version=None, dynamo=True, external_data=True,
           dynamic_shapes=None, export_params=True, keep_initializers_as_inputs=False,
           dynamic_axes=None, do_constant_folding=True):
    """Export ``model`` (an ``nn.Module``, an ``ember.export.ExportedProgram`` or a function)
    run on ``args``/``kwargs`` to ONNX.

    ``f``: a path or binary file object to write the model to (``export_params=False`` leaves
    the weights out of it; ``external_data`` writes them to ``<f>.data`` beside a path).
    ``input_names``/``output_names`` name the graph's tensor inputs and outputs in order.
    ``dynamic_axes`` ({name: {axis: axis name}} or {name: [axis]}) makes those axes symbolic
    (a ``dim_param``, and a graph that computes their sizes at run time); ``dynamic_shapes`` is
    ``ember.export``'s spec for the same. ``opset_version`` (default 18): the model is built
    with opset 18 and converted when another is asked for. ``do_constant_folding`` computes the
    ops on weights and constants at export (their results become initializers).
    ``verbose`` prints the graph.

    Returns the :class:`ONNXProgram`; with ``dynamo=False`` (PyTorch's deprecated TorchScript
    exporter, which ember does not have: the same capture runs) it returns None, as PyTorch.
    """
    from . import _exporter
    if not dynamo:
        warnings.warn("You are using the legacy TorchScript-based ONNX export. Starting in "
                      "PyTorch 2.9, the new torch.export-based ONNX exporter has become the "
                      "default.", category=DeprecationWarning, stacklevel=2)
        if dynamic_shapes:
            raise ValueError("The exporter only supports dynamic shapes through parameter "
                             "dynamic_axes when dynamo=False.")
    onnx = _exporter.import_onnx()
    program = _exporter.export(
        model, args, kwargs=kwargs, input_names=input_names, output_names=output_names,
        custom_symbolics=not dynamo, opset_version=opset_version,
        dynamic_axes=dynamic_axes, dynamic_shapes=dynamic_shapes,
        do_constant_folding=do_constant_folding,
        keep_initializers_as_inputs=keep_initializers_as_inputs, verbose=verbose)
    from ._lowering import OPSET
    if opset_version is not None and opset_version != OPSET:
        try:
            converted = onnx.version_converter.convert_version(program.model_proto,
                                                               opset_version)
        except Exception as e:
            raise OnnxExporterError(f"converting the exported model from opset {OPSET} to "
                                    f"opset {opset_version} failed: {e}") from e
        program = ONNXProgram(converted, program.exported_program)
    if f is not None:
        program.save(f, include_initializers=export_params,
                     keep_initializers_as_inputs=keep_initializers_as_inputs,
                     external_data=external_data)
    return program if dynamo else None


def is_in_onnx_export():
    """Whether an ONNX export is capturing the model now."""
    from ._exporter import in_export
    return in_export()
