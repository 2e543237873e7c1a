"""``DTensorSpec``: a DTensor's layout (mesh and placements) and its global metadata
(``TensorMeta``: shape, stride, dtype), the unit sharding propagation reasons about."""
from typing import NamedTuple

import ember

from .placement_types import Partial, Replicate, Shard, _is_shard_like


# PyTorch's torch.utils._dtype_abbrs, for spec strings such as Spec(f32[4, 4](S(0)))
_DTYPE_ABBRS = {
    "bool": "b8", "uint8": "u8", "int8": "i8", "int16": "i16", "int32": "i32", "int64": "i64",
    "uint16": "u16", "uint32": "u32", "uint64": "u64", "float16": "f16", "bfloat16": "bf16",
    "float32": "f32", "float64": "f64", "complex32": "c32", "complex64": "c64",
    "complex128": "c128", "float8_e5m2": "f8e5m2", "float8_e4m3fn": "f8e4m3fn",
    "float8_e5m2fnuz": "f8e5m2fnuz", "float8_e4m3fnuz": "f8e4m3fnuz",
    "float8_e8m0fnu": "f8e8m0fnu",
}


class TensorMeta(NamedTuple):
    shape: tuple
    stride: tuple
    dtype: object


class DTensorSpec:
    def __init__(self, mesh, placements, tensor_meta=None):
        self.mesh = mesh
        self.placements = tuple(placements)
        self.tensor_meta = tensor_meta

    def _hash_key(self):
        return (self.mesh, self.placements, self.tensor_meta)

    def __hash__(self):
        return hash(self._hash_key())

    def __eq__(self, other):
        return isinstance(other, DTensorSpec) and self._hash_key() == other._hash_key()

    def __repr__(self):
        return (f"DTensorSpec(mesh={self.mesh!r}, placements={self.placements!r}, "
                f"tensor_meta={self.tensor_meta!r})")

    def __str__(self):
        placements = "".join(str(p) for p in self.placements)
        if self.tensor_meta is None:
            return f"Spec(unknown dtypeunknown shape({placements}))"
        dtype = _DTYPE_ABBRS.get(self.tensor_meta.dtype.name, self.tensor_meta.dtype.name)
        return f"Spec({dtype}{list(self.tensor_meta.shape)}({placements}))"

    @property
    def shape(self):
        if self.tensor_meta is None:
            raise ValueError("tensor_meta is not set")
        return ember.Size(self.tensor_meta.shape)

    @property
    def stride(self):
        if self.tensor_meta is None:
            raise ValueError("tensor_meta is not set")
        return self.tensor_meta.stride

    @property
    def ndim(self):
        if self.tensor_meta is None:
            raise ValueError("tensor_meta is not set")
        return len(self.tensor_meta.shape)

    @property
    def device_mesh(self):
        return self.mesh

    @property
    def num_shards(self):
        n = 1
        for i, p in enumerate(self.placements):
            if _is_shard_like(p):
                n *= self.mesh.size(i)
        return n

    @property
    def dim_map(self):
        """For each tensor dim, the mesh dim sharding it (-1: none)."""
        r = [-1] * self.ndim
        for i, p in enumerate(self.placements):
            if _is_shard_like(p):
                if r[p.dim] > -1:
                    raise ValueError(
                        f"Tensor dim {p.dim} is already sharded on mesh dim {r[p.dim]}, DTensor "
                        f"operator implementation does not support things like hybrid sharding "
                        f"strategies yet (i.e. [Shard(0), Shard(0)])")
                r[p.dim] = i
        return r

    @property
    def num_shards_map(self):
        r = [1] * self.ndim
        for i, p in enumerate(self.placements):
            if _is_shard_like(p):
                r[p.dim] *= self.mesh.size(i)
        return r

    @property
    def sums(self):
        return [i for i, p in enumerate(self.placements) if p.is_partial()]

    @classmethod
    def from_dim_map(cls, mesh, dim_map, sums, tensor_meta=None):
        placements = [Replicate() for _ in range(mesh.ndim)]
        for s in sums:
            placements[s] = Partial()
        for i, m in enumerate(dim_map):
            if m >= 0:
                if placements[m].is_shard():
                    raise RuntimeError(f"DeviceMesh dimension can't be mapped to two dimension of "
                                       f"the same tensor: {i} and {placements[m].dim}")
                if placements[m].is_partial():
                    raise RuntimeError(f"DeviceMesh dimension {m} cannot be both shard and "
                                       f"partial!")
                placements[m] = Shard(i)
        return cls(mesh, tuple(placements), tensor_meta=tensor_meta)

    def is_replicated(self):
        return all(p.is_replicate() for p in self.placements)

    def is_sharded(self):
        return any(_is_shard_like(p) for p in self.placements)

    def shallow_copy_with_tensor_meta(self, tensor_meta):
        if tensor_meta is None:
            raise AssertionError("shallow copy with no tensor_meta!")
        return DTensorSpec(self.mesh, self.placements, tensor_meta=tensor_meta)
