"""DDP communication hooks; ``DDPCommHookType`` names the built-in ones."""
import enum
from functools import partial

from . import default_hooks  # noqa: F401


class DDPCommHookType(enum.Enum):
    ALLREDUCE = partial(default_hooks.allreduce_hook)
    FP16_COMPRESS = partial(default_hooks.fp16_compress_hook)
    BF16_COMPRESS = partial(default_hooks.bf16_compress_hook)


def register_ddp_comm_hook(comm_hook_type, model, state=None):
    model.register_comm_hook(state, comm_hook_type.value)
