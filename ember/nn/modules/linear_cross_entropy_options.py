"""``LinearCrossEntropyOptions``: how ``F.linear_cross_entropy`` chunks the batch (PyTorch
2.13's options, defaults and validation). ``_adjust`` resolves the ``"auto"`` choices for one
call: the chunk size (``aspect_ratio[:N]``: a chunk's logits about as large as the input, over
N) and the accumulation dtype (float32 for half-precision input on the CPU)."""
import dataclasses

from ... import _core

__all__ = ["LinearCrossEntropyOptions"]

_D = _core.dtype

# (device type, input dtype) -> (acc_policy, chunking_method) for "auto" (PyTorch's table)
_AUTO_DEFAULTS = {
    ("cuda", _D.bfloat16): ("compact", "aspect_ratio:2"),
    ("cuda", _D.float16): ("compact", "aspect_ratio:2"),
    ("cpu", _D.bfloat16): ("accurate", "aspect_ratio"),
    ("cpu", _D.float16): ("accurate", "aspect_ratio"),
}
_AUTO_FALLBACK = ("compact", "aspect_ratio:2")
_ACC_DTYPES = (_D.float16, _D.bfloat16, _D.float32, _D.float64)


@dataclasses.dataclass(frozen=True)
class LinearCrossEntropyOptions:
    """Options of the chunked ``linear_cross_entropy``: the full (batch, classes) logits are
    never materialized, only (batch_chunk_size, classes) at a time."""

    allow_retain_graph: bool = False
    batch_chunk_size: int = None
    chunking_method: str = "auto"
    acc_policy: str = "auto"
    acc_dtype: object = None

    def __post_init__(self):
        if self.acc_policy not in {"auto", "accurate", "balanced", "compact"}:
            raise ValueError(f"invalid acc_policy: {self.acc_policy!r}")
        if self.chunking_method is not None and self.chunking_method != "auto":
            name, sep, factor = self.chunking_method.partition(":")
            factor = factor if sep else "1"
            if not (name == "aspect_ratio" and factor.isdigit() and int(factor) > 0):
                raise ValueError(f"invalid chunking_method: {self.chunking_method!r}")
        if not (self.batch_chunk_size is None or (isinstance(self.batch_chunk_size, int)
                                                  and self.batch_chunk_size > 0)):
            raise ValueError(f"batch_chunk_size must be positive int or None, got "
                             f"{self.batch_chunk_size!r}")
        if self.acc_dtype is not None and self.acc_dtype not in _ACC_DTYPES:
            raise ValueError(f"acc_dtype must be one of {{None, torch.float16, torch.bfloat16, "
                             f"torch.float32, torch.float64}}, got {self.acc_dtype!r}. Pass "
                             f"acc_dtype=None to let the op pick automatically.")

    @staticmethod
    def _chunk_for(method, num_batches, in_features, num_classes):
        factor = int(method.split(":", 1)[1]) if ":" in method else 1
        growth = -(-num_classes // in_features)
        target = -(-num_batches // growth)
        return min((1 << (target - 1).bit_length()) // factor, num_batches)

    def _adjust(self, num_batches, in_features, num_classes, dtype, device=None):
        """A concrete copy for one call: no "auto", a chunk size and an accumulation dtype."""
        acc_policy, method = self.acc_policy, self.chunking_method
        if method == "auto" and self.batch_chunk_size is not None:
            method = None  # an explicit chunk size wins over the heuristic
        if "auto" in (acc_policy, method):
            ap, cm = (_AUTO_DEFAULTS.get((device.type, dtype), _AUTO_FALLBACK)
                      if device is not None else _AUTO_FALLBACK)
            acc_policy = ap if acc_policy == "auto" else acc_policy
            method = cm if method == "auto" else method
        chunk = num_batches if self.batch_chunk_size is None else \
            min(self.batch_chunk_size, num_batches)
        if method is not None:
            chunk = self._chunk_for(method, num_batches, in_features, num_classes)
            if self.batch_chunk_size is not None and self.batch_chunk_size != chunk:
                raise ValueError(f"batch_chunk_size (={self.batch_chunk_size}) and "
                                 f"chunking_method ('{method}') give different chunk sizes "
                                 f"({self.batch_chunk_size} vs {chunk}); pass only one.")
        acc_dtype = self.acc_dtype
        if acc_dtype is None:
            half = dtype in (_D.float16, _D.bfloat16)
            acc_dtype = _D.float32 if (self.acc_policy == "auto" and half and device is not None
                                       and device.type == "cpu") else dtype
        return dataclasses.replace(self, acc_policy=acc_policy, chunking_method=method,
                                   batch_chunk_size=max(1, chunk), acc_dtype=acc_dtype)
