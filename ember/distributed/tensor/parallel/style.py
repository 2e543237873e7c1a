"""The ``ParallelStyle``s ``parallelize_module`` applies. Each one shards (or replicates) a
module's parameters with ``distribute_module`` and installs hooks that turn the module's inputs
into DTensors of the layouts it computes with and its outputs into the layouts asked for
(PyTorch's classes, field for field)."""
from abc import ABC, abstractmethod
from functools import partial

import ember
import ember.nn as nn

from .._api import DTensor, distribute_module, distribute_tensor
from ..placement_types import Placement, Replicate, Shard

__all__ = ["ParallelStyle", "RowwiseParallel", "SequenceParallel", "ColwiseParallel",
           "PrepareModuleInput", "PrepareModuleInputOutput", "PrepareModuleOutput"]


class ParallelStyle(ABC):
    """How a module is parallelized: ``_apply(module, device_mesh)`` does it and returns the
    module."""

    src_data_rank = 0

    @abstractmethod
    def _apply(self, module, device_mesh):
        ...


def _redistribute_input(input_layouts, desired_input_layouts, mod, inputs, device_mesh):
    """The module's first input as a DTensor of ``input_layouts`` (a plain tensor is taken as
    this rank's local part), redistributed to ``desired_input_layouts``."""
    input_tensor = inputs[0]
    if not isinstance(input_tensor, DTensor):
        input_tensor = DTensor.from_local(input_tensor, device_mesh, input_layouts,
                                          run_check=False)
    if input_layouts != desired_input_layouts:
        input_tensor = input_tensor.redistribute(placements=desired_input_layouts,
                                                 async_op=True)
    return input_tensor


def _redistribute_output(output_layouts, use_local_output, mod, outputs, device_mesh):
    if outputs.placements != output_layouts:
        outputs = outputs.redistribute(placements=output_layouts, async_op=True)
    return outputs.to_local() if use_local_output else outputs


def _distribute_params(module, device_mesh, placement, src_data_rank):
    for name, param in module.named_parameters():
        module.register_parameter(name, nn.Parameter(
            distribute_tensor(param, device_mesh, [placement], src_data_rank=src_data_rank),
            requires_grad=param.requires_grad))


def _style_repr(style):
    return (f"{type(style).__name__}(input_layouts={style.input_layouts}, "
            f"output_layouts={style.output_layouts}, use_local_output={style.use_local_output})")


class ColwiseParallel(ParallelStyle):
    """Shard an ``nn.Linear`` by output features (weight and bias ``Shard(0)``) or an
    ``nn.Embedding`` by embedding dim (weight ``Shard(1)``): the input is replicated, the output
    sharded on its last dim (by default a local tensor)."""

    def __init__(self, *, input_layouts=None, output_layouts=None, use_local_output=True):
        super().__init__()
        self.input_layouts = (input_layouts or Replicate(),)
        self.output_layouts = (output_layouts or Shard(-1),)
        self.desired_input_layouts = (Replicate(),)
        self.use_local_output = use_local_output

    _prepare_input_fn = staticmethod(_redistribute_input)
    _prepare_output_fn = staticmethod(_redistribute_output)

    def _partition_linear_fn(self, name, module, device_mesh):
        # y = x W^T + b: W's rows (and b) are the output features
        _distribute_params(module, device_mesh, Shard(0), self.src_data_rank)

    def _partition_embedding_fn(self, name, module, device_mesh):
        _distribute_params(module, device_mesh, Shard(1), self.src_data_rank)

    def _apply(self, module, device_mesh):
        if isinstance(module, nn.Linear):
            partition_fn = self._partition_linear_fn
        elif isinstance(module, nn.Embedding):
            partition_fn = self._partition_embedding_fn
        else:
            raise NotImplementedError("ColwiseParallel currently only support nn.Linear and "
                                      "nn.Embedding!")
        return distribute_module(
            module, device_mesh, partition_fn,
            partial(self._prepare_input_fn, self.input_layouts, self.desired_input_layouts),
            partial(self._prepare_output_fn, self.output_layouts, self.use_local_output))

    def __repr__(self):
        return _style_repr(self)


class RowwiseParallel(ParallelStyle):
    """Shard an ``nn.Linear`` by input features (weight ``Shard(1)``, bias replicated; the input
    sharded on its last dim) or an ``nn.Embedding`` by rows (weight ``Shard(0)``; the indices
    replicated): the partial output is reduced to ``output_layouts`` (default replicated)."""

    def __init__(self, *, input_layouts=None, output_layouts=None, use_local_output=True):
        super().__init__()
        self.input_layouts = (input_layouts or Shard(-1),)
        self.output_layouts = (output_layouts or Replicate(),)
        self.use_local_output = use_local_output

    _prepare_input_fn = staticmethod(_redistribute_input)
    _prepare_output_fn = staticmethod(_redistribute_output)

    def _partition_linear_fn(self, name, module, device_mesh):
        module.register_parameter("weight", nn.Parameter(
            distribute_tensor(module.weight, device_mesh, [Shard(1)],
                              src_data_rank=self.src_data_rank),
            requires_grad=module.weight.requires_grad))
        if getattr(module, "bias", None) is not None:
            module.register_parameter("bias", nn.Parameter(
                distribute_tensor(module.bias, device_mesh, [Replicate()],
                                  src_data_rank=self.src_data_rank),
                requires_grad=module.bias.requires_grad))

    def _partition_embedding_fn(self, name, module, device_mesh):
        _distribute_params(module, device_mesh, Shard(0), self.src_data_rank)

    def _apply(self, module, device_mesh):
        if isinstance(module, nn.Linear):
            partition_fn = self._partition_linear_fn
            self.desired_input_layouts = (Shard(-1),)
        elif isinstance(module, nn.Embedding):
            partition_fn = self._partition_embedding_fn
            self.desired_input_layouts = (Replicate(),)
        else:
            raise NotImplementedError("RowwiseParallel currently only support nn.Linear and "
                                      "nn.Embedding!")
        return distribute_module(
            module, device_mesh, partition_fn,
            partial(self._prepare_input_fn, self.input_layouts, self.desired_input_layouts),
            partial(self._prepare_output_fn, self.output_layouts, self.use_local_output))

    def __repr__(self):
        return _style_repr(self)


class SequenceParallel(ParallelStyle):
    """Run a module (``nn.LayerNorm``, ``nn.Dropout``, an RMSNorm) on inputs sharded on
    ``sequence_dim``, its parameters replicated: a plain input is taken as this rank's sequence
    shard, a DTensor is redistributed to it; the output stays sequence-sharded (a DTensor unless
    ``use_local_output``). The parameters are replicated from each rank's own values (norms
    start as ones, as PyTorch assumes)."""

    def __init__(self, *, sequence_dim=1, use_local_output=False):
        super().__init__()
        self.sequence_sharding = (Shard(sequence_dim),)
        self.use_local_output = use_local_output

    def _replicate_module_fn(self, name, module, device_mesh):
        for p_name, param in module.named_parameters():
            module.register_parameter(p_name, nn.Parameter(
                DTensor.from_local(param, device_mesh, [Replicate()], run_check=False)))

    @staticmethod
    def _prepare_input_fn(sequence_sharding, mod, inputs, device_mesh):
        input_tensor = inputs[0]
        if isinstance(input_tensor, DTensor):
            if input_tensor.placements != sequence_sharding:
                input_tensor = input_tensor.redistribute(placements=sequence_sharding,
                                                         async_op=True)
            return input_tensor
        if isinstance(input_tensor, ember.Tensor):
            return DTensor.from_local(input_tensor, device_mesh, sequence_sharding,
                                      run_check=False)
        raise ValueError(f"expecting input of {mod} to be a torch.Tensor or DTensor, but got "
                         f"{input_tensor}")

    @staticmethod
    def _prepare_output_fn(use_local_output, mod, outputs, device_mesh):
        return outputs.to_local() if use_local_output else outputs

    def _apply(self, module, device_mesh):
        return distribute_module(module, device_mesh, self._replicate_module_fn,
                                 partial(self._prepare_input_fn, self.sequence_sharding),
                                 partial(self._prepare_output_fn, self.use_local_output))

    def __repr__(self):
        s = f"{type(self).__name__}("
        if len(self.sequence_sharding) == 1:
            s += f"sequence_dim={self.sequence_sharding[0].dim}, "
        return s + f"use_local_output={self.use_local_output})"


def _as_tuple(layouts):
    return (layouts,) if isinstance(layouts, Placement) else layouts


class PrepareModuleInput(ParallelStyle):
    """Turn a module's inputs (positional by ``input_layouts``, keyword by
    ``input_kwarg_layouts``; ``None`` leaves one alone) into DTensors of those layouts and
    redistribute them to the desired layouts (local tensors if ``use_local_output``)."""

    def __init__(self, *, input_layouts=None, desired_input_layouts=None,
                 input_kwarg_layouts=None, desired_input_kwarg_layouts=None,
                 use_local_output=False):
        self.input_layouts = _as_tuple(input_layouts)
        self.desired_input_layouts = _as_tuple(desired_input_layouts)
        self.use_local_output = use_local_output
        if self.input_layouts is not None:
            if self.desired_input_layouts is None:
                raise AssertionError("desired module inputs should not be None!")
            if len(self.input_layouts) != len(self.desired_input_layouts):
                raise AssertionError("input_layouts and desired_input_layouts should have same "
                                     "length!")
        self.with_kwargs = input_kwarg_layouts is not None
        self.input_kwarg_layouts = input_kwarg_layouts or {}
        self.desired_input_kwarg_layouts = desired_input_kwarg_layouts or {}
        if self.with_kwargs and \
                len(self.input_kwarg_layouts) != len(self.desired_input_kwarg_layouts):
            raise AssertionError("input_kwarg_layouts and desired_input_kwarg_layouts should "
                                 "have same length!")

    def _prepare_input_arg(self, input, mesh, input_layout, desired_layout):
        if input_layout is None:
            return input
        if isinstance(input, DTensor):
            dt_inp = input
        else:
            if not isinstance(input, ember.Tensor):
                raise AssertionError("expecting input to be a torch.Tensor!")
            dt_inp = DTensor.from_local(input, mesh, (input_layout,), run_check=False)
        if desired_layout is not None and input_layout != desired_layout:
            dt_inp = dt_inp.redistribute(placements=(desired_layout,))
        return dt_inp.to_local() if self.use_local_output else dt_inp

    def _prepare_input_fn(self, inputs, device_mesh):
        if self.input_layouts is None:
            return inputs
        if not isinstance(inputs, tuple):
            inputs = (inputs,)
        if len(inputs) != len(self.input_layouts):
            raise ValueError("module inputs and input_layouts should have same length!")
        if self.desired_input_layouts is None:
            raise AssertionError("desired module inputs should not be None!")
        return tuple(self._prepare_input_arg(inp, device_mesh, layout, desired)
                     for inp, layout, desired in zip(inputs, self.input_layouts,
                                                     self.desired_input_layouts))

    def _prepare_input_kwarg_fn(self, inputs, kwarg_inputs, device_mesh):
        prepared_args = self._prepare_input_fn(inputs, device_mesh)
        prepared_kwargs = {key: self._prepare_input_arg(
            value, device_mesh, self.input_kwarg_layouts.get(key),
            self.desired_input_kwarg_layouts.get(key)) for key, value in kwarg_inputs.items()}
        return prepared_args, prepared_kwargs

    def _apply(self, module, device_mesh):
        if self.with_kwargs:
            module.register_forward_pre_hook(
                lambda _, inputs, kwargs: self._prepare_input_kwarg_fn(inputs, kwargs,
                                                                       device_mesh),
                with_kwargs=True)
        else:
            module.register_forward_pre_hook(
                lambda _, inputs: self._prepare_input_fn(inputs, device_mesh))
        return module

    def __repr__(self):
        return (f"{type(self).__name__}(input_layouts={self.input_layouts}, "
                f"desired_input_layouts={self.desired_input_layouts}, "
                f"input_kwarg_layouts={self.input_kwarg_layouts}, "
                f"desired_input_kwarg_layouts={self.desired_input_kwarg_layouts}, "
                f"use_local_output={self.use_local_output})")


class PrepareModuleOutput(ParallelStyle):
    """Turn a module's outputs (``None`` in ``output_layouts`` leaves one alone) into DTensors
    of ``output_layouts`` and redistribute them to ``desired_output_layouts`` (local tensors if
    ``use_local_output``)."""

    def __init__(self, *, output_layouts, desired_output_layouts, use_local_output=True):
        self.output_layouts = _as_tuple(output_layouts)
        self.desired_output_layouts = _as_tuple(desired_output_layouts)
        self.use_local_output = use_local_output
        if len(self.output_layouts) != len(self.desired_output_layouts):
            raise AssertionError("output_layouts and desired_output_layouts should have same "
                                 "length!")

    def _prepare_out_fn(self, outputs, device_mesh):
        if not isinstance(outputs, tuple):
            outputs = (outputs,)
        if len(outputs) != len(self.output_layouts):
            raise ValueError("module outputs and output_layouts should have same length!")
        prepared = []
        for out, layout, desired in zip(outputs, self.output_layouts,
                                        self.desired_output_layouts):
            if layout is None:
                prepared.append(out)
                continue
            dt_out = out if isinstance(out, DTensor) else \
                DTensor.from_local(out, device_mesh, (layout,), run_check=False)
            if layout != desired:
                dt_out = dt_out.redistribute(placements=(desired,))
            prepared.append(dt_out.to_local() if self.use_local_output else dt_out)
        return prepared[0] if len(prepared) == 1 else tuple(prepared)

    def _apply(self, module, device_mesh):
        module.register_forward_hook(
            lambda _, inputs, outputs: self._prepare_out_fn(outputs, device_mesh))
        return module

    def __repr__(self):
        return (f"{type(self).__name__}(output_layouts={self.output_layouts}, "
                f"desired_output_layouts={self.desired_output_layouts}, "
                f"use_local_output={self.use_local_output})")


class PrepareModuleInputOutput(ParallelStyle):
    """``PrepareModuleInput`` (its ``use_local_output`` named ``use_local_input`` here) and
    ``PrepareModuleOutput`` on one module."""

    def __init__(self, *, input_layouts=None, desired_input_layouts=None,
                 input_kwarg_layouts=None, desired_input_kwarg_layouts=None,
                 use_local_input=False, output_layouts, desired_output_layouts,
                 use_local_output=True):
        self.prepare_module_input = PrepareModuleInput(
            input_layouts=input_layouts, desired_input_layouts=desired_input_layouts,
            input_kwarg_layouts=input_kwarg_layouts,
            desired_input_kwarg_layouts=desired_input_kwarg_layouts,
            use_local_output=use_local_input)
        self.prepare_module_output = PrepareModuleOutput(
            output_layouts=output_layouts, desired_output_layouts=desired_output_layouts,
            use_local_output=use_local_output)

    def _apply(self, module, device_mesh):
        self.prepare_module_input._apply(module, device_mesh)
        self.prepare_module_output._apply(module, device_mesh)
        return module

    def __repr__(self):
        i, o = self.prepare_module_input, self.prepare_module_output
        return (f"{type(self).__name__}(input_layouts={i.input_layouts}, "
                f"desired_input_layouts={i.desired_input_layouts}, "
                f"input_kwarg_layouts={i.input_kwarg_layouts}, "
                f"desired_input_kwarg_layouts={i.desired_input_kwarg_layouts}, "
                f"use_local_input={i.use_local_output}, output_layouts={o.output_layouts}, "
                f"desired_output_layouts={o.desired_output_layouts}, "
                f"use_local_output={o.use_local_output})")
