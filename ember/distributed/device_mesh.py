"""PyTorch's ``torch.distributed.device_mesh``: ``DeviceMesh`` (an n-dimensional array of global
ranks with one process group per dimension for this rank) and ``init_device_mesh``.

A mesh is a layout over a root rank map, as in PyTorch: each mesh dimension is a tuple of
``(size, stride)`` pairs into the root mesh's flattened ranks (one pair for a plain dimension,
several for one flattened from non-adjacent dimensions, none for a dimension of size 1). Slicing
(``mesh["tp"]``) keeps the root's process groups; ``_flatten`` makes new ones. Every rank of the
world runs the same calls: creating a group is collective over the world.
"""
import math
import os
import threading
import warnings

import ember

from . import distributed_c10d as c10d

__all__ = ["init_device_mesh", "DeviceMesh"]


class _MeshEnv(threading.local):
    """The stack of meshes entered with ``with mesh:`` (the mesh DTensor APIs default to)."""

    def __init__(self):
        self.mesh_stack = []

    def get_current_mesh(self):
        if len(self.mesh_stack) == 0:
            raise RuntimeError("No device mesh is currently active!")
        return self.mesh_stack[-1]

    @staticmethod
    def num_devices_per_host(device_type):
        if device_type == "cuda":
            return ember.cuda.device_count()
        return 1

    def get_root_mesh(self, device_mesh):
        return device_mesh._get_root_mesh()


_mesh_resources = _MeshEnv()


def _coalesce(pairs):
    """One axis's ``(size, stride)`` pairs without size-1 pairs, adjacent contiguous pairs merged
    (PyTorch's layout coalescing: a flattened ``(2, 4):(4, 1)`` is ``8:1``)."""
    out = []
    for size, stride in pairs:
        if size == 1:
            continue
        if out and out[-1][1] == size * stride:
            out[-1] = (out[-1][0] * size, stride)
        else:
            out.append((size, stride))
    return tuple(out)


def _axis_numel(axis):
    return math.prod(size for size, _ in axis)


def _axis_offsets(axis):
    """Row-major offsets into the rank map of one axis's positions."""
    offsets = [0]
    for size, stride in axis:
        offsets = [o + i * stride for o in offsets for i in range(size)]
    return offsets


def _layout_offsets(layout):
    """Row-major offsets of every position of a layout (all its axes)."""
    offsets = [0]
    for axis in layout:
        offsets = [o + a for o in offsets for a in _axis_offsets(axis)]
    return offsets


def _cosets(layout, n):
    """The layout placed at every offset of the root rank map it does not cover, in order of
    their first index: the sub-meshes (or, for one axis, the groups) across the root mesh."""
    offsets = _layout_offsets(layout)
    taken = [False] * n
    result = []
    for start in range(n):
        if taken[start]:
            continue
        idx = [start + o for o in offsets]
        if any(i >= n or taken[i] for i in idx):
            raise AssertionError("Please use a non-overlapping layout when creating a DeviceMesh.")
        for i in idx:
            taken[i] = True
        result.append(idx)
    return result


def _reshape(flat, sizes):
    if not sizes:
        return flat[0]
    step = math.prod(sizes[1:])
    return [_reshape(flat[i * step:(i + 1) * step], sizes[1:]) for i in range(sizes[0])]


class DeviceMesh:
    """A mesh of devices: ``mesh`` is an n-d array of global ranks of the default group.
    ``DeviceMesh(device_type, mesh, mesh_dim_names=...)`` creates one process group per mesh
    dimension for this rank (initialising the default group first if needed)."""

    def __init__(self, device_type, mesh=None, *, mesh_dim_names=None, backend_override=None,
                 _init_backend=True, _rank=None, _layout=None, _rank_map=None, _root_mesh=None):
        if mesh is not None:
            if _layout is not None or _rank_map is not None:
                raise TypeError("Cannot provide _layout and/or _rank_map if passing explicit mesh")
            t = mesh if isinstance(mesh, ember.Tensor) else ember.tensor(mesh, dtype=ember.int32)
            sizes = tuple(t.shape)
            strides = tuple(math.prod(sizes[i + 1:]) for i in range(len(sizes)))
            _layout = tuple(_coalesce([(s, st)]) for s, st in zip(sizes, strides))
            self._top_sizes = sizes
            _rank_map = tuple(int(r) for r in t.reshape(-1).tolist())
        else:
            if _layout is None or _rank_map is None:
                raise TypeError("The mesh argument is required except for PRIVATE USAGE ONLY!")
            self._top_sizes = tuple(_axis_numel(a) for a in _layout)
        self._device_type = device_type
        self._layout = tuple(_layout)
        self._rank_map = tuple(_rank_map)
        self._mesh_dim_names = tuple(mesh_dim_names) if mesh_dim_names else None
        self._root_mesh = _root_mesh
        self._flatten_mapping = {}
        self._thread_id = None
        self._hash = None
        if backend_override is not None and len(backend_override) != len(self._layout):
            raise ValueError(f"backend_override should have the same length as the number of mesh "
                             f"dimensions, but got {len(backend_override)} and "
                             f"{len(self._layout)}.")
        if _init_backend:
            self._setup_world_group()
            self._dim_groups = self._init_process_groups(backend_override)
        self._rank = c10d.get_rank() if _rank is None else _rank
        self._coordinate_on_dim = self._compute_coordinate()

    # --- construction

    def _setup_world_group(self):
        if not c10d.is_initialized():
            c10d.init_process_group()
        world = c10d.get_world_size()
        if math.prod(self._top_sizes) > world:
            raise RuntimeError(f"Mesh should not be bigger than default world size {world}, but "
                               f"found {math.prod(self._top_sizes)} ranks!")

    def _init_process_groups(self, backend_override):
        """The group of each mesh dimension that this rank is in (None where it is in none)."""
        groups = []
        rank = c10d.get_rank()
        for dim, axis in enumerate(self._layout):
            backend = backend_override[dim] if backend_override else None
            groups.append(_one_dim_group(axis, self._rank_map, rank, backend))
        if any(g is None for g in groups) and any(g is not None for g in groups):
            raise AssertionError
        return groups

    def _compute_coordinate(self):
        try:
            flat = self._mesh_ranks()
        except RuntimeError:
            return None
        if self._rank not in flat:
            return None
        pos = flat.index(self._rank)
        coord = []
        for size in reversed(self._top_sizes):
            coord.append(pos % size)
            pos //= size
        return tuple(reversed(coord))

    def _mesh_ranks(self):
        """This rank's sub-mesh of the root's, flattened (the only one if there is one)."""
        groups = _cosets(self._layout, len(self._rank_map))
        if len(groups) == 1:
            return [self._rank_map[i] for i in groups[0]]
        for idx in groups:
            ranks = [self._rank_map[i] for i in idx]
            if self._rank in ranks:
                return ranks
        raise RuntimeError("In order to get the mesh Tensor of a DeviceMesh it needs to either "
                           "have all its original dimensions (e.g., no slicing) or it needs to "
                           "contain the local rank")

    # --- properties

    @property
    def device_type(self):
        return self._device_type

    @property
    def mesh(self):
        return ember.tensor(_reshape(self._mesh_ranks(), list(self._top_sizes)),
                            dtype=ember.int32)

    @property
    def mesh_dim_names(self):
        return self._mesh_dim_names

    @property
    def ndim(self):
        return len(self._layout)

    @property
    def shape(self):
        return self._top_sizes

    def size(self, mesh_dim=None):
        if mesh_dim is not None:
            return self._top_sizes[mesh_dim]
        return math.prod(self._top_sizes)

    def get_rank(self):
        return c10d.get_rank()

    def get_coordinate(self):
        """This rank's index along every mesh dimension, or None if it is not in the mesh."""
        return self._coordinate_on_dim

    def _is_current_rank_part_of_mesh(self):
        return self._coordinate_on_dim is not None

    def _sym_get_coordinate(self, index):
        if self._coordinate_on_dim is None:
            raise AssertionError
        return self._coordinate_on_dim[index]

    def _get_root_mesh(self):
        return self._root_mesh if self._root_mesh is not None else self

    # --- groups

    def _get_mesh_dim_by_name(self, mesh_dim_name):
        if not self._mesh_dim_names:
            raise KeyError("No `mesh_dim_names` found.")
        if mesh_dim_name not in self._mesh_dim_names:
            raise KeyError(f"Mesh dimension '{mesh_dim_name}' does not exist.",
                           f"Available mesh dimensions are: mesh_dim_names="
                           f"{self._mesh_dim_names}")
        return self._mesh_dim_names.index(mesh_dim_name)

    def get_group(self, mesh_dim=None):
        """The process group of ``mesh_dim`` (index or name) that this rank is in."""
        if not hasattr(self, "_dim_groups"):
            raise RuntimeError("DeviceMesh process groups not initialized!")
        if self.ndim > 1 and mesh_dim is None:
            raise RuntimeError(
                f"Found the DeviceMesh have {self.ndim} dimensions",
                "Optional kwarg `mesh_dim` needs to be specified when device_mesh.ndim > 1.",
                "If you want to get the list of all the ProcessGroups in the DeviceMesh,"
                "please use `get_all_groups()` instead.")
        if mesh_dim is None:
            mesh_dim = 0
        root = self._get_root_mesh()
        if isinstance(mesh_dim, str) and mesh_dim in root._flatten_mapping:
            return root._flatten_mapping[mesh_dim]._dim_groups[0]
        if isinstance(mesh_dim, str):
            mesh_dim = self._get_mesh_dim_by_name(mesh_dim)
        return self._dim_groups[mesh_dim]

    @property
    def _dim_group_names(self):
        return [g.group_name for g in getattr(self, "_dim_groups", ()) if g is not None]

    def get_all_groups(self):
        return [self.get_group(i) for i in range(self.ndim)]

    def get_local_rank(self, mesh_dim=None):
        """This rank's rank in the group of ``mesh_dim``."""
        if self.ndim > 1 and mesh_dim is None:
            raise RuntimeError(
                f"Found the DeviceMesh have {self.ndim} dimensions",
                "Optional kwarg `mesh_dim` needs to be specified when device_mesh.ndim > 1.")
        if mesh_dim is None:
            mesh_dim = 0
        return c10d.get_rank(self.get_group(mesh_dim))

    # --- slicing and flattening

    def __getitem__(self, mesh_dim_names):
        if not self._mesh_dim_names:
            raise RuntimeError("Cannot slice a DeviceMesh without mesh_dim_names!")
        names = (mesh_dim_names,) if isinstance(mesh_dim_names, str) else tuple(mesh_dim_names)
        if names == self._mesh_dim_names:
            return self
        root = self._get_root_mesh()
        flattened = root._flatten_mapping if self is root else {}
        valid = [*self._mesh_dim_names, *flattened]
        if not all(n in valid for n in names):
            raise KeyError(f"Invalid mesh_dim_names {names} specified. Valid mesh_dim_names "
                           f"are {valid}.")
        axes, groups = [], []
        for n in names:
            if n in self._mesh_dim_names:
                i = self._mesh_dim_names.index(n)
                axes.append(self._layout[i])
                groups.append(self._dim_groups[i] if hasattr(self, "_dim_groups") else None)
            else:
                warnings.warn("Slicing a flattened dim from root mesh will be deprecated in PT "
                              "2.11. Users need to bookkeep the flattened mesh directly. ",
                              stacklevel=2)
                axes.append(flattened[n]._layout[0])
                groups.append(flattened[n]._dim_groups[0])
        strides = [s for axis in axes for _, s in axis]
        if strides != sorted(strides, reverse=True):
            raise KeyError(f"Invalid mesh_dim_names {names} specified. Mesh dim indices should "
                           f"be in ascending order.")
        sub = DeviceMesh(self._device_type, _layout=tuple(axes), _rank_map=root._rank_map,
                         mesh_dim_names=names, _root_mesh=root, _init_backend=False)
        sub._dim_groups = groups
        return sub

    def _flatten(self, mesh_dim_name=None, backend_override=None):
        """This mesh as one dimension (new process groups), kept by the root mesh under
        ``mesh_dim_name`` (default: the names joined by ``_``)."""
        if not self._mesh_dim_names:
            raise RuntimeError("Cannot flatten a DeviceMesh without mesh_dim_names!")
        if not mesh_dim_name:
            mesh_dim_name = "_".join(self._mesh_dim_names)
        if self.ndim == 1 and mesh_dim_name in self._mesh_dim_names:
            return self
        root = self._get_root_mesh()
        if mesh_dim_name in (root._mesh_dim_names or ()):
            raise ValueError(f"{mesh_dim_name} already exists for submesh of the {root}. ",
                             f"The mesh_dim_names of submesh and flattened mesh are "
                             f"{root._mesh_dim_names}. Please specify another valid "
                             f"mesh_dim_name.")
        axis = _coalesce([pair for a in self._layout for pair in a])
        if mesh_dim_name in root._flatten_mapping:
            if root._flatten_mapping[mesh_dim_name]._layout == (axis,):
                return root._flatten_mapping[mesh_dim_name]
            raise ValueError(f"Flatten mesh with mesh_dim_name {mesh_dim_name} has been created "
                             f"before, Please specify another valid mesh_dim_name.")
        flat = DeviceMesh(root._device_type, _layout=(axis,), _rank_map=root._rank_map,
                          mesh_dim_names=(mesh_dim_name,), _root_mesh=root,
                          backend_override=None if backend_override is None
                          else (backend_override,))
        root._flatten_mapping[mesh_dim_name] = flat
        return flat

    @staticmethod
    def _concatenate(device_mesh_list):
        """The meshes' dimensions as one mesh (FSDP's data-parallel mesh followed by the TP
        mesh), keeping their process groups; they must be slices of one root and must not
        overlap."""
        root = device_mesh_list[0]._get_root_mesh()
        for dm in device_mesh_list:
            if dm._get_root_mesh()._rank_map != root._rank_map:
                raise RuntimeError("Cannot concatenate DeviceMeshes derived from different "
                                   "device meshs")
        if any(dm.mesh_dim_names is None for dm in device_mesh_list):
            raise TypeError("Invariant encountered: value was None when it should not be")
        layout = tuple(axis for dm in device_mesh_list for axis in dm._layout)
        offsets = _layout_offsets(layout)
        if len(set(offsets)) != len(offsets):
            raise RuntimeError(f"Cannot concatenate overlapping meshes: {device_mesh_list}")
        res_mesh = DeviceMesh(device_mesh_list[0].device_type, _layout=layout,
                              _rank_map=root._rank_map,
                              mesh_dim_names=tuple(n for dm in device_mesh_list
                                                   for n in dm.mesh_dim_names),
                              _root_mesh=root, _init_backend=False)
        res_mesh._dim_groups = [g for dm in device_mesh_list for g in dm._dim_groups]
        return res_mesh

    @staticmethod
    def from_group(group, device_type, mesh=None, *, mesh_dim_names=None):
        """A mesh over existing process groups: one group (a 1-D mesh over its ranks), or one
        group per dimension of ``mesh``."""
        if isinstance(group, c10d.ProcessGroup):
            ranks = c10d.get_process_group_ranks(group)
            if mesh is not None and [int(r) for r in _flat(mesh)] != ranks:
                raise ValueError(f"Invalid mesh {mesh} for ProcessGroup with ranks {ranks}")
            dm = DeviceMesh(device_type, ranks, mesh_dim_names=mesh_dim_names,
                            _init_backend=False)
            dm._dim_groups = [group]
            return dm
        groups = list(group)
        if mesh is None:
            raise ValueError("Must pass mesh if passing multiple ProcessGroups")
        dm = DeviceMesh(device_type, mesh, mesh_dim_names=mesh_dim_names, _init_backend=False)
        if len(groups) != dm.ndim:
            raise ValueError(f"Expects the number of ProcessGroups to match the number of mesh "
                             f"dimensions but got {len(groups)} ProcessGroups and {dm.ndim} "
                             f"mesh dimensions")
        dm._dim_groups = groups
        return dm

    # --- protocol

    def __deepcopy__(self, memo):
        # a mesh names process groups of this process: a copy of a DTensor shares them
        return self

    def __enter__(self):
        _mesh_resources.mesh_stack.append(self)
        return self

    def __exit__(self, exc_type, exc_value, exc_traceback):
        _mesh_resources.mesh_stack.pop()

    def __repr__(self):
        if self._mesh_dim_names:
            body = "(" + ", ".join(f"{k}={v}" for k, v in zip(self._mesh_dim_names,
                                                             self._top_sizes)) + ")"
        else:
            body = f"{self._top_sizes}"
        stride = tuple(axis[0][1] if len(axis) == 1 else tuple(s for _, s in axis)
                       for axis in self._layout)
        text = f"DeviceMesh({body}, '{self.device_type}', stride={stride}"
        if os.environ.get("TORCH_DISTRIBUTED_DEBUG", "") == "DETAIL":
            text += f", Mesh: {self.mesh.tolist()}"
        return text + ")"

    def _hash_key(self):
        return (self._rank_map, self._layout, self._device_type, self._mesh_dim_names,
                self._thread_id)

    def __hash__(self):
        if not self._hash:
            self._hash = hash(self._hash_key())
        return self._hash

    def __eq__(self, other):
        if self is other:
            return True
        if not isinstance(other, DeviceMesh):
            return False
        return self._hash_key() == other._hash_key()


def _flat(mesh):
    if hasattr(mesh, "tolist"):
        mesh = mesh.tolist()
    if isinstance(mesh, (list, tuple)):
        return [x for m in mesh for x in _flat(m)]
    return [mesh]


def _one_dim_group(axis, rank_map, rank, backend):
    """Create the groups of one mesh dimension across the root mesh (every rank creates every
    one, in the same order) and return the one ``rank`` is in. A dimension over the whole world
    uses the default group, as PyTorch does."""
    if _axis_numel(axis) == c10d.get_world_size() and backend is None:
        return c10d._get_default_group()
    mine = None
    for idx in _cosets((axis,), len(rank_map)):
        ranks = [rank_map[i] for i in idx]
        pg = c10d.new_group(ranks=ranks, backend=backend)
        if rank in ranks:
            mine = pg
    return mine


def init_device_mesh(device_type, mesh_shape, *, mesh_dim_names=None, backend_override=None):
    """A ``DeviceMesh`` of ``mesh_shape`` over global ranks ``0 .. prod(mesh_shape) - 1`` in
    row-major order, initialising the default process group first if needed."""
    if mesh_dim_names is not None:
        if len(set(mesh_dim_names)) != len(mesh_dim_names):
            raise RuntimeError(f"Each mesh_dim_name must be unique. Found repeated mesh_dim_name "
                               f"in mesh_dim_names {mesh_dim_names}")
        if len(mesh_shape) != len(mesh_dim_names):
            raise RuntimeError(f"mesh_shape and mesh_dim_names should have same length! Found "
                               f"len(mesh_dim_names): {len(mesh_dim_names)} and "
                               f"len(mesh_shape):{len(mesh_shape)}.")
    if backend_override is not None:
        overrides = [None] * len(mesh_shape)
        for key, value in backend_override.items():
            dim = mesh_dim_names.index(key) if isinstance(key, str) else key
            overrides[dim] = value if isinstance(value, str) else value[0]
        backend_override = tuple(overrides)
    if device_type and not device_type.isalpha():
        raise RuntimeError(f"Device type with index is not supported but got {device_type}. ",
                           "If you maintained a 'torch.device' object, it's recommended to pass "
                           "in 'device.type'.")
    sizes = tuple(int(s) for s in mesh_shape)
    strides = tuple(math.prod(sizes[i + 1:]) for i in range(len(sizes)))
    layout = tuple(_coalesce([(s, st)]) for s, st in zip(sizes, strides))
    return DeviceMesh(device_type, _layout=layout, _rank_map=tuple(range(math.prod(sizes))),
                      mesh_dim_names=mesh_dim_names, backend_override=backend_override)
