"""``ember.distributed.pipelining``: PyTorch's pipeline parallelism with stages built by hand
(``PipelineStage``: a submodule this rank runs), the single-stage schedules ``ScheduleGPipe``
and ``Schedule1F1B`` and the multi-stage ``ScheduleInterleaved1F1B`` and ``ScheduleLoopedBFS``,
over ember.distributed's point-to-point operations.

Not here: the tracing front end (``pipeline``, ``pipe_split``, ``SplitPoint``, ``Pipe``,
``build_stage``), the zero-bubble and DualPipeV schedules (they split each backward into its
input and weight halves), DTensor activations between stages, and composing a stage with
DDP/FSDP."""
from .schedules import (Schedule1F1B, ScheduleGPipe, ScheduleInterleaved1F1B,
                        ScheduleLoopedBFS)
from .stage import PipelineStage

__all__ = ["PipelineStage", "Schedule1F1B", "ScheduleGPipe", "ScheduleInterleaved1F1B",
           "ScheduleLoopedBFS"]
