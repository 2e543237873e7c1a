"""PyTorch's ``torch.distributed.tensor.parallel``: tensor parallelism on DTensor.
``parallelize_module`` applies ``ParallelStyle``s to a module's submodules (a plan keyed by
fnmatch-style names): ``ColwiseParallel``/``RowwiseParallel`` shard ``nn.Linear`` and
``nn.Embedding`` parameters and lay out their inputs and outputs (Megatron's pairs),
``SequenceParallel`` runs a norm or dropout on sequence-sharded activations, the
``PrepareModule*`` styles convert a module's inputs and outputs; ``loss_parallel`` computes
cross-entropy on class-sharded logits without gathering them."""
from .api import parallelize_module
from .loss import loss_parallel
from .style import (ColwiseParallel, ParallelStyle, PrepareModuleInput,
                    PrepareModuleInputOutput, PrepareModuleOutput, RowwiseParallel,
                    SequenceParallel)

__all__ = ["ColwiseParallel", "ParallelStyle", "PrepareModuleInput", "PrepareModuleInputOutput",
           "PrepareModuleOutput", "RowwiseParallel", "SequenceParallel", "parallelize_module",
           "loss_parallel"]
