"""A stage's backward for one microbatch (PyTorch's
``torch.distributed.pipelining._backward``): backpropagate the gradients received for the
stage's outputs (or its loss) into its parameters' ``.grad`` and return the gradients of the
stage's inputs, which go back to the previous stage."""
import ember

from ._utils import map_debug_info


def _autograd_grad_for_inputs(outputs, inputs, grad_outputs=None, retain_graph=False,
                              allow_unused=False):
    """``autograd.grad`` of ``outputs`` for the inputs that require grad; None for the rest."""
    positions, wanted = [], []
    for i, inp in enumerate(inputs):
        if isinstance(inp, ember.Tensor) and inp.requires_grad:
            positions.append(i)
            wanted.append(inp)
    if not wanted:
        return tuple(None for _ in inputs)
    grads = ember.autograd.grad(outputs=outputs, inputs=wanted, grad_outputs=grad_outputs,
                                retain_graph=retain_graph, allow_unused=allow_unused)
    result = [None] * len(inputs)
    for i, g in zip(positions, grads, strict=True):
        result[i] = g
    return tuple(result)


def _extract_tensors_with_grads(output_val, grad_val, outputs, grads):
    """Pair each differentiable tensor of ``output_val`` with its gradient in ``grad_val`` (the
    same structure; None for a loss)."""
    if isinstance(output_val, ember.Tensor):
        if not output_val.requires_grad and output_val.grad_fn is None:
            return
        if not isinstance(grad_val, (ember.Tensor, type(None))):
            raise AssertionError(f"Expected Tensor or None gradient but got {type(grad_val)}")
        outputs.append(output_val)
        grads.append(grad_val)
    elif isinstance(output_val, (tuple, list)):
        if grad_val is None:
            return
        if not isinstance(grad_val, (tuple, list)):
            raise AssertionError(f"grad_value expected to have type {type(output_val)} but "
                                 f"got {type(grad_val)}")
        if not len(output_val) == len(grad_val):
            raise AssertionError(f"Expected len(output_val) == len(grad_val), got "
                                 f"{len(output_val)} != {len(grad_val)}")
        for ov, gv in zip(output_val, grad_val):
            _extract_tensors_with_grads(ov, gv, outputs, grads)
    elif isinstance(output_val, dict):
        if grad_val is None:
            return
        if not isinstance(grad_val, dict):
            raise AssertionError(f"Expected dict, got {type(grad_val)}")
        if not set(output_val.keys()) == set(grad_val.keys()):
            raise AssertionError(f"Expected keys {set(output_val.keys())}, got "
                                 f"{set(grad_val.keys())}")
        for k in output_val:
            _extract_tensors_with_grads(output_val[k], grad_val[k], outputs, grads)


def stage_backward(stage_output, output_grads, input_values):
    """Accumulate the parameters' gradients from ``stage_output`` (with ``output_grads``) and
    return the gradients of ``input_values``, taking them off the inputs: the next
    microbatch's gradients must not add to them."""
    try:
        outputs, grads = [], []
        _extract_tensors_with_grads(stage_output, output_grads, outputs, grads)
        ember.autograd.backward(outputs, grad_tensors=grads)
        grad_inputs = []
        for val in input_values:
            if isinstance(val, ember.Tensor):
                grad_inputs.append(val.grad)
                val.grad = None
            else:
                grad_inputs.append(None)
    except Exception as e:
        raise RuntimeError(f"""
        Failed to run stage backward:
        Stage output: {map_debug_info(stage_output)}
        Output gradient: {map_debug_info(output_grads)}
        Input: {map_debug_info(input_values)}
        """) from e
    return tuple(grad_inputs)

