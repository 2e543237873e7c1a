"""``MaskBuffer``: the mask a ``_MaskPartial`` placement computes when it partitions indices
(which of them fall outside this rank's shard), kept until the pending reduction applies it.
Shared by the input and output placements of one op call, counted by references."""
from dataclasses import dataclass

import ember


@dataclass
class MaskBuffer:
    data: object = None
    # users may share the buffer as long as they all materialize the same mask
    refcount: int = 0

    def materialize_mask(self, mask):
        if self.refcount == 0:
            self.data = mask
        else:
            if self.data is None:
                raise AssertionError
            if not ember.equal(self.data, mask):
                raise RuntimeError("MaskBuffer has been materialized with conflicting data")
        self.refcount += 1

    def release_mask(self):
        if self.refcount == 0 or self.data is None:
            raise RuntimeError("MaskBuffer has not been materialized")
        self.refcount -= 1
        if self.refcount == 0:
            self.data = None

    def apply_mask(self, tensor):
        if self.refcount == 0 or self.data is None:
            raise RuntimeError("MaskBuffer has not been materialized")
        # a gather's output has the mask's shape; an embedding's has one more (trailing) dim
        if tensor.ndim == self.data.ndim:
            tensor[self.data] = 0.0
        else:
            tensor[self.data, :] = 0.0
