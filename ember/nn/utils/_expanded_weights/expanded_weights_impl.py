"""``ExpandedWeight``: a parameter standing for a batch of per-sample copies of itself.

An ``ExpandedWeight`` aliases a parameter and takes part in ``__torch_function__``: an op with a
per-sample rule (registered with :func:`implements_per_sample_grads`) runs the rule's
``autograd.Function``, whose backward stores each sample's gradient in the parameter's
``grad_sample``; every other op is refused, since which dimension of a plain tensor argument is the
batch cannot be known. The recurrent ops (``rnn_tanh``, ``rnn_relu``, ``lstm``, ``gru``) run
their composite kernels step by step with ``F.linear`` as the cells' product
(``ember/_kernels/composite/rnn.py``), so that each product reaches the linear rule.
"""
import contextlib
import functools
import inspect

import ember
from ...._kernels.composite import rnn as _rnn
from ....utils._pytree import tree_map_only
from ... import functional as F

__all__ = ["ExpandedWeight", "implements_per_sample_grads"]

HANDLED_FUNCTIONS = {}

# __torch_function__ runs before the dispatcher, so the recurrent ops' kernels are keyed by the
# public functions the RNN modules call: func -> (input variant, data variant)
expanded_weights_rnn_decomps = {
    ember.rnn_relu: (_rnn.rnn_relu_input, _rnn.rnn_relu_data),
    ember.rnn_tanh: (_rnn.rnn_tanh_input, _rnn.rnn_tanh_data),
    ember.lstm: (_rnn.lstm_input, _rnn.lstm_data),
    ember.gru: (_rnn.gru_input, _rnn.gru_data),
}


def _run_rnn_decomp(kernel, args, kwargs):
    """``kernel`` step by step with ``F.linear`` products. PyTorch's decompositions drop no units
    between layers (their dropout condition never holds), so neither does this."""
    bound = inspect.signature(kernel).bind(*args, **kwargs)
    bound.arguments["dropout"] = 0.0
    return kernel(*bound.args, **bound.kwargs, linear=F.linear)


@contextlib.contextmanager
def setup_rnn(use_input_variant, args, kwargs):
    """While an RNN runs step by step, each product sees one step's (batch, features) rows; the
    packed (data) variant's later steps have fewer samples than the batch an ExpandedWeight
    stands for (the largest), which its ExpandedWeights allow meanwhile."""
    if use_input_variant:
        yield
        return
    for tree in (args, kwargs):
        tree_map_only(ExpandedWeight, lambda ew: ew.set_allow_smaller_batches(True), tree)
    try:
        yield
    finally:
        for tree in (args, kwargs):
            tree_map_only(ExpandedWeight, lambda ew: ew.set_allow_smaller_batches(False), tree)


def implements_per_sample_grads(torch_function):
    """Decorator: the ``autograd.Function`` computing ``torch_function`` with per-sample
    gradients (called as ``Fn.apply(kwarg_names, torch_function, *args, *kwarg_values)``)."""
    @functools.wraps(torch_function)
    def decorator(autograd_func):
        HANDLED_FUNCTIONS[torch_function] = autograd_func
        return autograd_func
    return decorator


class ExpandedWeight(ember.Tensor):
    """A weight with an expanded batch dimension: ops on it act as on the weight, and backward
    fills the original weight's ``grad_sample`` with per-sample gradients. A subclass (not a
    dispatch key) so that modules can be reparametrized with it."""

    def __init__(self, orig_weight, batch_size, loss_reduction):
        self.batch_size = batch_size
        self.batch_first = True
        self.allow_smaller_batches = False
        self.orig_weight = orig_weight
        self.loss_reduction = loss_reduction

    handled_functions = HANDLED_FUNCTIONS

    def __new__(cls, orig_weight, batch_size, loss_reduction):
        if not isinstance(orig_weight, ember.Tensor):
            raise RuntimeError(f"Can only make Expanded Weights of Tensors, got "
                               f"{type(orig_weight).__name__}")
        if not orig_weight.requires_grad:
            raise RuntimeError("Can only build ExpandedWeights objects of tensors that "
                               "requires_grad")
        return ember.Tensor._make_subclass(cls, orig_weight, True)

    @classmethod
    def __torch_function__(cls, func, _, args=(), kwargs=None):
        if kwargs is None:
            kwargs = {}
        if func in expanded_weights_rnn_decomps:
            # aten tells the variants apart by parsing; the data variant has a list third
            decomp_opts = expanded_weights_rnn_decomps[func]
            use_input_variant = isinstance(args[2], list)
            decomp = decomp_opts[0] if use_input_variant else decomp_opts[1]
            with setup_rnn(use_input_variant, args, kwargs):
                return _run_rnn_decomp(decomp, args, kwargs)
        # (PyTorch also answers torch._cudnn_rnn_flatten_weight with None here: ember has no
        # such function and its RNNs call none)
        if func in cls.handled_functions:
            return cls.handled_functions[func].apply(
                tuple(kwargs.keys()), func, *(args + tuple(kwargs.values())))
        # no fallback: the batch dimension of a plain tensor argument is unknown (say
        # torch.add(Tensor, ExpandedWeight))
        raise RuntimeError(f"Expanded Weights encountered but cannot handle function "
                           f"{func.__name__}")

    @property
    def dtype(self):
        return self.orig_weight.dtype

    @property
    def data(self):
        return self.orig_weight.data

    @property
    def shape(self):
        return self.orig_weight.shape

    @property
    def device(self):
        return self.orig_weight.device

    @property
    def is_cuda(self):
        return self.orig_weight.is_cuda

    def data_ptr(self):
        return self.orig_weight.data_ptr()

    def get_device(self):
        return self.orig_weight.get_device()

    def set_allow_smaller_batches(self, is_allow_smaller_batches):
        self.allow_smaller_batches = is_allow_smaller_batches

    def set_batch_first(self, is_batch_first=True):
        self.batch_first = is_batch_first
