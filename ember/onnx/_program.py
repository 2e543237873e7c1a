"""``ONNXProgram``: what :func:`ember.onnx.export` returns, an ONNX model with ways to save and
run it (``torch.onnx.ONNXProgram``, on an ``onnx.ModelProto`` where PyTorch holds an ONNX IR
model)."""
import os

__all__ = ["ONNXProgram"]


class ONNXProgram:
    """An exported ONNX model (``model_proto``) and the ExportedProgram it was lowered from."""

    def __init__(self, model_proto, exported_program):
        self._model_proto = model_proto
        self.exported_program = exported_program
        self._inference_session = None

    def __repr__(self):
        import onnx
        return f"ONNXProgram(\n    model=\n{onnx.printer.to_text(self._model_proto)}\n)"

    @property
    def model_proto(self):
        """The ONNX ``ModelProto``."""
        return self._model_proto

    def save(self, destination, *, include_initializers=True, keep_initializers_as_inputs=False,
             external_data=None):
        """Write the model to ``destination`` (a path or a binary file object).

        ``include_initializers=False`` leaves the weights out; ``keep_initializers_as_inputs``
        lists them as graph inputs too (so a caller may override them); ``external_data`` writes
        them to ``<file name>.data`` beside a path (a file object always gets them inline)."""
        import onnx
        model = onnx.ModelProto()
        model.CopyFrom(self._model_proto)
        graph = model.graph
        if keep_initializers_as_inputs:
            graph.input.extend(onnx.helper.make_tensor_value_info(t.name, t.data_type, t.dims)
                               for t in graph.initializer)
        if not include_initializers:
            del graph.initializer[:]
        if hasattr(destination, "write"):
            destination.write(model.SerializeToString())
            return
        destination = os.fspath(destination)
        if external_data:
            onnx.save_model(model, destination, save_as_external_data=True,
                            all_tensors_to_one_file=True, size_threshold=0,
                            location=os.path.basename(destination) + ".data")
        else:
            onnx.save_model(model, destination)

    def initialize_inference_session(self):
        """Start the ONNX Runtime session :meth:`__call__` runs."""
        import onnxruntime as ort
        self._inference_session = ort.InferenceSession(
            self._model_proto.SerializeToString(), providers=["CPUExecutionProvider"])

    def __call__(self, *args, **kwargs):
        """Run the model in ONNX Runtime on ember tensors (flattened as the exported inputs);
        returns a tuple of ember tensors."""
        from .. import from_numpy
        from .._tensor import Tensor
        from ..utils import _pytree as pytree
        if self._inference_session is None:
            self.initialize_inference_session()
        leaves = [x for x in pytree.tree_leaves((args, kwargs)) if isinstance(x, Tensor)]
        feeds = {i.name: x.detach().cpu().numpy()
                 for i, x in zip(self._inference_session.get_inputs(), leaves)}
        return tuple(from_numpy(o) for o in self._inference_session.run(None, feeds))

    def release(self):
        """Drop the ONNX Runtime session."""
        self._inference_session = None
