"""``ember.autograd``: reverse-mode automatic differentiation as a dispatch layer.

* :mod:`.derivatives` registers an autograd kernel per op (generated from
  ``ember/_ops/derivatives.yaml``) on the Autograd keys, plus a fallback for the rest;
* :mod:`.graph` has the recorded nodes, saved tensors and hooks (``saved_tensors_hooks``,
  ``save_on_cpu``, ``register_multi_grad_hook``); :mod:`.engine` runs them;
* :mod:`.views` keeps views and in-place writes consistent (CopySlices, view replay);
* :mod:`.grad_mode` the thread-local modes; :mod:`.function` custom ``Function`` s;
  :mod:`.gradcheck` finite-difference checks; :mod:`.anomaly_mode` debugging help;
  :mod:`.functional` vjp / jvp / jacobian / hessian / vhp / hvp;
* :mod:`.forward_ad` forward-mode AD (dual levels and tensors; tangents propagate through the
  same generated kernels, :mod:`._forward`).
"""
import warnings
from collections.abc import Mapping

from . import anomaly_mode, engine, graph, grad_mode  # noqa: F401
from .anomaly_mode import detect_anomaly, set_detect_anomaly  # noqa: F401
from .function import Function, FunctionCtx, NestedIOFunction, once_differentiable  # noqa: F401
from .grad_mode import (enable_grad, inference_mode, is_grad_enabled,  # noqa: F401
                        is_inference_mode_enabled, is_multithreading_enabled, no_grad,
                        set_grad_enabled, set_multithreading_enabled)
from .gradcheck import gradcheck, gradgradcheck  # noqa: F401
from . import functional  # noqa: F401
from . import forward_ad  # noqa: F401
from .variable import Variable  # noqa: F401

__all__ = ["backward", "grad", "Function", "NestedIOFunction", "no_grad", "enable_grad",
           "set_grad_enabled", "set_multithreading_enabled", "inference_mode", "detect_anomaly",
           "set_detect_anomaly", "gradcheck", "gradgradcheck", "functional", "graph"]


def _as_tuple(x):
    if x is None:
        return None
    if hasattr(x, "_keyset"):
        return (x,)
    return tuple(x)


def _make_grads(outputs, grad_outputs):
    if grad_outputs is None:
        return [None] * len(outputs)
    gs = list(_as_tuple(grad_outputs))
    if len(gs) != len(outputs):
        raise RuntimeError(f"grad requires the same number of outputs and grad_outputs, got "
                           f"{len(outputs)} outputs and {len(gs)} grad_outputs")
    return gs


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False, grad_variables=None,
             inputs=None):
    """Accumulate the gradients of ``tensors`` into the ``.grad`` of the graph's leaves."""
    tensors = _as_tuple(tensors)
    if inputs is not None:
        inputs = _as_tuple(inputs)
        if len(inputs) == 0:
            raise RuntimeError("`inputs` argument to `backward()` cannot be empty.")
    grads = _make_grads(tensors, grad_tensors if grad_tensors is not None else grad_variables)
    if retain_graph is None:
        retain_graph = create_graph
    engine.run_backward(tensors, grads, retain_graph, create_graph, inputs=inputs,
                        allow_unused=True, accumulate_grad=True)


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False,
         only_inputs=True, allow_unused=None, is_grads_batched=False, materialize_grads=False):
    """Gradients of ``outputs`` with respect to ``inputs``, returned (``.grad`` is untouched):
    a tuple, or a dict with the keys of ``inputs`` when that is a dict (PyTorch 2.13)."""
    if materialize_grads and allow_unused is False:
        raise ValueError("Expected allow_unused to be True or not passed when materialize_grads=True, "
                         "but got: allow_unused=False.")
    if allow_unused is None:
        allow_unused = materialize_grads
    outputs = _as_tuple(outputs)
    keys = None
    if type(inputs) is dict:
        keys, inputs = tuple(inputs), tuple(inputs.values())
    elif isinstance(inputs, Mapping):
        raise TypeError(f"`inputs` argument to `grad()` must be a dict, not {type(inputs).__name__}. "
                        f"Other Mapping types are not supported.")
    inputs = _as_tuple(inputs)
    if len(inputs) == 0:
        raise RuntimeError("`inputs` argument to `grad()` cannot be empty.")
    if not only_inputs:
        warnings.warn("only_inputs argument is deprecated and is ignored now (defaults to True). "
                      "To accumulate gradient for other parts of the graph, please use "
                      "torch.autograd.backward.", FutureWarning, stacklevel=2)
    grads = _make_grads(outputs, grad_outputs)
    if retain_graph is None:
        retain_graph = create_graph
    if is_grads_batched:
        result = _batched_grad(outputs, grads, retain_graph, create_graph, inputs, allow_unused)
    else:
        result = engine.run_backward(outputs, grads, retain_graph, create_graph, inputs=inputs,
                                     allow_unused=allow_unused, accumulate_grad=False)
    if materialize_grads:
        import ember
        result = [g if g is not None else ember.zeros_like(t, requires_grad=create_graph)
                  for g, t in zip(result, inputs)]
    if keys is not None:
        return dict(zip(keys, result))
    return tuple(result)


def _batched_grad(outputs, grads, retain_graph, create_graph, inputs, allow_unused):
    """``is_grads_batched``: one backward pass per slice of the grad_outputs' first dim, run at
    once under vmap (the grads given as None stay unbatched); unused inputs stay None."""
    from ..func import vmap
    unused = []

    def vjp(*gs):
        result = engine.run_backward(outputs, list(gs), retain_graph, create_graph,
                                     inputs=inputs, allow_unused=allow_unused,
                                     accumulate_grad=False)
        unused[:] = [g is None for g in result]
        return tuple(g for g in result if g is not None)
    in_dims = tuple(None if g is None else 0 for g in grads)
    found = iter(vmap(vjp, in_dims=in_dims)(*grads))
    return [None if u else next(found) for u in unused]
