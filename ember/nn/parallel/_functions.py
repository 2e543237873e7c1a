"""The autograd functions of single-process parallelism (PyTorch's
``torch/nn/parallel/_functions.py``): each copy between devices is differentiable through its
counterpart — a broadcast's gradients are summed back (``ReduceAddCoalesced``), a gather's are
scattered back (``Scatter``), and the other way round."""
import warnings

import ember
from ...autograd import Function
from . import comm

__all__ = ["Broadcast", "ReduceAddCoalesced", "Gather", "Scatter"]


def _index(device):
    return ember.cuda._get_device_index(device, optional=True)


class Broadcast(Function):
    @staticmethod
    def forward(ctx, target_gpus, *inputs):
        if any(i.device.type == "cpu" for i in inputs):
            raise AssertionError("Broadcast function not implemented for CPU tensors")
        ctx.target_gpus = [_index(x) for x in target_gpus]
        if len(inputs) == 0:
            return ()
        ctx.num_inputs = len(inputs)
        ctx.input_device = inputs[0].get_device()
        outputs = comm.broadcast_coalesced(inputs, ctx.target_gpus)
        non_differentiables = []
        for idx, needs_grad in enumerate(ctx.needs_input_grad[1:]):
            if not needs_grad:
                non_differentiables.extend(output[idx] for output in outputs)
        ctx.mark_non_differentiable(*non_differentiables)
        return tuple(t for tensors in outputs for t in tensors)

    @staticmethod
    def backward(ctx, *grad_outputs):
        return (None,) + ReduceAddCoalesced.apply(ctx.input_device, ctx.num_inputs,
                                                  *grad_outputs)


class ReduceAddCoalesced(Function):
    @staticmethod
    def forward(ctx, destination, num_inputs, *grads):
        ctx.target_gpus = [grads[i].get_device() for i in range(0, len(grads), num_inputs)]
        grads_ = [grads[i:i + num_inputs] for i in range(0, len(grads), num_inputs)]
        return comm.reduce_add_coalesced(grads_, destination)

    @staticmethod
    def backward(ctx, *grad_outputs):
        return (None, None) + Broadcast.apply(ctx.target_gpus, *grad_outputs)


class Gather(Function):
    @staticmethod
    def forward(ctx, target_device, dim, *inputs):
        if any(i.device.type == "cpu" for i in inputs):
            raise AssertionError("Gather function not implemented for CPU tensors")
        ctx.target_device = "cpu" if target_device == "cpu" else _index(target_device)
        ctx.dim = dim
        ctx.input_gpus = tuple(i.get_device() for i in inputs)
        if all(t.dim() == 0 for t in inputs) and dim == 0:
            inputs = tuple(t.view(1) for t in inputs)
            warnings.warn("Was asked to gather along dimension 0, but all input tensors were "
                          "scalars; will instead unsqueeze and return a vector.", stacklevel=2)
            ctx.unsqueezed_scalar = True
        else:
            ctx.unsqueezed_scalar = False
        ctx.input_sizes = tuple(i.size(ctx.dim) for i in inputs)
        return comm.gather(inputs, ctx.dim, ctx.target_device)

    @staticmethod
    def backward(ctx, grad_output):
        scattered = Scatter.apply(ctx.input_gpus, ctx.input_sizes, ctx.dim, grad_output)
        if ctx.unsqueezed_scalar:
            scattered = tuple(g[0] for g in scattered)
        return (None, None) + scattered


class Scatter(Function):
    @staticmethod
    def forward(ctx, target_gpus, chunk_sizes, dim, input):  # noqa: A002  (PyTorch's name)
        target_gpus = [_index(x) for x in target_gpus]
        ctx.dim = dim
        ctx.input_device = input.get_device() if input.device.type != "cpu" else -1
        streams = None
        if ember.cuda.is_available() and ctx.input_device == -1:
            # host-to-device copies on a side stream of each device, as PyTorch's
            streams = [ember.cuda.Stream(device=d) for d in target_gpus]
        outputs = comm.scatter(input, target_gpus, chunk_sizes, ctx.dim, streams)
        if streams is not None:
            for i, output in enumerate(outputs):
                with ember.cuda.device(target_gpus[i]):
                    main = ember.cuda.current_stream()
                    main.wait_stream(streams[i])
                    output.record_stream(main)
        return outputs

    @staticmethod
    def backward(ctx, *grad_output):
        return None, None, None, Gather.apply(ctx.input_device, ctx.dim, *grad_output)
