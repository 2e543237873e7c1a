"""Pipeline schedules (PyTorch's ``torch.distributed.pipelining.schedules``): the order in
which a rank's stage runs the forwards and backwards of a batch's microbatches, and the sends
and receives between them. ``step(*args, target=..., losses=[...])`` splits the batch (first
stage) and the target (last stage) into microbatches, runs them, fills ``losses`` with the
last stage's per-microbatch losses, and leaves the parameters' gradients accumulated over the
microbatches and divided by their number (``scale_grads=True``, for a mean loss).

Here: the single-stage schedules GPipe (all forwards, then all backwards) and 1F1B (after a
warmup, one forward then one backward), the forward-only schedule, and Interleaved 1F1B and
Looped BFS (several stages per rank, stage i on rank i % world size), whose per-rank orders of
actions run in lockstep: at each time step a rank does its action and exchanges with its
neighbours what their actions at that step send or expect (PyTorch's
``PipelineScheduleMulti`` runtime; PyTorch 2.13 runs these from the same orders with explicit
send/recv actions)."""
import enum
import logging
from collections import Counter, defaultdict
from typing import NamedTuple

import ember
import ember.distributed as dist

from .microbatch import TensorChunkSpec, _split_tensor, merge_chunks, split_args_kwargs_into_chunks
from ._utils import InferenceMode
from .stage import PipelineStage

__all__ = ["get_schedule_class", "PipelineScheduleSingle", "PipelineScheduleMulti",
           "Schedule1F1B", "ScheduleGPipe", "ScheduleInterleaved1F1B", "ScheduleLoopedBFS"]

logger = logging.getLogger(__name__)

# targets are split along the batch dim
_TARGET_CHUNK_SPEC = TensorChunkSpec(0)


class _ComputationType(str, enum.Enum):
    FORWARD = "F"
    FULL_BACKWARD = "B"


FORWARD = _ComputationType.FORWARD
FULL_BACKWARD = _ComputationType.FULL_BACKWARD


class _Action(NamedTuple):
    """One step of a rank's schedule: ``stage_index`` runs ``computation_type`` on a
    microbatch; written ``2F0`` (stage 2, forward, microbatch 0) as in PyTorch."""

    stage_index: int
    computation_type: _ComputationType
    microbatch_index: int | None = None

    def __repr__(self):
        text = f"{self.stage_index}{self.computation_type.value}"
        return text if self.microbatch_index is None else text + str(self.microbatch_index)

    __str__ = __repr__


class _PipelineSchedule:
    """What every schedule shares: the microbatch split and merge, the losses, and the stages'
    one-time setup before the first step."""

    def __init__(self, n_microbatches, loss_fn=None, args_chunk_spec=None,
                 kwargs_chunk_spec=None, output_merge_spec=None, scale_grads=True):
        self._n_microbatches = n_microbatches
        self._loss_fn = loss_fn
        self.scale_grads = scale_grads
        self._args_chunk_spec = args_chunk_spec
        self._kwargs_chunk_spec = kwargs_chunk_spec
        self._output_merge_spec = output_merge_spec
        self._has_backward = self._loss_fn is not None
        self._internal_losses = []
        logger.info("Using %s", self.__class__.__name__)

    def _maybe_compute_loss(self, stage, output, target_mbs, mb_index, loss_kwargs=None):
        if stage.is_last and self._loss_fn is not None:
            self._internal_losses.append(
                self._compute_loss(output, target_mbs[mb_index], loss_kwargs))

    def _maybe_get_loss(self, stage, mb_index):
        valid_index = 0 <= mb_index < len(self._internal_losses)
        if stage.is_last and self._loss_fn is not None and valid_index:
            return self._internal_losses[mb_index]
        if len(self._internal_losses) != 0 and not valid_index:
            raise RuntimeError(f"Loss for microbatch {mb_index} is not available. Available "
                               f"losses for microbatches: {self._internal_losses}")
        return None

    def _update_losses(self, stages, losses):
        """Hand the step's losses to the caller's list (on the rank of the last stage)."""
        if not isinstance(stages, list):
            stages = [stages]
        if any(stage.is_last for stage in stages) and losses is not None:
            if len(self._internal_losses) != self._n_microbatches:
                raise RuntimeError(f"Expecting {self._n_microbatches} losses but got "
                                   f"{len(self._internal_losses)}")
            losses.clear()
            losses.extend(self._internal_losses)
        self._internal_losses.clear()

    def _warmup_p2p(self, stages, has_backward):
        """The stages' vote on static or dynamic metadata: static only when every stage of the
        pipeline was given its shapes."""
        acc = None
        for stage in stages:
            acc = stage._warmup_forward_vote(has_backward, received_acc=acc)
        result = acc
        for stage in reversed(stages):
            result = stage._warmup_backward_result(received_result=result)
            if result is None:
                raise RuntimeError("P2P warm-up voting failed")
            stage._inference_mode = (InferenceMode.STATIC if result.item() == 1
                                     else InferenceMode.DYNAMIC)

    def _initialize_pp_stages(self, stages, args, kwargs, target, fwd_initialized,
                              bwd_initialized, loss_kwargs=None):
        """Before the first step (and after a switch between training and eval): the vote,
        then the forward metadata from the first stage on and the backward metadata from the
        last stage back. Returns the new ``(fwd_initialized, bwd_initialized)``."""
        if not all(isinstance(stage, PipelineStage) for stage in stages):
            raise TypeError("ember's pipeline schedules run PipelineStage stages")
        if fwd_initialized and self._has_backward != bwd_initialized:
            # the receive buffers' requires_grad depends on whether backward runs
            fwd_initialized = bwd_initialized = False
        needs_fwd = not fwd_initialized
        needs_bwd = self._has_backward and not bwd_initialized
        if not needs_fwd and not needs_bwd:
            return fwd_initialized, bwd_initialized
        if needs_fwd:
            self._warmup_p2p(stages, self._has_backward)
        devices = list({ember.device(s.device) for s in stages
                        if ember.device(s.device).type != "cpu"})
        device_type = devices[0].type if devices else None
        if device_type is not None and not all(d.type == device_type for d in devices):
            raise AssertionError("All stages must have the same device type for RNG forking. "
                                 f"Found device types: {set(d.type for d in devices)}")
        # inference runs the model: it must not move the random streams training draws from
        with ember.random.fork_rng(devices=devices, device_type=device_type or "cuda"):
            if needs_fwd:
                next_args = None
                for stage in stages:
                    next_args = stage._prepare_forward_infra(
                        self._n_microbatches, args if stage.is_first else next_args, kwargs,
                        has_backward=self._has_backward)
                fwd_initialized = True
            if needs_bwd:
                grad_meta = None
                for stage in reversed(stages):
                    grad_meta = stage._prepare_backward_infra(
                        self._n_microbatches, loss_fn=self._loss_fn, target=target,
                        received_grad_meta=grad_meta, loss_kwargs=loss_kwargs)
                bwd_initialized = True
        for stage in stages:
            stage._post_metadata_inference_cleanup()
        return fwd_initialized, bwd_initialized

    def eval(self, *args, target=None, losses=None, **kwargs):
        """One forward-only pass of the whole batch (losses computed when a target is given)."""
        has_backward = self._has_backward
        try:
            self._has_backward = False
            return self.step(*args, target=target, losses=losses, **kwargs)
        finally:
            self._has_backward = has_backward

    def _check_inputs(self, arg_mbs=None, kwarg_mbs=None, target_mbs=None, losses=None):
        def check_type_and_len(mbs, name):
            if not isinstance(mbs, list):
                raise TypeError(f"{name} must be a list but got a {type(mbs)}")
            if len(mbs) != self._n_microbatches:
                raise ValueError(f"Expecting {self._n_microbatches} {name} but got {len(mbs)}")

        if arg_mbs is not None:
            check_type_and_len(arg_mbs, "arg_mbs")
        else:
            arg_mbs = [()] * self._n_microbatches
        if kwarg_mbs is not None:
            check_type_and_len(kwarg_mbs, "kwarg_mbs")
        else:
            kwarg_mbs = [{}] * self._n_microbatches
        if target_mbs is not None:
            check_type_and_len(target_mbs, "target_mbs")
        if losses is not None and not isinstance(losses, list):
            raise TypeError(f"losses must be a list but got a {type(losses)}")
        return arg_mbs, kwarg_mbs

    def _compute_loss(self, output, target, loss_kwargs=None):
        return self._loss_fn(output, target, **(loss_kwargs or {}))

    def _split_inputs(self, args, kwargs=None):
        if args or kwargs:
            return split_args_kwargs_into_chunks(args, kwargs, self._n_microbatches,
                                                 self._args_chunk_spec, self._kwargs_chunk_spec)
        # a middle or last stage is stepped without inputs
        return [()] * self._n_microbatches, [{}] * self._n_microbatches

    def _merge_outputs(self, output_chunks):
        return merge_chunks(output_chunks, self._output_merge_spec)


def _batch_p2p(p2p_ops, desc=None):
    """Start ``p2p_ops``: one by one when all are sends or all receives, through
    ``batch_isend_irecv`` when mixed."""
    if len(p2p_ops) == 0:
        return []
    logger.debug("batch_p2p %s%s", f"{desc}, " if desc else "", p2p_ops)
    if {p.op for p in p2p_ops} in ({dist.isend}, {dist.irecv}):
        return [p.op(p.tensor, p.peer, group=p.group, tag=p.tag) for p in p2p_ops]
    return dist.batch_isend_irecv(p2p_ops)


def _sorted_batch_p2p(p2p_ops, desc=None):
    """``_batch_p2p`` per peer, in the peers' order; the works by peer."""
    by_peer = defaultdict(list)
    for op in p2p_ops:
        by_peer[op.peer].append(op)
    return {peer: _batch_p2p(ops, desc=desc) for peer, ops in sorted(by_peer.items())}


def _wait_batch_p2p(work):
    for w in work:
        w.wait()


class PipelineScheduleSingle(_PipelineSchedule):
    """The base of schedules with one stage per rank; subclasses give ``_step_microbatches``.

    Gradients are divided by the number of microbatches when ``scale_grads`` (the default),
    which suits a loss_fn that averages; with a summing loss_fn, pass ``scale_grads=False``."""

    def __init__(self, stage, n_microbatches, loss_fn=None, args_chunk_spec=None,
                 kwargs_chunk_spec=None, output_merge_spec=None, scale_grads=True):
        super().__init__(n_microbatches=n_microbatches, loss_fn=loss_fn,
                         args_chunk_spec=args_chunk_spec, kwargs_chunk_spec=kwargs_chunk_spec,
                         output_merge_spec=output_merge_spec, scale_grads=scale_grads)
        self._stage = stage
        self._num_stages = stage.num_stages
        self._stage_forward_initialized = False
        self._stage_backward_initialized = False

    def _initialize_stage(self, args, kwargs, target=None, loss_kwargs=None):
        self._stage_forward_initialized, self._stage_backward_initialized = \
            self._initialize_pp_stages([self._stage], args, kwargs, target,
                                       self._stage_forward_initialized,
                                       self._stage_backward_initialized, loss_kwargs)

    def step(self, *args, target=None, losses=None, return_outputs=True, loss_kwargs=None,
             **kwargs):
        """One iteration over the whole batch ``args``/``kwargs`` (first stage) and ``target``
        (last stage); returns the merged outputs on the last stage, else None."""
        if self._has_backward and not ember.is_grad_enabled():
            raise RuntimeError(
                "step() requires gradients to be enabled for backward computation; it should "
                "not be used under torch.no_grad() context. Please call eval() instead.")
        self._stage.has_backward = self._has_backward
        self._stage.clear_runtime_states()
        args_split, kwargs_split = self._split_inputs(args, kwargs)
        targets_split = (list(_split_tensor(target, _TARGET_CHUNK_SPEC, self._n_microbatches))
                         if target is not None else None)
        self._step_microbatches(args_split, kwargs_split, targets_split, losses,
                                return_outputs, loss_kwargs=loss_kwargs)
        if self._stage.is_last and return_outputs:
            return self._merge_outputs(self._stage.output_chunks)
        return None

    def _forward(self, i, arg_mbs, kwarg_mbs, target_mbs, return_outputs, loss_kwargs):
        output = self._stage.forward_one_chunk(i, arg_mbs[i], kwarg_mbs[i],
                                               save_forward_output=return_outputs)
        self._maybe_compute_loss(self._stage, output, target_mbs, i, loss_kwargs)

    def _backward(self, i):
        self._stage.backward_one_chunk(i, loss=self._maybe_get_loss(self._stage, i),
                                       last_backward=i == self._n_microbatches - 1)


class _ScheduleForwardOnly(PipelineScheduleSingle):
    """Every microbatch's forward, nothing else."""

    def _step_microbatches(self, arg_mbs=None, kwarg_mbs=None, target_mbs=None, losses=None,
                           return_outputs=True, loss_kwargs=None):
        if target_mbs is not None or losses is not None:
            raise RuntimeError("Forward-only schedule does not support loss computation")
        arg_mbs, kwarg_mbs = self._check_inputs(arg_mbs, kwarg_mbs, target_mbs, losses)
        self._initialize_stage(arg_mbs[0], kwarg_mbs[0], None)
        sends = []
        for i in range(self._n_microbatches):
            for work in _sorted_batch_p2p(self._stage.get_fwd_recv_ops(i), "fwd_recv").values():
                _wait_batch_p2p(work)
            self._stage.forward_one_chunk(i, arg_mbs[i], kwarg_mbs[i])
            sends.extend(_sorted_batch_p2p(self._stage.get_fwd_send_ops(i), "fwd_send").values())
        for work in sends:
            _wait_batch_p2p(work)


class ScheduleGPipe(PipelineScheduleSingle):
    """GPipe: every microbatch's forward, then every microbatch's backward (fill, drain)."""

    def _step_microbatches(self, arg_mbs=None, kwarg_mbs=None, target_mbs=None, losses=None,
                           return_outputs=True, loss_kwargs=None):
        arg_mbs, kwarg_mbs = self._check_inputs(arg_mbs, kwarg_mbs, target_mbs, losses)
        self._initialize_stage(arg_mbs[0], kwarg_mbs[0],
                               target_mbs[0] if target_mbs is not None else None, loss_kwargs)
        # sends are waited for at the end of each phase: the next microbatch need not wait
        fwd_sends = []
        for i in range(self._n_microbatches):
            for work in _sorted_batch_p2p(self._stage.get_fwd_recv_ops(i), "fwd_recv").values():
                _wait_batch_p2p(work)
            self._forward(i, arg_mbs, kwarg_mbs, target_mbs, return_outputs, loss_kwargs)
            fwd_sends.extend(
                _sorted_batch_p2p(self._stage.get_fwd_send_ops(i), "fwd_send").values())
            logger.debug("[%s] Forwarded microbatch %s", self._stage.stage_index, i)
        for work in fwd_sends:
            _wait_batch_p2p(work)
        bwd_sends = []
        for i in range(self._n_microbatches):
            for work in _sorted_batch_p2p(self._stage.get_bwd_recv_ops(i), "bwd_recv").values():
                _wait_batch_p2p(work)
            self._backward(i)
            bwd_sends.extend(
                _sorted_batch_p2p(self._stage.get_bwd_send_ops(i), "bwd_send").values())
            logger.debug("[%s] Backwarded microbatch %s", self._stage.stage_index, i)
        for work in bwd_sends:
            _wait_batch_p2p(work)
        self._update_losses(self._stage, losses)
        self._stage.perform_reduce_grad(self._n_microbatches if self.scale_grads else 1)


class Schedule1F1B(PipelineScheduleSingle):
    """1F1B: stage i runs ``num_stages - i`` forwards, then alternates one backward and one
    forward, then the remaining backwards; a stage holds at most ``num_stages``
    microbatches' activations."""

    def __init__(self, stage, n_microbatches, loss_fn=None, args_chunk_spec=None,
                 kwargs_chunk_spec=None, output_merge_spec=None, scale_grads=True):
        super().__init__(stage=stage, n_microbatches=n_microbatches, loss_fn=loss_fn,
                         args_chunk_spec=args_chunk_spec, kwargs_chunk_spec=kwargs_chunk_spec,
                         output_merge_spec=output_merge_spec, scale_grads=scale_grads)
        if n_microbatches < self._num_stages:
            raise ValueError(f"Number of microbatches ({n_microbatches}) must be greater than "
                             f"or equal to the number of stages ({self._num_stages}).")

    def _step_microbatches(self, arg_mbs=None, kwarg_mbs=None, target_mbs=None, losses=None,
                           return_outputs=True, loss_kwargs=None):
        arg_mbs, kwarg_mbs = self._check_inputs(arg_mbs, kwarg_mbs, target_mbs, losses)
        self._initialize_stage(arg_mbs[0], kwarg_mbs[0],
                               target_mbs[0] if target_mbs is not None else None, loss_kwargs)
        stage = self._stage
        warmup_chunks = min(self._n_microbatches, self._num_stages - stage.stage_index)
        fwd_index = bwd_index = 0

        def forward():
            nonlocal fwd_index
            self._forward(fwd_index, arg_mbs, kwarg_mbs, target_mbs, return_outputs,
                          loss_kwargs)
            fwd_index += 1

        # warmup: forwards only; the last one's send goes out with the first backward's receive
        send_work, fwd_sends = [], []
        for _ in range(warmup_chunks):
            _wait_batch_p2p(_batch_p2p(stage.get_fwd_recv_ops(fwd_index), "fwd_recv"))
            forward()
            _wait_batch_p2p(send_work)
            fwd_sends = stage.get_fwd_send_ops(fwd_index - 1)
            if fwd_index != warmup_chunks:
                send_work = _batch_p2p(fwd_sends, "fwd_send")
        # steady state: one backward, one forward, each stage's sends fused with the next
        # receive
        while True:
            bwd_recvs = stage.get_bwd_recv_ops(bwd_index)
            _wait_batch_p2p(_batch_p2p(fwd_sends + bwd_recvs, "fwd_send_bwd_recv"))
            self._backward(bwd_index)
            bwd_sends = stage.get_bwd_send_ops(bwd_index)
            bwd_index += 1
            if fwd_index == self._n_microbatches:
                break
            fwd_recvs = stage.get_fwd_recv_ops(fwd_index)
            _wait_batch_p2p(_batch_p2p(bwd_sends + fwd_recvs, "bwd_send_fwd_recv"))
            forward()
            fwd_sends = stage.get_fwd_send_ops(fwd_index - 1)
        # cooldown: the remaining backwards
        send_work = _batch_p2p(bwd_sends, "bwd_send")
        while bwd_index < self._n_microbatches:
            _wait_batch_p2p(_batch_p2p(stage.get_bwd_recv_ops(bwd_index), "bwd_recv"))
            self._backward(bwd_index)
            _wait_batch_p2p(send_work)
            send_work = _batch_p2p(stage.get_bwd_send_ops(bwd_index), "bwd_send")
            bwd_index += 1
        _wait_batch_p2p(send_work)
        self._update_losses(stage, losses)
        stage.perform_reduce_grad(self._n_microbatches if self.scale_grads else 1)


class PipelineScheduleMulti(_PipelineSchedule):
    """The base of schedules with several stages per rank: ``pipeline_order[rank]``, the
    actions of every rank (None for a bubble), run in lockstep by every rank.

    Gradients are divided by the number of microbatches when ``scale_grads``, as in
    ``PipelineScheduleSingle``."""

    def __init__(self, stages, n_microbatches, loss_fn=None, args_chunk_spec=None,
                 kwargs_chunk_spec=None, output_merge_spec=None, scale_grads=True):
        super().__init__(n_microbatches=n_microbatches, loss_fn=loss_fn,
                         args_chunk_spec=args_chunk_spec, kwargs_chunk_spec=kwargs_chunk_spec,
                         output_merge_spec=output_merge_spec, scale_grads=scale_grads)
        self._stages = stages
        self._num_stages = stages[0].num_stages
        self.pp_group_size = stages[0].group_size
        self.rank = stages[0].group_rank
        self.stage_index_to_group_rank = {i: i % self.pp_group_size
                                          for i in range(self._num_stages)}
        for stage in self._stages:
            stage.stage_index_to_group_rank = self.stage_index_to_group_rank
        self._stages_forward_initialized = False
        self._stages_backward_initialized = False
        self.pipeline_order = {}

    def _initialize_stages(self, args, kwargs, target=None, loss_kwargs=None):
        self._stages_forward_initialized, self._stages_backward_initialized = \
            self._initialize_pp_stages(self._stages, args, kwargs, target,
                                       self._stages_forward_initialized,
                                       self._stages_backward_initialized, loss_kwargs)

    def step(self, *args, target=None, losses=None, return_outputs=True, loss_kwargs=None,
             **kwargs):
        """One iteration over the whole batch, as ``PipelineScheduleSingle.step``."""
        if self._has_backward and not ember.is_grad_enabled():
            raise RuntimeError(
                "step() requires gradients to be enabled for backward computation; it should "
                "not be used under torch.no_grad() context. Please call eval() instead.")
        for stage in self._stages:
            stage.has_backward = self._has_backward
            stage.clear_runtime_states()
        args_split, kwargs_split = self._split_inputs(args, kwargs)
        targets_split = (list(_split_tensor(target, _TARGET_CHUNK_SPEC, self._n_microbatches))
                         if target is not None else None)
        self._step_microbatches(args_split, kwargs_split, targets_split, losses,
                                return_outputs, loss_kwargs=loss_kwargs)
        for stage in self._stages:
            if stage.is_last and return_outputs:
                return self._merge_outputs(stage.output_chunks)
        return None

    def _step_microbatches(self, arg_mbs=None, kwarg_mbs=None, target_mbs=None, losses=None,
                           return_outputs=True, loss_kwargs=None):
        arg_mbs, kwarg_mbs = self._check_inputs(arg_mbs, kwarg_mbs, target_mbs, losses)
        self._initialize_stages(arg_mbs[0], kwarg_mbs[0],
                                target_mbs[0] if target_mbs is not None else None,
                                loss_kwargs)
        stages = {stage.stage_index: stage for stage in self._stages}
        # the ranks of this rank's stages' neighbours (stages talk to adjacent stages only)
        prev_ranks = {self.stage_index_to_group_rank[i - 1] for i in stages if i > 0}
        next_ranks = {self.stage_index_to_group_rank[i + 1] for i in stages
                      if i < self._num_stages - 1}
        backward_counter = Counter()

        def action_of(rank, time_step):
            order = self.pipeline_order[rank]
            return order[time_step] if time_step < len(order) else None

        for time_step, action in enumerate(self.pipeline_order[self.rank]):
            try:
                ops = []
                if action is not None:
                    stage, mb_index = stages[action.stage_index], action.microbatch_index
                    if action.computation_type == FORWARD:
                        output = stage.forward_one_chunk(mb_index, arg_mbs[mb_index],
                                                         kwarg_mbs[mb_index],
                                                         save_forward_output=return_outputs)
                        self._maybe_compute_loss(stage, output, target_mbs, mb_index,
                                                 loss_kwargs)
                        ops.extend(stage.get_fwd_send_ops(mb_index))
                    elif action.computation_type == FULL_BACKWARD:
                        backward_counter[action.stage_index] += 1
                        last_backward = (backward_counter[action.stage_index]
                                         == self._n_microbatches)
                        stage.backward_one_chunk(mb_index,
                                                 loss=self._maybe_get_loss(stage, mb_index),
                                                 last_backward=last_backward)
                        if last_backward:
                            stage.scale_grads(self._n_microbatches if self.scale_grads else 1)
                        ops.extend(stage.get_bwd_send_ops(mb_index))
                    else:
                        raise ValueError(f"Unknown computation type {action.computation_type}")
                # what the neighbours send this step: a previous rank's forward output, a next
                # rank's input gradients
                for rank in prev_ranks:
                    other = action_of(rank, time_step)
                    if (other is not None and other.computation_type == FORWARD
                            and other.stage_index + 1 in stages):
                        ops.extend(stages[other.stage_index + 1].get_fwd_recv_ops(
                            other.microbatch_index))
                for rank in next_ranks:
                    other = action_of(rank, time_step)
                    if (other is not None and other.computation_type == FULL_BACKWARD
                            and other.stage_index - 1 in stages):
                        ops.extend(stages[other.stage_index - 1].get_bwd_recv_ops(
                            other.microbatch_index))
                _wait_batch_p2p(_batch_p2p(ops))
            except Exception as e:
                logger.error("[Rank %s] pipeline schedule %s caught the following exception "
                             "'%s' at time_step %s when running action %s", self.rank,
                             self.__class__.__name__, e, time_step, action)
                raise
        self._update_losses(self._stages, losses)


class ScheduleLoopedBFS(PipelineScheduleMulti):
    """Breadth-first pipelining (https://arxiv.org/abs/2211.05953): several stages per rank,
    each running every microbatch's forward before the next local stage's, then the backwards
    from the last local stage back."""

    def __init__(self, stages, n_microbatches, loss_fn=None, output_merge_spec=None,
                 scale_grads=True):
        super().__init__(stages=stages, n_microbatches=n_microbatches, loss_fn=loss_fn,
                         output_merge_spec=output_merge_spec, scale_grads=scale_grads)
        self.pipeline_order = {rank: self._calculate_single_rank_operations(rank)
                               for rank in range(self.pp_group_size)}

    def _calculate_single_rank_operations(self, rank):
        stage_indices = range(rank, self.pp_group_size * len(self._stages), self.pp_group_size)
        rank_ops = [None] * rank
        for stage_index in stage_indices:
            rank_ops.extend(_Action(stage_index, FORWARD, mb)
                            for mb in range(self._n_microbatches))
        # the first backward comes up two steps per hop from the last rank
        rank_ops.extend([None] * (2 * (self.pp_group_size - 1 - rank)))
        for stage_index in reversed(stage_indices):
            rank_ops.extend(_Action(stage_index, FULL_BACKWARD, mb)
                            for mb in reversed(range(self._n_microbatches)))
        return rank_ops


def _get_1f1b_rank_ops(n_local_stages, pp_group_size, warmup_ops, fwd_bwd_ops, cooldown_ops,
                       rank, forward_stage_index, backward_stage_index):
    """One rank's actions: ``rank`` bubbles, the warmup forwards, bubbles until the first
    backward can arrive, one forward and one backward at a time, then the cooldown backwards
    (each after a bubble that keeps the ranks aligned)."""
    fwd_mb_index, bwd_mb_index = defaultdict(int), defaultdict(int)
    rank_ops = [None] * rank
    # the first backward reaches this rank at step n_local_stages * size + 2 * (size - 1 - rank)
    post_warmup_ops = ((n_local_stages * pp_group_size + 2 * (pp_group_size - 1 - rank))
                       - (warmup_ops + rank))

    def forward(op):
        stage = forward_stage_index(op)
        rank_ops.append(_Action(stage, FORWARD, fwd_mb_index[stage]))
        fwd_mb_index[stage] += 1

    def backward(op):
        stage = backward_stage_index(op)
        rank_ops.append(_Action(stage, FULL_BACKWARD, bwd_mb_index[stage]))
        bwd_mb_index[stage] += 1

    for op in range(warmup_ops + fwd_bwd_ops + cooldown_ops):
        if op < warmup_ops:
            forward(op)
            if op == warmup_ops - 1:
                rank_ops.extend([None] * post_warmup_ops)
        elif op < warmup_ops + fwd_bwd_ops:
            forward(op)
            backward(op)
        else:
            rank_ops.append(None)
            backward(op)
    return rank_ops


def _get_warmup_ops(rank, n_local_stages, microbatches_per_round, pp_group_size,
                    n_microbatches, multiply_factor=2):
    """The number of warmup forwards of ``rank`` in an interleaved schedule."""
    warmup_ops = ((n_local_stages - 1) * microbatches_per_round
                  + multiply_factor * ((pp_group_size - 1) - rank))
    return min(warmup_ops, n_microbatches * n_local_stages)


class ScheduleInterleaved1F1B(PipelineScheduleMulti):
    """Interleaved 1F1B (https://arxiv.org/pdf/2104.04473): several stages per rank, one
    forward and one backward in steady state, the earlier microbatch first when several local
    stages are ready. The microbatches go in ``max(1, n_microbatches // world size)`` rounds,
    which must divide them."""

    def __init__(self, stages, n_microbatches, loss_fn=None, args_chunk_spec=None,
                 kwargs_chunk_spec=None, output_merge_spec=None, scale_grads=True):
        super().__init__(stages=stages, n_microbatches=n_microbatches, loss_fn=loss_fn,
                         args_chunk_spec=args_chunk_spec, kwargs_chunk_spec=kwargs_chunk_spec,
                         output_merge_spec=output_merge_spec, scale_grads=scale_grads)
        self.n_local_stages = len(stages)
        self.number_of_rounds = max(1, n_microbatches // self.pp_group_size)
        self.microbatches_per_round = n_microbatches // self.number_of_rounds
        if n_microbatches % self.number_of_rounds != 0:
            raise ValueError("Interleaved 1F1B requires the number of microbatches to be a "
                             f"multiple of the number of rounds ({self.number_of_rounds}), "
                             f"but got {n_microbatches}.")
        self.pipeline_order = {rank: self._calculate_single_rank_operations(rank)
                               for rank in range(self.pp_group_size)}

    def _calculate_single_rank_operations(self, rank):
        warmup_ops = _get_warmup_ops(rank, self.n_local_stages, self.microbatches_per_round,
                                     self.pp_group_size, self._n_microbatches)
        microbatch_ops = self.n_local_stages * self._n_microbatches
        fwd_bwd_ops = microbatch_ops - warmup_ops
        cooldown_ops = microbatch_ops - fwd_bwd_ops

        def forward_stage_index(step):
            local_index = (step // self.microbatches_per_round) % self.n_local_stages
            return local_index * self.pp_group_size + rank

        def backward_stage_index(step):
            local_index = (self.n_local_stages - 1
                           - ((step - warmup_ops) // self.microbatches_per_round)
                           % self.n_local_stages)
            return local_index * self.pp_group_size + rank

        return _get_1f1b_rank_ops(self.n_local_stages, self.pp_group_size, warmup_ops,
                                  fwd_bwd_ops, cooldown_ops, rank, forward_stage_index,
                                  backward_stage_index)


def get_schedule_class(schedule_name):
    """The schedule class a name (any case) stands for."""
    schedule_map = {"1F1B": Schedule1F1B, "Interleaved1F1B": ScheduleInterleaved1F1B,
                    "GPipe": ScheduleGPipe, "LoopedBFS": ScheduleLoopedBFS,
                    "PipelineScheduleSingle": PipelineScheduleSingle,
                    "PipelineScheduleMulti": PipelineScheduleMulti}
    lowercase_keys = {k.lower(): k for k in schedule_map}
    if schedule_name.lower() not in lowercase_keys:
        raise ValueError(f"Unknown schedule name '{schedule_name}'. The valid options are "
                         f"{list(schedule_map.keys())}")
    return schedule_map[lowercase_keys[schedule_name.lower()]]
