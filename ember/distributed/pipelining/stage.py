"""One pipeline stage (PyTorch's ``torch.distributed.pipelining.stage``): a submodule run on
this rank on one microbatch at a time. It receives its inputs from the previous stage into
buffers allocated from metadata, sends its outputs to the next stage, and in backward receives
its outputs' gradients and sends its inputs' gradients back. The schedules decide the order;
the stage gives them the point-to-point operations (``dist.P2POp``) of each microbatch.

The metadata comes from the user's example tensors (``input_args``/``output_args``, static) or
is inferred before the first step by running the first microbatch through every stage in turn
(dynamic), as in PyTorch."""
import logging
import warnings

import ember
import ember.distributed as dist

from ._backward import _autograd_grad_for_inputs, stage_backward
from ._utils import (InferenceMode, PipeliningMetadataError, _derive_grad_metas,
                     _make_tensor_from_meta, _StageBackwardMeta, _StageForwardMeta, _StageMeta,
                     extract_tensor_meta, extract_tensor_metas, flatten_args, map_debug_info,
                     validate_and_normalize_to_tuple, validate_tensors_metadata)

__all__ = ["PipelineStage"]

logger = logging.getLogger(__name__)


def _normalize_model_output_as_tuple(output):
    """A stage's output as a tuple: its elements pair with the activations sent on."""
    if type(output) is list:
        output = tuple(output)
    return output if type(output) is tuple else (output,)


class _RecvInfo:
    """One input of a stage: received from ``source`` into ``buffer``, or a root argument of
    the first stage (given by the user, nothing to receive)."""

    def __init__(self, input_name, source, buffer, tensor_meta, *, is_root_arg=False):
        self.input_name = input_name
        self.source = source
        self.buffer = buffer
        self.tensor_meta = tensor_meta
        self.is_root_arg = is_root_arg

    def __repr__(self):
        if self.is_root_arg:
            return f"_RecvInfo(input={self.input_name}, root_arg=True)"
        meta_type = type(self.tensor_meta).__name__ if self.tensor_meta else "None"
        shape = self.buffer.size() if self.buffer is not None else "None"
        return (f"_RecvInfo(input={self.input_name}, source={self.source}, shape={shape}, "
                f"meta={meta_type})")


class _PipelineStageBase:
    """The run-time half of a stage: forward and backward of one microbatch, and the sends and
    receives around them. ``PipelineStage`` adds where the metadata comes from."""

    def __init__(self, submodule, stage_index, num_stages, device, group=None):
        if stage_index >= num_stages:
            raise ValueError(f"Stage index {stage_index} is out of range of {num_stages}")
        self.submod = submodule
        self.stage_index = stage_index
        self.num_stages = num_stages
        self.device = device
        self.group = group
        self.group_rank = dist.get_rank(self.group)
        self.group_size = dist.get_world_size(self.group)
        if self.group_size > self.num_stages:
            raise RuntimeError(f"Pipeline group size {self.group_size} cannot be larger than "
                               f"number of stages {self.num_stages}")
        # per microbatch: (output tuple, flat inputs) kept for backward, and input gradients
        # waiting to be sent
        self.fwd_cache = {}
        self.bwd_cache = {}
        # the last stage's outputs, merged by the schedule into step()'s return value
        self.output_chunks = []
        self.has_backward = False
        self.log_prefix = f"[Stage {self.stage_index}]"
        self.args_recv_info = {}
        self.act_send_info = {}
        self.grad_recv_info = {}
        self.grad_send_info = None
        self.chunks = None
        # stages go round-robin over the ranks (stage i on rank i % size), as in PyTorch
        self.stage_index_to_group_rank = {i: i % self.group_size for i in range(num_stages)}
        self._runtime_validate = dist.get_debug_level() == dist.DebugLevel.DETAIL
        self._stage_meta = _StageMeta()

    @property
    def is_first(self):
        """Whether this is the pipeline's first stage."""
        return self.stage_index == 0

    @property
    def is_last(self):
        """Whether this is the pipeline's last stage."""
        return self.stage_index == self.num_stages - 1

    def _validate_stage_tensors(self, desc, expected, actual):
        if expected is None:
            raise PipeliningMetadataError(f"{desc}: no metadata available")
        validate_tensors_metadata(desc, expected, actual)

    def _check_chunk_id(self, chunk_id):
        if self.chunks is None:
            raise RuntimeError("Attempted to access chunk_id before chunks have been "
                               "configured.")
        if chunk_id >= self.chunks:
            raise RuntimeError(f"Chunk id {chunk_id} is out of range [0, {self.chunks})")

    def _resolve_peer_global_rank(self, stage_idx):
        return dist.get_global_rank(self.group or dist.distributed_c10d._get_default_group(),
                                    self.stage_index_to_group_rank[stage_idx])

    def _get_recv_ops(self, recv_infos):
        ops = []
        for info in recv_infos:
            # root args and gradients that are None have nothing to receive
            if info.is_root_arg or info.buffer is None:
                continue
            ops.append(dist.P2POp(dist.irecv, info.buffer,
                                  self._resolve_peer_global_rank(info.source), self.group))
        return ops

    def get_fwd_recv_ops(self, fwd_chunk_id):
        """The receives of this stage's inputs for microbatch ``fwd_chunk_id``."""
        return self._get_recv_ops(self.args_recv_info[fwd_chunk_id])

    def get_bwd_recv_ops(self, bwd_chunk_id):
        """The receives of this stage's output gradients for microbatch ``bwd_chunk_id``."""
        if not self.has_backward or self.is_last:
            return []
        return self._get_recv_ops(self.grad_recv_info[bwd_chunk_id])

    def get_fwd_send_ops(self, fwd_chunk_id):
        """The sends of this stage's outputs of microbatch ``fwd_chunk_id``."""
        output_tuple, _ = self.fwd_cache[fwd_chunk_id]
        ops = []
        for idx, out in enumerate(output_tuple):
            for dst in self.act_send_info[idx]:
                if dst is None:
                    continue
                ops.append(dist.P2POp(dist.isend, out.detach(),
                                      self._resolve_peer_global_rank(dst), self.group))
        return ops

    def _get_grad_send_meta(self, input_idx):
        input_grads = self._stage_meta.input_grads
        if input_grads is not None and input_idx < len(input_grads):
            return input_grads[input_idx]
        inputs = self._stage_meta.inputs
        if inputs is not None and input_idx < len(inputs) and inputs[input_idx] is not None:
            return _derive_grad_metas((inputs[input_idx],))[0]
        raise PipeliningMetadataError(
            f"Stage {self.stage_index}: backward produced gradient for input {input_idx}, but "
            f"no metadata is available for the gradient send.")

    def get_bwd_send_ops(self, bwd_chunk_id):
        """The sends of this stage's input gradients of microbatch ``bwd_chunk_id``; an input
        whose gradient is None but which the previous stage expects gets zeros."""
        if not self.has_backward or self.is_first:
            return []
        self._check_chunk_id(bwd_chunk_id)
        if self.grad_send_info is None:
            # each received input sends its gradient back to where it came from
            self.grad_send_info = [None if a.is_root_arg else a.source
                                   for a in self.args_recv_info[0]]
        ops = []
        grads_input = self.bwd_cache.pop(bwd_chunk_id)
        for idx, (grad, dst) in enumerate(zip(grads_input, self.grad_send_info, strict=True)):
            if dst is None:
                if grad is not None:
                    raise PipeliningMetadataError(
                        f"[{self.stage_index}] for chunk {bwd_chunk_id} has gradient {grad} but "
                        f"no stage to send it to")
                continue
            meta = self._get_grad_send_meta(idx)
            if meta is None:
                # the previous stage allocated no buffer: its output takes no gradient
                if grad is not None:
                    raise PipeliningMetadataError(
                        f"Stage {self.stage_index} chunk {bwd_chunk_id} input {idx}: backward "
                        f"produced a {type(grad).__name__} gradient, but backward metadata for "
                        f"this grad slot is None, so the previous stage did not allocate a recv "
                        f"buffer. DTensor grad metadata cannot be derived from forward DTensor "
                        f"metadata because gradient placements may differ from activation "
                        f"placements. Provide static input_grads metadata or run metadata "
                        f"inference with a microbatch that produces this grad.")
                continue
            if grad is None:
                grad = _make_tensor_from_meta(meta, self.device).zero_()
            ops.append(dist.P2POp(dist.isend, grad, self._resolve_peer_global_rank(dst),
                                  self.group))
        return ops

    def clear_runtime_states(self):
        """Forget the last step's microbatches (called at the start of every step)."""
        self.fwd_cache.clear()
        self.output_chunks.clear()
        # autograd accumulates into the receive buffers (leaves): a new step starts from None
        for recv_tuple in self.args_recv_info.values():
            for a in recv_tuple:
                if not a.is_root_arg and a.buffer is not None:
                    a.buffer.grad = None

    def _retrieve_recv_activations(self, fwd_chunk_id):
        activations = []
        for i, info in enumerate(self.args_recv_info[fwd_chunk_id]):
            if info.is_root_arg:
                raise PipeliningMetadataError(
                    f"_retrieve_recv_activations expected non-root _RecvInfo but got root arg "
                    f"at index {i}")
            if info.buffer is None or info.tensor_meta is None:
                raise PipeliningMetadataError(
                    f"Non-root arg '{info.input_name}' has None buffer or tensor_meta")
            # the metadata says what the previous stage produced; whether this step runs
            # backward decides whether the buffer takes a gradient
            requires_grad = (info.tensor_meta.requires_grad and self.has_backward
                             and ember.is_grad_enabled())
            activation = info.buffer.requires_grad_(requires_grad)
            if requires_grad and not activation.is_leaf:
                warnings.warn(f"Stage {self.stage_index}: activation '{info.input_name}' is not "
                              f"a leaf (grad_fn={activation.grad_fn}); using retain_grad() as "
                              f"fallback", stacklevel=2)
                activation.retain_grad()
            activations.append(activation)
        return tuple(activations)

    def _retrieve_recv_grads(self, bwd_chunk_id):
        grads = []
        for i, info in enumerate(self.grad_recv_info[bwd_chunk_id]):
            if info.is_root_arg:
                raise PipeliningMetadataError(
                    f"grad_recv_info should not contain root args, but found one at index {i}")
            if info.buffer is None:
                if info.tensor_meta is not None:
                    raise PipeliningMetadataError(
                        f"Grad recv '{info.input_name}': buffer is None but tensor_meta is not "
                        f"None")
                grads.append(None)
                continue
            if info.tensor_meta is None:
                raise PipeliningMetadataError(
                    f"Grad recv '{info.input_name}': buffer is not None but tensor_meta is None")
            grads.append(info.buffer)
        return tuple(grads)

    def scale_grads(self, grad_scale_factor):
        """Divide the submodule's gradients by ``grad_scale_factor`` (the number of
        microbatches for a mean loss, 1 for a sum), once per step after every backward."""
        if grad_scale_factor != 1:
            for p in self.submod.parameters():
                if p.grad is not None:
                    p.grad.div_(grad_scale_factor)

    def forward_one_chunk(self, fwd_chunk_id, args, kwargs=None, save_forward_output=True):
        """Run the submodule on microbatch ``fwd_chunk_id``: ``args`` on the first stage, the
        received activations on the others; ``kwargs`` on every stage."""
        composite_args = args if self.is_first else self._retrieve_recv_activations(fwd_chunk_id)
        composite_kwargs = kwargs or {}
        if self._runtime_validate:
            self._validate_stage_tensors(f"Stage {self.stage_index} forward inputs",
                                         self._stage_meta.inputs, composite_args)
        try:
            output = self.submod(*composite_args, **composite_kwargs)
        except Exception as e:
            raise RuntimeError(f"""
            {self.log_prefix} failed to run forward:
            args: {map_debug_info(composite_args)}
            kwargs: {map_debug_info(composite_kwargs)}
            """) from e
        output_tuple = _normalize_model_output_as_tuple(output)
        if self.is_last and save_forward_output:
            self.output_chunks.append(output)
        self.fwd_cache[fwd_chunk_id] = (
            output_tuple, flatten_args(composite_args) + flatten_args(composite_kwargs))
        logger.debug("%s Forwarded chunk %s, outputs: %s", self.log_prefix, fwd_chunk_id,
                     map_debug_info(output))
        if self._runtime_validate and not self.is_last:
            self._validate_stage_tensors(f"Stage {self.stage_index} forward outputs",
                                         self._stage_meta.outputs, output_tuple)
        return output

    def backward_one_chunk(self, bwd_chunk_id, loss=None, last_backward=False):
        """Backward of microbatch ``bwd_chunk_id``: from ``loss`` on the last stage, from the
        received output gradients elsewhere. The input gradients wait in ``bwd_cache`` for
        ``get_bwd_send_ops``. (``last_backward`` is the schedule's signal for data-parallel
        wrappers, which ember's pipelining does not compose with.)"""
        if not self.has_backward:
            return
        self._check_chunk_id(bwd_chunk_id)
        stage_output, input_values = self.fwd_cache.pop(bwd_chunk_id)
        if self.is_last:
            grads_input = stage_backward(loss, None, input_values)
        else:
            grads_output = self._retrieve_recv_grads(bwd_chunk_id)
            if self._runtime_validate:
                self._validate_stage_tensors(
                    f"Stage {self.stage_index} backward input (output_grads)",
                    self._stage_meta.output_grads, grads_output)
            grads_input = stage_backward(stage_output, grads_output, input_values)
        # keyword inputs are local to each stage: only the positional inputs' gradients go back
        num_fwd_args = len(self._stage_meta.inputs)
        if self._runtime_validate and not self.is_first:
            self._validate_stage_tensors(
                f"Stage {self.stage_index} backward output (input_grads)",
                self._stage_meta.input_grads, grads_input[:num_fwd_args])
        self.bwd_cache[bwd_chunk_id] = grads_input[:num_fwd_args]
        if self.is_last and not self.is_first:
            # the outputs only remain to be returned to the user: free their graph now
            for t in stage_output:
                if not t._is_view():
                    t.detach_()
        logger.debug("%s Backwarded chunk %s", self.log_prefix, bwd_chunk_id)

    def perform_reduce_grad(self, grad_scale_factor):
        """The end of a step's backward: scale the gradients."""
        if grad_scale_factor != 1:
            self.scale_grads(grad_scale_factor)

    def _setup_backward_recv_info(self, num_microbatches):
        self.chunks = num_microbatches
        for mb_index in range(num_microbatches):
            self.grad_recv_info[mb_index] = self._create_grad_recv_info(self.act_send_info)


class PipelineStage(_PipelineStageBase):
    """A pipeline stage built by hand from the submodule this rank runs.

    Args:
        submodule: the ``nn.Module`` of this stage.
        stage_index: zero-based stage ID.
        num_stages: the pipeline's number of stages.
        device: the device this stage runs on.
        input_args, output_args: example inputs and outputs (a tensor or a tuple). With both
            given on every stage the shapes are taken from them (static); otherwise they are
            inferred from the first microbatch (dynamic) and the examples are checked against
            the result (a warning on a mismatch).
        output_grads, input_grads: example gradients (optional).
        group: the process group of the pipeline (default: the world).
    """

    def __init__(self, submodule, stage_index, num_stages, device, input_args=None,
                 output_args=None, output_grads=None, input_grads=None, group=None):
        super().__init__(submodule, stage_index, num_stages, device, group)
        self._inference_mode = None
        self._fwd_outputs_for_bwd_meta = None
        self._fwd_inputs_for_bwd_meta = None
        self._fwd_kwargs_tensors_for_bwd_meta = None
        self._user_meta = _StageMeta(
            inputs=extract_tensor_metas(validate_and_normalize_to_tuple(input_args)),
            outputs=extract_tensor_metas(validate_and_normalize_to_tuple(output_args)),
            input_grads=extract_tensor_metas(
                validate_and_normalize_to_tuple(input_grads, allow_none=True), allow_none=True),
            output_grads=extract_tensor_metas(
                validate_and_normalize_to_tuple(output_grads, allow_none=True),
                allow_none=True))

    def _recv_meta(self, src_stage):
        objects = [None]
        dist.recv_object_list(objects, src=self._resolve_peer_global_rank(src_stage),
                              group=self.group, device=self.device, use_batch=True)
        return objects[0]

    def _send_meta(self, meta, dst_stage):
        dist.send_object_list([meta], dst=self._resolve_peer_global_rank(dst_stage),
                              group=self.group, device=self.device, use_batch=True)

    def _is_same_rank(self, other_stage):
        return self.stage_index_to_group_rank[other_stage] == self.group_rank

    def _warmup_forward_vote(self, has_backward, received_acc=None):
        """First half of the vote on the inference mode, stage 0 to N-1: the product of every
        stage's vote (1 for static) so far."""
        vote = ember.tensor(
            [0 if InferenceMode.needs_dynamic(self._user_meta, has_backward) else 1],
            dtype=ember.int32, device=self.device)
        if self.is_first:
            acc = vote
        elif self._is_same_rank(self.stage_index - 1):
            acc = received_acc * vote
        else:
            acc = ember.zeros(1, dtype=ember.int32, device=self.device)
            dist.recv(acc, src=self._resolve_peer_global_rank(self.stage_index - 1),
                      group=self.group)
            acc = acc * vote
        if not self.is_last and not self._is_same_rank(self.stage_index + 1):
            dist.send(acc, dst=self._resolve_peer_global_rank(self.stage_index + 1),
                      group=self.group)
        return acc

    def _warmup_backward_result(self, received_result=None):
        """Second half, stage N-1 to 0: every stage learns the last stage's product."""
        if self.is_last or self._is_same_rank(self.stage_index + 1):
            result = received_result
        else:
            result = ember.zeros(1, dtype=ember.int32, device=self.device)
            dist.recv(result, src=self._resolve_peer_global_rank(self.stage_index + 1),
                      group=self.group)
        if not self.is_first and not self._is_same_rank(self.stage_index - 1):
            dist.send(result, dst=self._resolve_peer_global_rank(self.stage_index - 1),
                      group=self.group)
        return result

    def _to_tensor(self, arg):
        """A fresh leaf for inference: a detached copy of a tensor, or a buffer from metadata."""
        if isinstance(arg, ember.Tensor):
            return arg.detach().requires_grad_(arg.requires_grad)
        return arg.to_tensor(self.device)

    def _forward_metadata_inference(self, args, kwargs=None, has_backward=False):
        """Run the submodule on the first microbatch (stage 0) or on buffers made from the
        previous stage's output metadata, and pass this stage's output metadata on."""
        kwargs = kwargs or {}
        if self.is_first:
            if args is None or isinstance(args, _StageForwardMeta):
                raise PipeliningMetadataError(
                    f"Stage {self.stage_index}: First stage requires real tensors, got "
                    f"{type(args).__name__}.")
            tensor_args = validate_and_normalize_to_tuple(args)
            self._stage_meta.inputs = extract_tensor_metas(tensor_args)
            inference_args = tuple(self._to_tensor(a) for a in tensor_args)
        else:
            meta = (args if self._is_same_rank(self.stage_index - 1)
                    else self._recv_meta(self.stage_index - 1))
            if not isinstance(meta, _StageForwardMeta):
                raise PipeliningMetadataError(
                    f"Stage {self.stage_index}: Expected _StageForwardMeta, got "
                    f"{type(meta).__name__}.")
            self._stage_meta.inputs = meta.forward_metas
            inference_args = tuple(self._to_tensor(m) for m in meta.forward_metas)
        inference_kwargs = {k: self._to_tensor(v) if isinstance(v, ember.Tensor) else v
                            for k, v in kwargs.items()}
        # the inference graph is this function's own: grad on only when backward follows
        with ember.enable_grad() if has_backward else ember.no_grad():
            outputs = self.submod(*inference_args, **inference_kwargs)
        outputs = validate_and_normalize_to_tuple(outputs)
        self._stage_meta.outputs = extract_tensor_metas(outputs)
        self._fwd_outputs_for_bwd_meta = outputs
        self._fwd_inputs_for_bwd_meta = inference_args
        self._fwd_kwargs_tensors_for_bwd_meta = tuple(
            v for v in flatten_args(inference_kwargs) if isinstance(v, ember.Tensor))
        fwd_meta = _StageForwardMeta(forward_metas=self._stage_meta.outputs)
        if self.is_last or self._is_same_rank(self.stage_index + 1):
            return fwd_meta
        self._send_meta(fwd_meta, self.stage_index + 1)
        return None

    def _backward_metadata_inference(self, loss_fn=None, target=None, received_grad_meta=None,
                                     loss_kwargs=None):
        """Backward of the inference forward (from the loss on the last stage, from ones shaped
        like the next stage's gradient metadata elsewhere): the input gradients' metadata,
        passed to the previous stage."""
        fwd_outputs = self._fwd_outputs_for_bwd_meta
        fwd_inputs = self._fwd_inputs_for_bwd_meta
        if fwd_outputs is None or fwd_inputs is None:
            raise PipeliningMetadataError("Backward metadata inference requires forward "
                                          "metadata inference to run first")
        all_fwd_inputs = list(fwd_inputs) + list(self._fwd_kwargs_tensors_for_bwd_meta or ())
        self._fwd_outputs_for_bwd_meta = self._fwd_inputs_for_bwd_meta = None
        self._fwd_kwargs_tensors_for_bwd_meta = None
        if self.is_last:
            if loss_fn is None or target is None:
                raise PipeliningMetadataError(
                    f"Stage {self.stage_index}: loss_fn and target required for last stage")
            loss = loss_fn(fwd_outputs[0] if len(fwd_outputs) == 1 else fwd_outputs,
                           self._to_tensor(target), **(loss_kwargs or {}))
            self._stage_meta.output_grads = None
            all_input_grads = _autograd_grad_for_inputs([loss], all_fwd_inputs,
                                                        allow_unused=True)
        else:
            meta = (received_grad_meta if self._is_same_rank(self.stage_index + 1)
                    else self._recv_meta(self.stage_index + 1))
            if not isinstance(meta, _StageBackwardMeta):
                raise PipeliningMetadataError(
                    f"Stage {self.stage_index}: Expected _StageBackwardMeta, got "
                    f"{type(meta).__name__}.")
            self._stage_meta.output_grads = meta.backward_metas
            outputs, grad_outputs = [], []
            for idx, (out, grad_meta) in enumerate(zip(fwd_outputs, meta.backward_metas,
                                                       strict=True)):
                if not out.requires_grad:
                    if grad_meta is not None:
                        raise PipeliningMetadataError(
                            f"Stage {self.stage_index}: output {idx} requires_grad=False, but "
                            f"output_grads metadata is provided: {grad_meta}.")
                    continue
                outputs.append(out)
                grad_outputs.append(ember.ones(grad_meta.shape, dtype=grad_meta.dtype,
                                               device=self.device) if grad_meta else None)
            all_input_grads = (
                _autograd_grad_for_inputs(outputs, all_fwd_inputs, grad_outputs,
                                          allow_unused=True) if outputs
                else tuple(None for _ in all_fwd_inputs))
        metas = []
        for i, g in enumerate(all_input_grads[:len(fwd_inputs)]):
            if isinstance(g, ember.Tensor):
                metas.append(extract_tensor_meta(g))
            elif fwd_inputs[i].requires_grad:
                metas.append(_derive_grad_metas((extract_tensor_meta(fwd_inputs[i]),))[0])
            else:
                metas.append(None)
        self._stage_meta.input_grads = tuple(metas)
        bwd_meta = _StageBackwardMeta(backward_metas=self._stage_meta.input_grads)
        if self.is_first or self._is_same_rank(self.stage_index - 1):
            return bwd_meta
        self._send_meta(bwd_meta, self.stage_index - 1)
        return None

    def _post_metadata_inference_cleanup(self):
        # the inference graph and activations go; the inference backward used autograd.grad,
        # so no parameter gradient was touched
        self._fwd_outputs_for_bwd_meta = None
        self._fwd_inputs_for_bwd_meta = None
        self._fwd_kwargs_tensors_for_bwd_meta = None

    def _validate_inferred_metadata(self):
        """Warn where the user's example tensors disagree with what inference found."""
        for user, inferred, label in (
                (self._user_meta.inputs, self._stage_meta.inputs, "input"),
                (self._user_meta.outputs, self._stage_meta.outputs, "output"),
                (self._user_meta.input_grads, self._stage_meta.input_grads, "input_grad"),
                (self._user_meta.output_grads, self._stage_meta.output_grads, "output_grad")):
            if user and inferred:
                validate_tensors_metadata(f"Stage {self.stage_index} {label}", user, inferred,
                                          raise_on_mismatch=False, warn_on_mismatch=True)

    def _prepare_forward_infra(self, num_microbatches, args, kwargs=None, has_backward=False):
        """The forward metadata (inferred or given) and the receive buffers of every
        microbatch; returns the metadata for a next stage on this rank."""
        if self._inference_mode is None:
            raise PipeliningMetadataError(f"Stage {self.stage_index}: inference mode not set. "
                                          f"Run warmup vote protocol first.")
        fwd_meta = None
        if self._inference_mode == InferenceMode.DYNAMIC:
            fwd_meta = self._forward_metadata_inference(args, kwargs, has_backward)
            self._validate_inferred_metadata()
        else:
            self._stage_meta.inputs = self._user_meta.inputs
            self._stage_meta.outputs = self._user_meta.outputs
        for chunk_id in range(num_microbatches):
            if self.is_first:
                self.args_recv_info[chunk_id] = tuple(
                    _RecvInfo(f"root_input_{idx}", None, None, meta, is_root_arg=True)
                    for idx, meta in enumerate(self._stage_meta.inputs))
            else:
                self.args_recv_info[chunk_id] = tuple(
                    _RecvInfo(f"recv_for_{self.stage_index}_from_{self.stage_index - 1}",
                              self.stage_index - 1, _make_tensor_from_meta(meta, self.device),
                              meta)
                    for meta in self._stage_meta.inputs)
        self.act_send_info = {idx: [] if self.is_last else [self.stage_index + 1]
                              for idx in range(len(self._stage_meta.outputs))}
        return fwd_meta

    def _prepare_backward_infra(self, num_microbatches, loss_fn=None, target=None,
                                received_grad_meta=None, loss_kwargs=None):
        """The gradient metadata (inferred, given, or derived from the forward's) and the
        gradient receive buffers; returns the metadata for a previous stage on this rank."""
        grad_meta = None
        if self._inference_mode == InferenceMode.DYNAMIC:
            grad_meta = self._backward_metadata_inference(loss_fn, target, received_grad_meta,
                                                          loss_kwargs)
            self._validate_inferred_metadata()
        else:
            meta = self._stage_meta
            meta.input_grads = self._user_meta.input_grads
            meta.output_grads = self._user_meta.output_grads
            if meta.output_grads is None:
                meta.output_grads = _derive_grad_metas(meta.outputs)
            if meta.input_grads is None:
                meta.input_grads = _derive_grad_metas(meta.inputs)
        self._setup_backward_recv_info(num_microbatches)
        return grad_meta

    def _create_grad_recv_info(self, act_send_info):
        if self.is_last:
            return ()
        output_grads = self._stage_meta.output_grads
        if output_grads is None:
            raise PipeliningMetadataError(
                f"Stage {self.stage_index}: output_grads metadata is required for creating "
                f"grad recv info. Ensure backward metadata is populated.")
        infos = []
        for idx, dst_list in act_send_info.items():
            src = dst_list[0]
            meta = output_grads[idx]
            infos.append(_RecvInfo(
                f"recv_grad_for_{self.stage_index}_from_{src}", src,
                _make_tensor_from_meta(meta, self.device) if meta else None, meta))
        return tuple(infos)

