"""PyTorch's ``torch.distributed`` API (``distributed_c10d.py``): process groups, rendezvous and
the collectives on tensors. Tensors are handed to the MPI engine (:mod:`._mpi`) as NumPy views
of their storage; every collective is a non-blocking MPI request inside a ``Work``. A group whose
backend names ``nccl`` for CUDA (``"nccl"``, ``"cpu:gloo,cuda:nccl"``) runs the collectives on
CUDA tensors through NCCL instead (:mod:`._nccl`); its MPI communicator still carries the
host-side checks and the object collectives.
"""
import enum
import hashlib
import io
import os
import pickle
import warnings
from datetime import timedelta
from urllib.parse import parse_qs, urlparse

import numpy as np

import ember

from . import _mpi, _nccl
from ._errors import DistBackendError, DistNetworkError
from ._mpi import CompletedWork, Work
from ._store import FileStore, HashStore, PrefixStore, Store, TCPStore

__all__ = [
    "Backend", "ReduceOp", "reduce_op", "GroupMember", "group", "ProcessGroup", "Work", "DistBackendError",
    "is_available", "is_initialized", "is_mpi_available", "is_gloo_available", "is_nccl_available",
    "is_ucc_available", "is_xccl_available", "is_backend_available",
    "get_default_backend_for_device", "get_pg_count", "get_node_local_rank", "supports_complex",
    "DebugLevel", "get_debug_level", "init_process_group", "destroy_process_group", "new_group",
    "new_subgroups", "new_subgroups_by_enumeration", "split_group", "get_rank",
    "get_world_size", "get_backend", "get_global_rank", "get_group_rank",
    "get_process_group_ranks", "all_reduce", "broadcast", "reduce", "all_gather",
    "all_gather_single", "all_gather_into_tensor", "gather", "scatter", "reduce_scatter",
    "reduce_scatter_single", "reduce_scatter_tensor", "all_to_all", "all_to_all_single", "send",
    "recv", "isend", "irecv", "batch_isend_irecv", "P2POp", "barrier", "monitored_barrier",
    "broadcast_object_list", "all_gather_object", "gather_object", "scatter_object_list",
    "send_object_list", "recv_object_list", "Store", "TCPStore", "FileStore", "HashStore",
    "PrefixStore",
]

default_pg_timeout = timedelta(minutes=30)


class Backend(str):
    """Backend names: ``gloo`` and ``mpi`` both run on the MPI engine (CPU tensors, and CUDA
    tensors through host memory); ``nccl`` on NCCL (CUDA tensors)."""
    UNDEFINED = "undefined"
    GLOO = "gloo"
    NCCL = "nccl"
    MPI = "mpi"
    backend_list = [UNDEFINED, GLOO, NCCL, MPI]
    # the backend each device type gets by default, and the device types each backend serves
    default_device_backend_map = {"cpu": GLOO, "cuda": NCCL}
    backend_capability = {GLOO: ["cpu", "cuda"], NCCL: ["cuda"], MPI: ["cpu", "cuda"]}

    def __new__(cls, name):
        if not isinstance(name, str):
            raise ValueError(f"Backend constructor parameter must be string-ish, but got: "
                             f"{type(name)}")
        value = getattr(Backend, name.upper(), Backend.UNDEFINED)
        if value == Backend.UNDEFINED:
            value = name.lower()
        return super().__new__(cls, value)


class ReduceOp:
    """PyTorch's ``ReduceOp``: ``ReduceOp.SUM`` etc. are ``ReduceOp.RedOpType`` members."""

    class RedOpType(enum.Enum):
        SUM = 0
        AVG = 1
        PRODUCT = 2
        MIN = 3
        MAX = 4
        BAND = 5
        BOR = 6
        BXOR = 7
        PREMUL_SUM = 8

        def __repr__(self):
            return f"<RedOpType.{self.name}: {self.value}>"

    SUM = RedOpType.SUM
    AVG = RedOpType.AVG
    PRODUCT = RedOpType.PRODUCT
    MIN = RedOpType.MIN
    MAX = RedOpType.MAX
    BAND = RedOpType.BAND
    BOR = RedOpType.BOR
    BXOR = RedOpType.BXOR
    PREMUL_SUM = RedOpType.PREMUL_SUM

    def __init__(self, op):
        self.op = op if isinstance(op, ReduceOp.RedOpType) else ReduceOp.RedOpType(op)


class _reduce_op:  # noqa: N801 (PyTorch's name)
    """The deprecated enum-like ``reduce_op`` (``reduce_op.SUM`` ...): every attribute read
    warns, pointing at ``ReduceOp``."""

    def __init__(self):
        for k, v in ReduceOp.RedOpType.__members__.items():
            setattr(self, k, v)
        self.__members__ = ReduceOp.RedOpType.__members__

    def __getattribute__(self, key):
        warnings.warn("`torch.distributed.reduce_op` is deprecated, please use "
                      "`torch.distributed.ReduceOp` instead", FutureWarning, stacklevel=2)
        return object.__getattribute__(self, key)


reduce_op = _reduce_op()


def supports_complex(reduceOp):  # noqa: N803 (PyTorch's name)
    """Whether ``reduceOp`` has a meaning on complex tensors (those reduce as pairs of reals,
    so an order or bitwise reduction does not)."""
    op = reduceOp.op if isinstance(reduceOp, ReduceOp) else reduceOp
    return op not in (ReduceOp.MAX, ReduceOp.MIN, ReduceOp.PRODUCT, ReduceOp.BAND, ReduceOp.BOR,
                      ReduceOp.BXOR)


def _op_name(op):
    if isinstance(op, ReduceOp):
        op = op.op
    if not isinstance(op, ReduceOp.RedOpType) or op.name == "PREMUL_SUM":
        raise ValueError(f"Unsupported ReduceOp {op}")
    return op.name


class ProcessGroup:
    """A communicator over some ranks; ``rank()``/``size()`` are this process's place in it."""

    def __init__(self, comm, backend, global_ranks, store, timeout, world):
        self._comm = comm
        self._backend = Backend(backend)
        self._device_backends = _device_backends(self._backend)
        self._nccl = {}  # device index -> NCCL communicator, made at first use
        self.global_ranks = list(global_ranks)
        self.store = store
        self.timeout_s = timeout.total_seconds()
        self.world_size = world[1]  # of the default group: for naming missing ranks
        self.global_rank = world[0]
        self.group_name = ""
        self.group_desc = "undefined"
        self.bound_device_id = None  # the device of init_process_group(device_id=...)

    def rank(self):
        return self._comm.Get_rank()

    def size(self):
        return self._comm.Get_size()

    def name(self):
        return self._backend

    def _get_backend_name(self):
        return str(self._backend)

    def __repr__(self):
        return f"ProcessGroup(backend={self._backend!r}, rank={self.rank()}, size={self.size()})"


class GroupMember:
    WORLD = None
    NON_GROUP_MEMBER = object()


class group:  # noqa: N801 (PyTorch's name)
    WORLD = None


class _World:
    default_pg = None
    groups = []
    # groups named by number since the default group was made (PyTorch's _world.group_count)
    group_count = 0


def _set_world(pg):
    _World.default_pg = pg
    GroupMember.WORLD = pg
    group.WORLD = pg


# --- state queries

def is_available():
    """Whether the MPI engine (mpi4py) can be imported."""
    return _mpi.available()


def is_mpi_available():
    return _mpi.available()


def is_gloo_available():
    return _mpi.available()


def is_nccl_available():
    return _nccl.available()


def is_ucc_available():
    """Whether the UCC backend is available: never in ember (MPI carries CPU tensors)."""
    return False


def is_xccl_available():
    """Whether the XCCL backend (Intel GPUs) is available: never in ember."""
    return False


def _single_backend_available(name):
    name = str(name).lower()
    check = globals().get(f"is_{name}_available")
    if check is not None:
        return check()
    return name in Backend.backend_list


def is_backend_available(backend):
    """Whether ``backend`` (a name, or ``"cpu:gloo,cuda:nccl"`` naming one per device) can
    run here."""
    return all(_single_backend_available(name)
               for name in _device_backends(Backend(backend)).values())


def get_default_backend_for_device(device):
    """The backend a process group uses for ``device``'s type by default (lower case)."""
    backend = Backend.default_device_backend_map.get(ember.device(device).type)
    if backend is None:
        raise ValueError(f"Default backend not registered for device : {device}")
    return backend


def get_pg_count():
    """The number of process groups made since the default one (that one included), as
    PyTorch counts them: groups made with ``use_local_synchronization=True`` or by
    ``split_group`` are not counted, and destroying a group other than the default one does
    not uncount it."""
    return _World.group_count


def get_node_local_rank(fallback_rank=None):
    """This process's rank on its machine: ``LOCAL_RANK`` (the launcher sets it), else
    ``fallback_rank``."""
    if "LOCAL_RANK" in os.environ:
        return int(os.environ["LOCAL_RANK"])
    if fallback_rank is not None:
        return int(fallback_rank)
    raise RuntimeError(
        "LOCAL_RANK is not in the environment. Consider passing fallback_rank to allow "
        "`get_node_local_rank` to work, assuming you are not running in a multi-device context "
        "and want the code to run locally instead.")


# --- debug level (TORCH_DISTRIBUTED_DEBUG)

class DebugLevel(enum.Enum):
    """How much ``torch.distributed`` checks and reports: ``OFF``, ``INFO`` or ``DETAIL``
    (DistributedDataParallel names the parameters that got no gradient from ``INFO`` on)."""
    OFF = 0
    INFO = 1
    DETAIL = 2

    def __int__(self):
        return self.value

    __index__ = __int__


_debug_level = DebugLevel.OFF


def get_debug_level():
    """The debug level of the ``torch.distributed`` package."""
    return _debug_level


def set_debug_level(level):
    """Set the debug level of the ``torch.distributed`` package (a ``DebugLevel``)."""
    global _debug_level
    if not isinstance(level, DebugLevel):
        raise TypeError(f"set_debug_level(): incompatible function arguments. The following "
                        f"argument types are supported:\n    1. (arg0: "
                        f"ember.distributed.DebugLevel) -> None\n\nInvoked with: {level!r}")
    _debug_level = level


def set_debug_level_from_env():
    """Set the debug level from the ``TORCH_DISTRIBUTED_DEBUG`` environment variable (``OFF``
    when it is not set)."""
    value = os.environ.get("TORCH_DISTRIBUTED_DEBUG")
    if value is None:
        set_debug_level(DebugLevel.OFF)
        return
    level = DebugLevel.__members__.get(value.upper())
    if level is None:
        raise ValueError("The value of TORCH_DISTRIBUTED_DEBUG must be OFF, INFO, or DETAIL.")
    set_debug_level(level)


def is_initialized():
    return _World.default_pg is not None


def is_torchelastic_launched():
    return os.environ.get("TORCHELASTIC_RUN_ID") is not None


def _get_default_group():
    if _World.default_pg is None:
        raise ValueError("Default process group has not been initialized, please make sure to "
                         "call init_process_group.")
    return _World.default_pg


def _group(g):
    return _get_default_group() if g is None else g


def _not_in_group(g):
    return g is GroupMember.NON_GROUP_MEMBER


def _warn_not_in_group(op_name):
    warnings.warn(f"Running {op_name} on global rank {get_rank()} which does not belong to the "
                  f"given group.")


def get_rank(group=None):
    if _not_in_group(group):
        return -1
    return _group(group).rank()


def get_world_size(group=None):
    if _not_in_group(group):
        return -1
    return _group(group).size()


def get_backend(group=None):
    if _not_in_group(group):
        raise ValueError("Invalid process group specified")
    return _group(group)._backend


def get_process_group_ranks(group):
    return list(_group(group).global_ranks)


def get_global_rank(group, group_rank):
    g = _group(group)
    if not 0 <= group_rank < g.size():
        raise ValueError(f"Group rank {group_rank} is not part of group {g}")
    return g.global_ranks[group_rank]


def get_group_rank(group, global_rank):
    g = _group(group)
    try:
        return g.global_ranks.index(global_rank)
    except ValueError:
        raise ValueError(f"Global rank {global_rank} is not part of group {g}") from None


# --- init

def _env(name, what):
    v = os.environ.get(name)
    if v is None:
        raise ValueError(f"Error initializing torch.distributed using env:// rendezvous: "
                         f"environment variable {name} expected, but not set")
    return v


def init_process_group(backend=None, init_method=None, timeout=None, world_size=-1, rank=-1,
                       store=None, group_name="", pg_options=None, device_id=None):
    """Join this process to the others (PyTorch's signature). ``backend`` ``"gloo"``/``"mpi"``
    (or None) runs on MPI; rendezvous by ``init_method`` (``env://`` default, ``tcp://``,
    ``file://``) or ``store``; under ``mpiexec`` without ``RANK`` the MPI world is the group."""
    if _World.default_pg is not None:
        raise ValueError("trying to initialize the default process group twice!")
    if store is not None and init_method is not None:
        raise ValueError("Cannot specify both init_method and store.")
    device_id = _check_device_id(device_id)
    if backend is None and device_id is not None:
        backend = Backend.default_device_backend_map.get(device_id.type)
    backend = Backend(backend or _default_backend())
    for name in _device_backends(backend).values():
        if name == "nccl":
            _nccl.check_usable()
        elif name not in ("gloo", "mpi"):
            raise RuntimeError(f"Invalid backend: '{name}'")
    if timeout is None:
        timeout = default_pg_timeout
    elif not isinstance(timeout, timedelta):
        raise TypeError(f"Expected timeout argument to be of type datetime.timedelta, got "
                        f"{type(timeout)}")
    MPI = _mpi.mpi()

    if store is None:
        env_has_rank = "RANK" in os.environ or rank != -1
        url = init_method or "env://"
        if url == "env://" and not env_has_rank and MPI.COMM_WORLD.Get_size() > 1:
            # started by mpiexec alone: the MPI world is the group (PyTorch's mpi backend)
            rank, world_size = MPI.COMM_WORLD.Get_rank(), MPI.COMM_WORLD.Get_size()
        else:
            store, rank, world_size = _rendezvous(url, rank, world_size, timeout)
    else:
        if rank < 0 or world_size < 1:
            raise ValueError("rank and world_size must be given with a store")
    comm = _mpi.connect(store, rank, world_size, timeout.total_seconds())
    pg = ProcessGroup(comm, backend, range(world_size), store, timeout, (rank, world_size))
    pg.group_name = _next_group_name()
    if group_name:
        pg.group_name = group_name
    pg.group_desc = "default_pg"
    pg.bound_device_id = device_id
    _set_world(pg)
    _World.groups = [pg]


def _check_device_id(device_id):
    """``init_process_group``'s ``device_id`` as a device with an index on the accelerator
    (an int is an index on it), or PyTorch's error."""
    if device_id is None:
        return None
    acc = ember.accelerator.current_accelerator()
    if isinstance(device_id, int):
        if acc is None:
            raise ValueError("device_id is an int, but no accelerator support is found from the "
                             "current compilation. Please use a different compiled version that "
                             "supports your accelerator.")
        device_id = ember.device(acc.type, device_id)
    if device_id.type == "cpu":
        raise ValueError("init_process_group device_id parameter must be an accelerator with an "
                         "index")
    if acc is None or device_id.type != acc.type:
        raise ValueError(f"device_id {device_id} does not match the current compilation's "
                         f"accelerator support: {acc}. Please use a different compiled version "
                         f"that supports your accelerator.")
    if device_id.index is None:
        raise ValueError("Please use a device_id with index.")
    if device_id.index >= ember.accelerator.device_count():
        raise ValueError(f"device_id {device_id} is out of range. Please use a device index less "
                         f"than the number of accelerators available: "
                         f"{ember.accelerator.device_count()}.")
    return device_id


def _next_group_name():
    """The next numbered group name (PyTorch's unhashed names: "0" for the default group)."""
    name = str(_World.group_count)
    _World.group_count += 1
    return name


def _hashed_group_name(ranks):
    """A group name from its ranks (PyTorch's names for groups made by their members alone)."""
    text = "_".join(map(str, ranks)) + f"_{len(_World.groups)}"
    return hashlib.sha1(text.encode(), usedforsecurity=False).hexdigest()


def _default_backend():
    """PyTorch's default: gloo for CPU tensors, and nccl for CUDA tensors where it can run."""
    try:
        _nccl.check_usable()
    except RuntimeError:
        return "gloo"
    return "cpu:gloo,cuda:nccl"


def _device_backends(backend):
    """``{device type: backend name}``: ``"gloo"``/``"mpi"`` serve CPU and CUDA tensors,
    ``"nccl"`` CUDA tensors only, ``"cpu:gloo,cuda:nccl"`` names each."""
    text = str(backend)
    if ":" not in text:
        return {"cuda": text} if text == "nccl" else {"cpu": text, "cuda": text}
    pairs = {}
    for part in text.split(","):
        device, _, name = part.partition(":")
        pairs[device.strip()] = name.strip().lower()
    return pairs


def _on_nccl(pg, tensor):
    """Whether a collective on ``tensor`` runs on NCCL; a device the group has no backend for
    gets PyTorch's error."""
    device = tensor._device.type
    name = pg._device_backends.get(device)
    if name is None:
        raise RuntimeError(f"No backend type associated with device type {device}")
    return name == "nccl"


def _rendezvous(url, rank, world_size, timeout):
    u = urlparse(url)
    q = {k: v[0] for k, v in parse_qs(u.query).items()}
    if "rank" in q:
        rank = int(q["rank"])
    if "world_size" in q:
        world_size = int(q["world_size"])
    if u.scheme == "env":
        if rank == -1:
            rank = int(_env("RANK", "rank"))
        if world_size == -1:
            world_size = int(_env("WORLD_SIZE", "world size"))
        if world_size == 1:
            return HashStore(timeout), rank, world_size
        host = _env("MASTER_ADDR", "master address")
        port = int(_env("MASTER_PORT", "master port"))
    elif u.scheme == "tcp":
        host, port = u.hostname, u.port
        if port is None:
            raise ValueError(f"port number missing in {url}")
    elif u.scheme == "file":
        if rank == -1 or world_size == -1:
            raise ValueError("rank and world_size must be given for file:// rendezvous")
        return FileStore(u.path, world_size, timeout), rank, world_size
    else:
        raise RuntimeError(f"No rendezvous handler for {u.scheme}://")
    if rank < 0 or world_size < 1:
        raise ValueError(f"rank ({rank}) and world_size ({world_size}) must be given")
    # The master's server must survive a peer's connection attempt before it is up: the
    # clients retry until the timeout.
    st = TCPStore(host, port, world_size, is_master=(rank == 0), timeout=timeout, rank=rank)
    return st, rank, world_size


def destroy_process_group(group=None):
    if group is None or group is _World.default_pg:
        pg = _get_default_group()
        for g in _World.groups:
            _nccl.destroy(g)
            if g._comm is not None:
                g._comm.Free()
                g._comm = None
        if isinstance(pg.store, TCPStore):
            # rank 0 hosts the store: leave it up until every rank is done with it
            try:
                pg.store.add("ember/destroyed", 1)
                if pg.global_rank == 0:
                    import time
                    deadline = time.monotonic() + 5
                    while (int(pg.store.add("ember/destroyed", 0)) < pg.world_size
                           and time.monotonic() < deadline):
                        time.sleep(0.005)
                pg.store.close()
            except (OSError, DistNetworkError):
                pass
        _set_world(None)
        _World.groups = []
        _World.group_count = 0
    else:
        _nccl.destroy(group)
        if group._comm is not None:
            group._comm.Free()
            group._comm = None
        if group in _World.groups:
            _World.groups.remove(group)


def new_group(ranks=None, timeout=None, backend=None, pg_options=None,
              use_local_synchronization=False, group_desc=None, device_id=None,
              sort_ranks=True):
    """A group over ``ranks`` (global ranks, in their order when not ``sort_ranks``). Every
    process of the world must call it, except with ``use_local_synchronization``: then only
    the members do, and the others get None."""
    world = _get_default_group()
    if device_id is None:
        device_id = world.bound_device_id
    elif world.bound_device_id is not None and device_id != world.bound_device_id:
        raise AssertionError("Mismatched bound device between new pg and the default pg.")
    backend = Backend(backend or world._backend)
    n = world.size()
    if use_local_synchronization:
        if backend == Backend.MPI:
            raise ValueError("MPI backend doesn't support use_local_synchronization=True")
        if ranks is not None and world.global_rank not in ranks:
            return None
    if ranks is None:
        ranks = list(range(n))
    else:
        ranks = [int(r) for r in ranks]
        if sort_ranks:
            ranks.sort()
        if len(set(ranks)) != len(ranks):
            raise ValueError(f"ranks list must not contain duplicate entries, got {ranks}")
        if len(ranks) > n:
            raise ValueError("the new group's world size should be less or equal to the world "
                             "size set by init_process_group")
        for r in ranks:
            if r < 0 or r >= n:
                raise ValueError(f"Rank {r} is out of range. Valid ranks are 0 to {n - 1} "
                                 f"(world_size={n})")
    name = _hashed_group_name(ranks) if use_local_synchronization else _next_group_name()
    everyone = world._comm.Get_group()
    members = everyone.Incl(ranks)
    if use_local_synchronization:
        # collective over the members only (MPI_Comm_create_group)
        comm = world._comm.Create_group(members)
    else:
        comm = world._comm.Create(members)
    members.Free()
    everyone.Free()
    if comm == _mpi.mpi().COMM_NULL:
        return GroupMember.NON_GROUP_MEMBER
    t = timeout if timeout is not None else timedelta(seconds=world.timeout_s)
    pg = ProcessGroup(comm, backend, ranks, world.store, t,
                      (world.global_rank, world.world_size))
    pg.group_name = name
    pg.group_desc = group_desc or "undefined"
    pg.bound_device_id = device_id
    _World.groups.append(pg)
    return pg


def new_subgroups(group_size=None, group=None, timeout=None, backend=None, pg_options=None,
                  group_desc=None):
    """Split ``group`` (the world by default) into consecutive subgroups of ``group_size``
    ranks (by default the CUDA devices of a machine); returns ``(this rank's subgroup, every
    subgroup)``. Every process of the world must call it."""
    if group_size is None:
        if not ember.cuda.is_available():
            raise ValueError("Default group size only takes effect when CUDA is available.If "
                             "your subgroup using a backend that does not depend on CUDA,please "
                             "pass in 'group_size' correctly.")
        group_size = ember.cuda.device_count()
    if group_size <= 0:
        raise ValueError(f"The arg 'group_size' ({group_size}) must be positive")
    world_size = get_world_size(group=group)
    if world_size < group_size:
        raise ValueError(f"The arg 'group_size' ({group_size}) must not exceed the world size "
                         f"({world_size})")
    if world_size % group_size != 0:
        raise ValueError(f"The world size ({world_size}) must be divisible by '{group_size=}'")
    ranks = get_process_group_ranks(group)
    return new_subgroups_by_enumeration(
        [ranks[i:i + group_size] for i in range(0, len(ranks), group_size)], timeout=timeout,
        backend=backend, pg_options=pg_options, group_desc=group_desc)


def new_subgroups_by_enumeration(ranks_per_subgroup_list, timeout=None, backend=None,
                                 pg_options=None, group_desc=None):
    """One group for each list of global ranks (the lists must not overlap; a rank may be in
    none); returns ``(this rank's subgroup or None, every subgroup)``. Every process of the
    world must call it."""
    if ranks_per_subgroup_list is None or len(ranks_per_subgroup_list) == 0:
        raise ValueError("The arg 'ranks_per_subgroup_list' cannot be empty")
    subgroups = []
    cur_subgroup = None
    owner = {}  # rank -> the list that put it in a subgroup
    my_rank = get_rank()
    for ranks in ranks_per_subgroup_list:
        subgroup = new_group(ranks=ranks, timeout=timeout, backend=backend,
                             pg_options=pg_options, group_desc=group_desc)
        subgroups.append(subgroup)
        for rank in ranks:
            if rank in owner:
                raise ValueError(f"Rank {rank} has appeared in both subgroup {owner[rank]} and "
                                 f"{ranks}")
            owner[rank] = ranks
            if rank == my_rank:
                cur_subgroup = subgroup
    return cur_subgroup, subgroups


def split_group(parent_pg=None, split_ranks=None, timeout=None, pg_options=None,
                group_desc=None, backend=None):
    """Split ``parent_pg`` (the world by default) into the groups ``split_ranks`` lists (ranks
    of the parent group, not overlapping); returns this rank's group, or None when it is in
    none. As in PyTorch, it needs the default group bound to an accelerator device
    (``init_process_group(device_id=...)``) and a parent backend for that device that can
    split (gloo, nccl). Every rank of the parent group must call it."""
    if split_ranks is None or len(split_ranks) == 0:
        raise ValueError("split_ranks cannot be None or empty")
    world = _get_default_group()
    device_id = world.bound_device_id
    if device_id is None:
        raise RuntimeError("No device associated with the default pg, not safe to split any "
                           "process groups")
    parent = parent_pg or world
    if parent not in _World.groups:
        raise ValueError(f"Group {parent} is not registered")
    if world.global_rank not in parent.global_ranks:
        raise ValueError(f"Global rank {world.global_rank} is not part of the parent group "
                         f"{parent}")
    acc = ember.accelerator.current_accelerator()
    if (not ember.accelerator.is_available()
            or parent._device_backends.get(acc.type) not in ("gloo", "nccl")):
        raise RuntimeError("No backend for the parent process group or its backend does not "
                           "support splitting")
    pg_backend = parent._backend
    if backend is not None:
        parent_backends = parent._device_backends
        for device_type, name in _device_backends(Backend(backend)).items():
            if device_type not in parent_backends:
                raise ValueError(f"Requested backend for device '{device_type}' is not present "
                                 f"in the parent process group (parent backends: "
                                 f"{parent_backends})")
            if parent_backends[device_type] != name:
                raise ValueError(f"Backend mismatch for device '{device_type}': parent has "
                                 f"'{parent_backends[device_type]}', requested '{name}'. "
                                 f"Backend names must match exactly when filtering split_group "
                                 f"backends.")
        pg_backend = Backend(str(backend))
    # the first list holding this rank is its group; the lists after it are not looked at
    my_rank = parent.rank()
    my_group, color = split_ranks[0], None
    for i, ranks in enumerate(split_ranks):
        if len(ranks) == 0:
            raise ValueError("the split group cannot be empty")
        if len(ranks) > world.size():
            raise ValueError("the split group's size should be less or equal to the world_size "
                             "set by init_process_group")
        if len(ranks) != len(set(ranks)):
            raise ValueError("the split group cannot have duplicate ranks")
        ranks = sorted(ranks)
        if my_rank in ranks:
            my_group, color = ranks, i
            break
    name = _hashed_group_name(my_group)
    MPI = _mpi.mpi()
    comm = parent._comm.Split(MPI.UNDEFINED if color is None else color,
                              my_group.index(my_rank) if color is not None else 0)
    if comm == MPI.COMM_NULL:
        return None
    t = timeout if timeout is not None else timedelta(seconds=world.timeout_s)
    pg = ProcessGroup(comm, pg_backend, [parent.global_ranks[r] for r in my_group], world.store,
                      t, (world.global_rank, world.world_size))
    pg.group_name = name
    pg.group_desc = group_desc or "undefined"
    pg.bound_device_id = device_id
    _World.groups.append(pg)
    return pg


# --- tensors <-> buffers

def _check_tensor(t, name="tensor"):
    from .._tensor import Tensor
    if not isinstance(t, Tensor):
        raise TypeError(f"Invalid function argument. Expected parameter `{name}` of type "
                        f"torch.Tensor\n             but got {type(t)} instead.")
    if t.device.type not in ("cpu", "cuda"):
        raise RuntimeError(f"ember's MPI backend works on CPU and CUDA tensors; got a "
                           f"{t.device.type} tensor")


def _check_list(ts, name):
    if not isinstance(ts, (list, tuple)):
        raise TypeError(f"Invalid function argument. Expected parameter `{name}` of type "
                        f"List[torch.Tensor]\n             but got {type(ts)} instead.")
    for t in ts:
        _check_tensor(t, name)


def _buffer(t, reducing=False):
    """``(array, writeback)``: a contiguous array MPI can use for ``t``. For a contiguous tensor
    of a dtype MPI knows it is ``t``'s own memory; otherwise a staged copy that ``writeback``
    copies into ``t`` (bfloat16 reduces in float32). A CUDA tensor goes through host memory, as
    with PyTorch's gloo (the simulated device's memory is host memory already)."""
    if t._device.type == "cuda":
        from .._kernels.cuda import host_array
        a, staged = host_array(t)
        if staged or (reducing and a.dtype.name == "bfloat16") \
                or not a.flags.c_contiguous:
            staged = np.ascontiguousarray(a, np.float32 if a.dtype.name == "bfloat16" else None)

            def writeback():
                with ember.no_grad():
                    t.copy_(ember.from_numpy(staged.reshape(t.shape)).to(t.dtype))
            return staged, writeback
        return a, (lambda: t._bump_version())
    a = t._nd()
    if reducing and (a.dtype.name == "bfloat16"):
        staged = a.astype(np.float32)
    elif a.flags.c_contiguous:
        return a, (lambda: t._bump_version())
    else:
        staged = np.ascontiguousarray(a)

    def writeback():
        with ember.no_grad():
            t.copy_(ember.from_numpy(staged.reshape(t.shape)))

    return staged, writeback


def _input(t):
    if t._device.type == "cuda":
        from .._kernels.cuda import host_array
        a = host_array(t)[0]
        return a if a.flags.c_contiguous else np.ascontiguousarray(a)
    a = t._nd()
    return a if a.flags.c_contiguous else np.ascontiguousarray(a)


def _run(pg, work, async_op):
    if async_op:
        return work
    work.wait()
    return None


def _wait_quiet(pg, reqs, name):
    Work(reqs, pg, name).wait()


def _check_same(pg, name, numel, dtype):
    """All ranks call a collective with the same number of elements and dtype, or each raises
    an error naming every rank's size (MPI would truncate, corrupt or hang)."""
    from .._core import dtype as D
    codes = list(D.ALL_DTYPES)
    mine = np.array([numel, codes.index(dtype)], dtype=np.int64)
    every = np.empty((pg.size(), 2), dtype=np.int64)
    _wait_quiet(pg, [pg._comm.Iallgather(mine, every)], name)
    if (every != every[0]).any():
        per_rank = ", ".join(f"rank {pg.global_ranks[r]}: {int(every[r, 0])} x "
                             f"{codes[int(every[r, 1])]}" for r in range(pg.size()))
        raise RuntimeError(f"{name}: the tensors differ across ranks in "
                           f"{'size' if (every[:, 0] != every[0, 0]).any() else 'dtype'} "
                           f"({per_rank})")


def _avg_finish(arr, n, then):
    def finish():
        if arr.dtype.kind in "fc":
            np.divide(arr, n, out=arr)
        else:
            np.floor_divide(arr, n, out=arr)
        then()
    return finish


def _group_rank(pg, global_rank, group_rank, default=0):
    """The rank in ``pg`` that a global rank or a group rank (not both) names; neither names
    the global rank ``default``, or is an error when ``default`` is None."""
    if group_rank is not None:
        if global_rank is not None:
            raise ValueError("Can't specify both group_rank and global_rank")
        return group_rank
    if global_rank is None:
        if default is None:
            raise ValueError("Must specify global_rank or group_rank")
        global_rank = default
    return get_group_rank(pg, global_rank) if pg is not _World.default_pg else global_rank


# --- collectives

def all_reduce(tensor, op=ReduceOp.SUM, group=None, async_op=False):
    _check_tensor(tensor)
    if _not_in_group(group):
        return _warn_not_in_group("all_reduce")
    pg = _group(group)
    opn = _op_name(op)
    if tensor.is_complex() and not supports_complex(op):
        raise ValueError(f"all_reduce does not support {op} on complex tensors")
    _check_same(pg, "all_reduce", tensor.numel(), tensor.dtype)
    return _run(pg, _all_reduce_work(pg, tensor, opn), async_op)


def _all_reduce_work(pg, tensor, opn, name="all_reduce"):
    """The all-reduce ``Work`` on the engine of ``tensor``'s device, without the cross-rank
    checks (``all_reduce`` made them; DistributedDataParallel's buckets agree by
    construction)."""
    if _on_nccl(pg, tensor):
        return _nccl.all_reduce(pg, tensor, opn)
    return _allreduce_array(pg, tensor, opn, name)


def _allreduce_array(pg, tensor, opn, name="all_reduce"):
    arr, writeback = _buffer(tensor, reducing=True)
    MPI = _mpi.mpi()
    req = pg._comm.Iallreduce(MPI.IN_PLACE, _mpi.mpi_array(arr), _mpi.reduce_op(opn, arr.dtype))
    fin = _avg_finish(arr, pg.size(), writeback) if opn == "AVG" else writeback
    return Work([req], pg, name, fin, keep=(arr, tensor), result=[tensor])


def broadcast(tensor, src=None, group=None, async_op=False, group_src=None):
    _check_tensor(tensor)
    if _not_in_group(group):
        return _warn_not_in_group("broadcast")
    pg = _group(group)
    root = _group_rank(pg, src, group_src, None)
    _check_same(pg, "broadcast", tensor.numel(), tensor.dtype)
    if _on_nccl(pg, tensor):
        return _run(pg, _nccl.broadcast(pg, tensor, root), async_op)
    arr, writeback = _buffer(tensor)
    req = pg._comm.Ibcast(_mpi.mpi_array(arr), root=root)
    return _run(pg, Work([req], pg, "broadcast", writeback, keep=(arr,), result=[tensor]),
                async_op)


def reduce(tensor, dst=None, op=ReduceOp.SUM, group=None, async_op=False, group_dst=None):
    _check_tensor(tensor)
    if _not_in_group(group):
        return _warn_not_in_group("reduce")
    pg = _group(group)
    root = _group_rank(pg, dst, group_dst, None)
    opn = _op_name(op)
    _check_same(pg, "reduce", tensor.numel(), tensor.dtype)
    if _on_nccl(pg, tensor):
        return _run(pg, _nccl.reduce(pg, tensor, root, opn), async_op)
    arr, writeback = _buffer(tensor, reducing=True)
    MPI = _mpi.mpi()
    mop = _mpi.reduce_op(opn, arr.dtype)
    if pg.rank() == root:
        req = pg._comm.Ireduce(MPI.IN_PLACE, _mpi.mpi_array(arr), mop, root=root)
        fin = _avg_finish(arr, pg.size(), writeback) if opn == "AVG" else writeback
    else:
        req = pg._comm.Ireduce(_mpi.mpi_array(arr), None, mop, root=root)
        fin = None
    return _run(pg, Work([req], pg, "reduce", fin, keep=(arr,), result=[tensor]), async_op)


def _scatter_back(flat, outs):
    """A finish that copies the row ``i`` of ``flat`` into ``outs[i]``."""
    def finish():
        with ember.no_grad():
            for i, o in enumerate(outs):
                o.copy_(ember.from_numpy(flat[i].reshape(o.shape)))
    return finish


def all_gather(tensor_list, tensor, group=None, async_op=False):
    _check_list(tensor_list, "tensor_list")
    _check_tensor(tensor)
    if _not_in_group(group):
        return _warn_not_in_group("all_gather")
    pg = _group(group)
    if len(tensor_list) != pg.size():
        raise ValueError(f"all_gather: tensor_list has {len(tensor_list)} tensors for a group of "
                         f"{pg.size()} ranks")
    for o in tensor_list:
        if o.numel() != tensor.numel():
            raise RuntimeError(f"all_gather: an output tensor has {o.numel()} elements but the "
                               f"input has {tensor.numel()}")
    _check_same(pg, "all_gather", tensor.numel(), tensor.dtype)
    if _on_nccl(pg, tensor):
        return _run(pg, _nccl.all_gather(pg, tensor_list, tensor), async_op)
    src = _input(tensor)
    flat = np.empty((pg.size(), src.size), dtype=src.dtype)
    req = pg._comm.Iallgather(_mpi.mpi_array(src.reshape(-1)), _mpi.mpi_array(flat))
    return _run(pg, Work([req], pg, "all_gather", _scatter_back(flat, tensor_list),
                         keep=(src, flat), result=[list(tensor_list)]), async_op)


def _deprecated(name, replacement):
    warnings.warn(f"`torch.distributed.{name}` is deprecated. Please use "
                  f"`torch.distributed.{replacement}` instead.", FutureWarning, stacklevel=3)


def all_gather_into_tensor(output_tensor, input_tensor, group=None, async_op=False):
    """Deprecated (PyTorch 2.13): :func:`all_gather_single`."""
    _deprecated("all_gather_into_tensor", "all_gather_single")
    return all_gather_single(output_tensor, input_tensor, group, async_op)


def all_gather_single(output_tensor, input_tensor, group=None, async_op=False):
    """Gather every rank's ``input_tensor`` (the same size on each) into ``output_tensor``,
    their concatenation or their stack along the first dimension."""
    _check_tensor(output_tensor, "output_tensor")
    _check_tensor(input_tensor, "input_tensor")
    if _not_in_group(group):
        return _warn_not_in_group("all_gather_single")
    pg = _group(group)
    if output_tensor.numel() != input_tensor.numel() * pg.size():
        raise ValueError(f"output tensor size must be equal to world_size times input tensor "
                         f"size (output {output_tensor.numel()}, input {input_tensor.numel()}, "
                         f"world_size {pg.size()})")
    _check_same(pg, "all_gather_single", input_tensor.numel(), input_tensor.dtype)
    if _on_nccl(pg, input_tensor):
        return _run(pg, _nccl.all_gather_into_tensor(pg, output_tensor, input_tensor), async_op)
    src = _input(input_tensor)
    out, writeback = _buffer(output_tensor)
    req = pg._comm.Iallgather(_mpi.mpi_array(src.reshape(-1)), _mpi.mpi_array(out))
    return _run(pg, Work([req], pg, "all_gather_single", writeback, keep=(src, out),
                         result=[output_tensor]), async_op)


def gather(tensor, gather_list=None, dst=None, group=None, async_op=False, group_dst=None):
    _check_tensor(tensor)
    if _not_in_group(group):
        return _warn_not_in_group("gather")
    pg = _group(group)
    root = _group_rank(pg, dst, group_dst)
    if pg.rank() == root:
        if not gather_list:
            raise ValueError("Argument ``gather_list`` must be specified on destination rank.")
        if len(gather_list) != pg.size():
            raise ValueError(f"gather: gather_list has {len(gather_list)} tensors for a group of "
                             f"{pg.size()} ranks")
        _check_list(gather_list, "gather_list")
    elif gather_list:
        raise ValueError("Argument ``gather_list`` must NOT be specified on non-destination "
                         "ranks.")
    _check_same(pg, "gather", tensor.numel(), tensor.dtype)
    if _on_nccl(pg, tensor):
        return _run(pg, _nccl.gather(pg, tensor, gather_list, root), async_op)
    src = _input(tensor).reshape(-1)
    if pg.rank() == root:
        flat = np.empty((pg.size(), src.size), dtype=src.dtype)
        req = pg._comm.Igather(_mpi.mpi_array(src), _mpi.mpi_array(flat), root=root)
        work = Work([req], pg, "gather", _scatter_back(flat, gather_list), keep=(src, flat),
                    result=[list(gather_list)])
    else:
        req = pg._comm.Igather(_mpi.mpi_array(src), None, root=root)
        work = Work([req], pg, "gather", keep=(src,), result=[])
    return _run(pg, work, async_op)


def scatter(tensor, scatter_list=None, src=None, group=None, async_op=False, group_src=None):
    _check_tensor(tensor)
    if _not_in_group(group):
        return _warn_not_in_group("scatter")
    pg = _group(group)
    root = _group_rank(pg, src, group_src)
    _check_same(pg, "scatter", tensor.numel(), tensor.dtype)
    if pg.rank() == root:
        if not scatter_list:
            raise ValueError("Argument ``scatter_list`` must be specified on source rank.")
        _check_list(scatter_list, "scatter_list")
        if len(scatter_list) != pg.size():
            raise ValueError(f"scatter: scatter_list has {len(scatter_list)} tensors for a group "
                             f"of {pg.size()} ranks")
        for t in scatter_list:
            if t.numel() != tensor.numel():
                raise RuntimeError(f"scatter: a tensor of scatter_list has {t.numel()} elements "
                                   f"but the output tensor has {tensor.numel()}")
    elif scatter_list:
        raise ValueError("Argument ``scatter_list`` must NOT be specified on non-source ranks.")
    if _on_nccl(pg, tensor):
        return _run(pg, _nccl.scatter(pg, tensor, scatter_list, root), async_op)
    out, writeback = _buffer(tensor)
    if pg.rank() == root:
        flat = np.stack([_input(t).reshape(-1) for t in scatter_list])
        req = pg._comm.Iscatter(_mpi.mpi_array(flat), _mpi.mpi_array(out), root=root)
        keep = (flat, out)
    else:
        req = pg._comm.Iscatter(None, _mpi.mpi_array(out), root=root)
        keep = (out,)
    return _run(pg, Work([req], pg, "scatter", writeback, keep=keep, result=[tensor]), async_op)


def reduce_scatter(output, input_list, op=ReduceOp.SUM, group=None, async_op=False):
    _check_tensor(output, "output")
    _check_list(input_list, "input_list")
    if _not_in_group(group):
        return _warn_not_in_group("reduce_scatter")
    pg = _group(group)
    if len(input_list) != pg.size():
        raise ValueError(f"reduce_scatter: input_list has {len(input_list)} tensors for a group "
                         f"of {pg.size()} ranks")
    for t in input_list:
        if t.numel() != output.numel():
            raise RuntimeError(f"reduce_scatter: an input tensor has {t.numel()} elements but the "
                               f"output has {output.numel()}")
    if _on_nccl(pg, output):
        _check_same(pg, "reduce_scatter", output.numel(), output.dtype)
        return _run(pg, _nccl.reduce_scatter(pg, output, input_list, _op_name(op)), async_op)
    return _reduce_scatter(pg, output, [_input(t).reshape(-1) for t in input_list], op,
                           "reduce_scatter", async_op)


def reduce_scatter_tensor(output, input, op=ReduceOp.SUM, group=None, async_op=False):
    """Deprecated (PyTorch 2.13): :func:`reduce_scatter_single`."""
    _deprecated("reduce_scatter_tensor", "reduce_scatter_single")
    return reduce_scatter_single(output, input, op, group, async_op)


def reduce_scatter_single(output, input, op=ReduceOp.SUM, group=None, async_op=False):
    """Reduce ``input`` (the concatenation or the stack of one ``output``-sized chunk per
    rank) over the ranks; rank ``i`` gets chunk ``i`` of the result in ``output``."""
    _check_tensor(output, "output")
    _check_tensor(input, "input")
    if _not_in_group(group):
        return _warn_not_in_group("reduce_scatter_single")
    pg = _group(group)
    if input.numel() != output.numel() * pg.size():
        raise ValueError(f"input tensor must be the same size as output size times world size "
                         f"(input {input.numel()}, output {output.numel()}, world_size "
                         f"{pg.size()})")
    if _on_nccl(pg, output):
        _check_same(pg, "reduce_scatter_single", output.numel(), output.dtype)
        return _run(pg, _nccl.reduce_scatter_tensor(pg, output, input, _op_name(op)), async_op)
    flat = _input(input).reshape(pg.size(), -1)
    return _reduce_scatter(pg, output, list(flat), op, "reduce_scatter_single", async_op)


def _reduce_scatter(pg, output, rows, op, name, async_op):
    opn = _op_name(op)
    _check_same(pg, name, output.numel(), output.dtype)
    send = np.stack(rows) if rows else np.empty((0,))
    out, writeback = _buffer(output, reducing=True)
    if send.dtype != out.dtype:  # bfloat16 reduces in float32
        send = send.astype(out.dtype)
    req = pg._comm.Ireduce_scatter_block(_mpi.mpi_array(send), _mpi.mpi_array(out),
                                          _mpi.reduce_op(opn, out.dtype))
    fin = _avg_finish(out, pg.size(), writeback) if opn == "AVG" else writeback
    return _run(pg, Work([req], pg, name, fin, keep=(send, out), result=[output]), async_op)


def _check_split_sizes(pg, send_counts, recv_counts, name):
    """Counts must agree pairwise: what rank i sends to j is what j expects from i."""
    sc = np.asarray(send_counts, dtype=np.int64)
    rc = np.asarray(recv_counts, dtype=np.int64)
    every = np.empty((pg.size(), pg.size()), dtype=np.int64)
    _wait_quiet(pg, [pg._comm.Iallgather(sc, every)], name)
    expected = every[:, pg.rank()]
    if (expected != rc).any():
        bad = [pg.global_ranks[j] for j in range(pg.size()) if expected[j] != rc[j]]
        raise RuntimeError(f"{name}: split sizes disagree across ranks: rank "
                           f"{pg.global_ranks[pg.rank()]} expects {rc.tolist()} elements from "
                           f"ranks {list(pg.global_ranks)} but they send "
                           f"{expected.tolist()} (mismatch with ranks {bad})")


def _alltoallv(pg, send, send_counts, recv, recv_counts, name, finish, result, async_op):
    MPI = _mpi.mpi()
    sd = np.concatenate([[0], np.cumsum(send_counts)[:-1]]).astype(np.int64)
    rd = np.concatenate([[0], np.cumsum(recv_counts)[:-1]]).astype(np.int64)
    sc = np.asarray(send_counts, dtype=np.int64)
    rc = np.asarray(recv_counts, dtype=np.int64)
    _check_split_sizes(pg, sc, rc, name)
    dt = MPI._typedict[send.dtype.char] if send.dtype.char in MPI._typedict else None
    if dt is None:  # bfloat16 and friends: count bytes
        k = send.dtype.itemsize
        send, recv_m = send.view(np.uint8), recv.view(np.uint8)
        sc, rc, sd, rd = sc * k, rc * k, sd * k, rd * k
        dt = MPI.BYTE
    else:
        recv_m = recv
    req = pg._comm.Ialltoallv([send, (sc, sd), dt], [recv_m, (rc, rd), dt])
    return _run(pg, Work([req], pg, name, finish, keep=(send, recv, sc, rc, sd, rd),
                         result=result), async_op)


def all_to_all_single(output, input, output_split_sizes=None, input_split_sizes=None,
                      group=None, async_op=False):
    _check_tensor(output, "output")
    _check_tensor(input, "input")
    if _not_in_group(group):
        return _warn_not_in_group("all_to_all_single")
    pg = _group(group)
    n = pg.size()
    row_in = input.numel() // max(input.shape[0], 1) if input.dim() else 1
    row_out = output.numel() // max(output.shape[0], 1) if output.dim() else 1

    def counts(splits, t, row, what):
        if splits is None or len(splits) == 0:
            if t.shape[0] % n:
                raise ValueError(f"all_to_all_single: the {what} tensor's first dimension "
                                 f"({t.shape[0]}) is not divisible by the group size ({n})")
            return [t.numel() // n] * n
        if len(splits) != n:
            raise ValueError(f"all_to_all_single: {len(splits)} {what} split sizes for a group of "
                             f"{n} ranks")
        if sum(splits) != t.shape[0]:
            raise ValueError(f"all_to_all_single: {what} split sizes sum to {sum(splits)} but the "
                             f"tensor's first dimension is {t.shape[0]}")
        return [int(s) * row for s in splits]

    sc = counts(input_split_sizes, input, row_in, "input")
    rc = counts(output_split_sizes, output, row_out, "output")
    if _on_nccl(pg, input):
        _check_split_sizes(pg, sc, rc, "all_to_all_single")
        return _run(pg, _nccl.all_to_all_single(pg, output, input, sc, rc), async_op)
    send = _input(input).reshape(-1)
    recv, writeback = _buffer(output)
    return _alltoallv(pg, send, sc, recv.reshape(-1), rc, "all_to_all_single", writeback,
                      [output], async_op)


def all_to_all(output_tensor_list, input_tensor_list, group=None, async_op=False):
    _check_list(output_tensor_list, "output_tensor_list")
    _check_list(input_tensor_list, "input_tensor_list")
    if _not_in_group(group):
        return _warn_not_in_group("all_to_all")
    pg = _group(group)
    if len(input_tensor_list) != pg.size() or len(output_tensor_list) != pg.size():
        raise ValueError(f"all_to_all: the tensor lists must have one tensor per rank "
                         f"({pg.size()})")
    if _on_nccl(pg, input_tensor_list[0]):
        _check_split_sizes(pg, [t.numel() for t in input_tensor_list],
                           [t.numel() for t in output_tensor_list], "all_to_all")
        return _run(pg, _nccl.all_to_all(pg, output_tensor_list, input_tensor_list), async_op)
    send = np.concatenate([_input(t).reshape(-1) for t in input_tensor_list])
    rc = [t.numel() for t in output_tensor_list]
    recv = np.empty(sum(rc), dtype=send.dtype)
    bounds = np.cumsum([0] + rc)

    def finish():
        with ember.no_grad():
            for i, o in enumerate(output_tensor_list):
                o.copy_(ember.from_numpy(recv[bounds[i]:bounds[i + 1]].reshape(o.shape)))

    return _alltoallv(pg, send, [t.numel() for t in input_tensor_list], recv, rc, "all_to_all",
                      finish, [list(output_tensor_list)], async_op)


# --- point to point

def isend(tensor, dst=None, group=None, tag=0, group_dst=None):
    _check_tensor(tensor)
    if _not_in_group(group):
        return _warn_not_in_group("isend")
    pg = _group(group)
    peer = _group_rank(pg, dst, group_dst, None)
    if peer == pg.rank():
        raise ValueError("Invalid destination rank: should not be the same as the rank of the "
                         "current process.")
    if _on_nccl(pg, tensor):
        return _nccl.send(pg, tensor, peer)
    src = _input(tensor).reshape(-1)
    req = pg._comm.Isend(_mpi.mpi_array(src), dest=peer, tag=tag)
    return Work([req], pg, "send", keep=(src,), result=[tensor])


def irecv(tensor, src=None, group=None, tag=0, group_src=None):
    _check_tensor(tensor)
    if _not_in_group(group):
        return _warn_not_in_group("irecv")
    pg = _group(group)
    MPI = _mpi.mpi()
    if _on_nccl(pg, tensor):
        if src is None and group_src is None:
            raise RuntimeError("recv from any source is not supported by the nccl backend: "
                               "name src")
        peer = _group_rank(pg, src, group_src, None)
        work = _nccl.recv(pg, tensor, peer)
        work._source = peer
        return work
    peer = (MPI.ANY_SOURCE if src is None and group_src is None
            else _group_rank(pg, src, group_src, None))
    out, writeback = _buffer(tensor)
    req = pg._comm.Irecv(_mpi.mpi_array(out), source=peer, tag=tag)
    work = Work([req], pg, "recv", writeback, keep=(out,), result=[tensor])
    work._source = peer
    return work


def _check_not_self_rank(pg, rank, what):
    if pg.rank() == rank:
        raise ValueError(f"Invalid {what} rank: {what} rank should not be the same as the rank "
                         f"of the current process.")


def send(tensor, dst=None, group=None, tag=0, group_dst=None):
    if not _not_in_group(group):
        pg = _group(group)
        _check_not_self_rank(pg, _group_rank(pg, dst, group_dst, None), "destination")
    w = isend(tensor, dst, group, tag, group_dst)
    if w is not None:
        w.wait()


def recv(tensor, src=None, group=None, tag=0, group_src=None):
    """Receive into ``tensor``; returns the sender's rank."""
    _check_tensor(tensor)
    if _not_in_group(group):
        _warn_not_in_group("recv")
        return -1
    pg = _group(group)
    if src is None and group_src is None and not _on_nccl(pg, tensor):
        # from any rank: probe for the sender first (with the group's timeout), then receive
        MPI = _mpi.mpi()
        import time
        status = MPI.Status()
        deadline = time.monotonic() + pg.timeout_s
        while not pg._comm.Iprobe(source=MPI.ANY_SOURCE, tag=tag, status=status):
            if time.monotonic() > deadline:
                raise DistBackendError(f"[Rank {pg.global_rank}] recv from any source timed out "
                                       f"after {pg.timeout_s * 1000:.0f} ms")
            time.sleep(0)
        group_src = status.Get_source()
    w = irecv(tensor, src, group, tag, group_src)
    w.wait()
    return pg.global_ranks[w._source]


class P2POp:
    """One operation of ``batch_isend_irecv``."""

    def __init__(self, op, tensor, peer=None, group=None, tag=0, group_peer=None):
        self.op, self.tensor, self.peer, self.group, self.tag = op, tensor, peer, group, tag
        self.group_peer = group_peer


def batch_isend_irecv(p2p_op_list):
    works = []
    for p in p2p_op_list:
        if p.op in (isend, send):
            works.append(isend(p.tensor, p.peer, p.group, p.tag, p.group_peer))
        else:
            works.append(irecv(p.tensor, p.peer, p.group, p.tag, p.group_peer))
    return works


# --- barriers

def barrier(group=None, async_op=False, device_ids=None):
    if _not_in_group(group):
        return _warn_not_in_group("barrier")
    pg = _group(group)
    if "cpu" not in pg._device_backends:  # nccl alone: PyTorch's barrier is an all-reduce on a GPU
        if device_ids:
            index = device_ids[0]
        elif pg.bound_device_id is not None:
            index = pg.bound_device_id.index
        else:
            index = ember.cuda.current_device()
        return _run(pg, _nccl.barrier(pg, index), async_op)
    return _run(pg, Work([pg._comm.Ibarrier()], pg, "barrier"), async_op)


def monitored_barrier(group=None, timeout=None, wait_all_ranks=False):
    """Rank 0 waits for every other rank (naming the ones that did not come, as PyTorch), then
    releases them."""
    if _not_in_group(group):
        return _warn_not_in_group("monitored_barrier")
    pg = _group(group)
    t = (timeout.total_seconds() if timeout is not None else pg.timeout_s)
    tag = 0x7E3B
    comm = pg._comm
    token = np.zeros(1, dtype=np.int8)
    if pg.rank() == 0:
        bufs = [np.zeros(1, dtype=np.int8) for _ in range(pg.size())]
        reqs = {r: comm.Irecv(bufs[r], source=r, tag=tag) for r in range(1, pg.size())}
        import time
        deadline = time.monotonic() + t
        while reqs and time.monotonic() < deadline:
            for r in [r for r, q in reqs.items() if q.Test()]:
                del reqs[r]
        if reqs:
            for q in reqs.values():
                q.Cancel()
            missing = sorted(pg.global_ranks[r] for r in reqs)
            if wait_all_ranks:
                raise RuntimeError(f"Ranks {', '.join(map(str, missing))} failed to pass "
                                   f"monitoredBarrier in {int(t * 1000)} ms")
            raise RuntimeError(f"Rank {missing[0]} failed to pass monitoredBarrier in "
                               f"{int(t * 1000)} ms")
        sends = [comm.Isend(token, dest=r, tag=tag) for r in range(1, pg.size())]
        Work(sends, pg, "monitored_barrier", keep=(token,)).wait(t)
    else:
        s = comm.Isend(token, dest=0, tag=tag)
        r = comm.Irecv(np.zeros(1, dtype=np.int8), source=0, tag=tag)
        Work([s, r], pg, "monitored_barrier", keep=(token,)).wait(t)


# --- objects (pickled into byte arrays)

def _pickle(obj):
    f = io.BytesIO()
    pickle.Pickler(f).dump(obj)
    return np.frombuffer(f.getvalue(), dtype=np.uint8)


def _allgather_bytes(pg, data, name, root=None):
    """Every rank's byte array (``root``: gathered only there; others get None)."""
    n = pg.size()
    sizes = np.empty(n, dtype=np.int64)
    mine = np.array([data.size], dtype=np.int64)
    _wait_quiet(pg, [pg._comm.Iallgather(mine, sizes)], name)
    displs = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
    if root is None:
        out = np.empty(int(sizes.sum()), dtype=np.uint8)
        Work([pg._comm.Iallgatherv(data, [out, (sizes, displs)])], pg, name,
             keep=(data, out, sizes, displs)).wait()
    elif pg.rank() == root:
        out = np.empty(int(sizes.sum()), dtype=np.uint8)
        Work([pg._comm.Igatherv(data, [out, (sizes, displs)], root=root)], pg, name,
             keep=(data, out, sizes, displs)).wait()
    else:
        Work([pg._comm.Igatherv(data, None, root=root)], pg, name, keep=(data,)).wait()
        return None
    return [out[displs[i]:displs[i] + sizes[i]].tobytes() for i in range(n)]


def all_gather_object(object_list, obj, group=None):
    if _not_in_group(group):
        return _warn_not_in_group("all_gather_object")
    pg = _group(group)
    for i, b in enumerate(_allgather_bytes(pg, _pickle(obj), "all_gather_object")):
        object_list[i] = pickle.loads(b)


def gather_object(obj, object_gather_list=None, dst=None, group=None, group_dst=None):
    if _not_in_group(group):
        return _warn_not_in_group("gather_object")
    pg = _group(group)
    root = _group_rank(pg, dst, group_dst)
    if pg.rank() == root and object_gather_list is None:
        raise ValueError("Argument ``object_gather_list`` must be specified on destination "
                         "rank.")
    got = _allgather_bytes(pg, _pickle(obj), "gather_object", root=root)
    if got is not None:
        for i, b in enumerate(got):
            object_gather_list[i] = pickle.loads(b)


def broadcast_object_list(object_list, src=None, group=None, device=None, group_src=None):
    if _not_in_group(group):
        return _warn_not_in_group("broadcast_object_list")
    pg = _group(group)
    root = _group_rank(pg, src, group_src)
    size = np.zeros(1, dtype=np.int64)
    data = None
    if pg.rank() == root:
        data = _pickle(list(object_list))
        size[0] = data.size
    Work([pg._comm.Ibcast(size, root=root)], pg, "broadcast_object_list", keep=(size,)).wait()
    if pg.rank() != root:
        data = np.empty(int(size[0]), dtype=np.uint8)
    Work([pg._comm.Ibcast(data, root=root)], pg, "broadcast_object_list", keep=(data,)).wait()
    if pg.rank() != root:
        objs = pickle.loads(data.tobytes())
        for i, o in enumerate(objs):
            object_list[i] = o


def scatter_object_list(scatter_object_output_list, scatter_object_input_list=None, src=None,
                        group=None, group_src=None):
    if _not_in_group(group):
        return _warn_not_in_group("scatter_object_list")
    pg = _group(group)
    root = _group_rank(pg, src, group_src)
    objs = [None]
    if pg.rank() == root:
        objs = [list(scatter_object_input_list)]
    broadcast_object_list(objs, src=pg.global_ranks[root], group=group)
    scatter_object_output_list[0] = objs[0][pg.rank()]


def _object_coll_device(pg):
    """The device type the object tensors of ``pg`` live on (PyTorch's choice): that of its
    one backend; among several, the CPU when one serves it, else the first."""
    devices = list(pg._device_backends)
    if len(devices) == 1:
        return devices[0]
    return "cpu" if "cpu" in devices or not devices else devices[0]


def send_object_list(object_list, dst=None, group=None, device=None, group_dst=None,
                     use_batch=False):
    """Send the picklable objects of ``object_list`` to ``dst`` (a global rank) or
    ``group_dst`` (a rank of ``group``): their pickled sizes, then their bytes, as tensors on
    ``device`` (by default the group's object device: CUDA for an nccl group). The receiver's
    list must be as long."""
    if _not_in_group(group):
        return _warn_not_in_group("send_object_list")
    pg = _group(group)
    peer = _group_rank(pg, dst, group_dst, None)
    _check_not_self_rank(pg, peer, "destination")
    device = device or _object_coll_device(pg)
    pickled = [_pickle(obj) for obj in object_list]
    sizes = ember.tensor([p.size for p in pickled], dtype=ember.int64, device=device)
    data = ember.from_numpy(np.concatenate(pickled) if pickled
                            else np.empty(0, np.uint8)).to(device)
    for t in (sizes, data):
        if use_batch:
            batch_isend_irecv([P2POp(isend, t, group=group, group_peer=peer)]).pop().wait()
        else:
            send(t, group=group, group_dst=peer)


def recv_object_list(object_list, src=None, group=None, device=None, group_src=None,
                     use_batch=False):
    """Receive ``len(object_list)`` picklable objects from ``src`` (a global rank) or
    ``group_src`` (a rank of ``group``) into ``object_list``; returns the sender's global rank
    (-1 when this rank is not in ``group``)."""
    if _not_in_group(group):
        _warn_not_in_group("recv_object_list")
        return -1
    pg = _group(group)
    peer = _group_rank(pg, src, group_src, None)
    _check_not_self_rank(pg, peer, "source")
    device = device or _object_coll_device(pg)
    sizes = ember.empty(len(object_list), dtype=ember.int64, device=device)

    def receive(t):
        if use_batch:
            batch_isend_irecv([P2POp(irecv, t, group=group, group_peer=peer)]).pop().wait()
            return pg.global_ranks[peer]
        return recv(t, group=group, group_src=peer)

    sender = receive(sizes)
    data = ember.empty(int(sizes.sum().item()), dtype=ember.uint8, device=device)
    receive(data)
    buf = data.cpu().numpy().tobytes()
    offset = 0
    for i, size in enumerate(sizes.tolist()):
        object_list[i] = pickle.loads(buf[offset:offset + size])
        offset += size
    return sender


# --- private entry points libraries call (PyTorch's c10d bindings and deprecated aliases)

def _rank_not_in_group(group):
    """Whether this process is outside ``group`` (None, the default group, holds every rank)."""
    if group is None:
        return False
    return _not_in_group(group)


def _all_gather_base(output_tensor, input_tensor, group=None, async_op=False):
    """PyTorch's private name of :func:`all_gather_single`."""
    return all_gather_single(output_tensor, input_tensor, group, async_op)


def _reduce_scatter_base(output, input, op=ReduceOp.SUM, group=None, async_op=False):
    """PyTorch's private name of :func:`reduce_scatter_single`."""
    return reduce_scatter_single(output, input, op, group, async_op)


def _broadcast_coalesced(process_group, tensors, buffer_size, src=0):
    """Rank ``src`` (of ``process_group``)'s values of ``tensors`` on every rank: the tensors
    are packed, per dtype and device, into flat chunks of about ``buffer_size`` bytes, one
    broadcast each, and copied back (PyTorch's C++ ``broadcast_coalesced``)."""
    chunks, open_ = [], {}
    for t in tensors:
        key = (t.dtype, t.device)
        chunk = open_.setdefault(key, [[], 0])
        chunk[0].append(t)
        chunk[1] += t.numel() * t.element_size()
        if chunk[1] >= buffer_size:
            chunks.append(open_.pop(key)[0])
    chunks.extend(c[0] for c in open_.values())
    with ember.no_grad():
        for ts in chunks:
            flat = ember.cat([t.detach().reshape(-1) for t in ts])
            broadcast(flat, group=process_group, group_src=src)
            offset = 0
            for t in ts:
                t.copy_(flat[offset:offset + t.numel()].view(t.shape))
                offset += t.numel()


def _verify_params_across_processes(process_group, params, logger=None):
    """Every rank holds as many parameters as every other, with rank 0's sizes and strides, or
    PyTorch's error (its C++ ``verify_params_across_processes``: a count per rank, then rank
    0's sizes and strides, compared in the same order)."""
    pg = _group(process_group)
    meta = []
    for p, t in enumerate(params):
        meta.extend(("size", p, s) for s in t.shape)
        meta.extend(("stride", p, s) for s in t.stride())
    every = [None] * pg.size()
    all_gather_object(every, (len(params), meta), group=process_group)
    rank = pg.rank()
    for r, (count, _) in enumerate(every):
        if count != len(params):
            raise RuntimeError(f"DDP expects same model across all ranks, but Rank {rank} has "
                               f"{len(params)} params, while rank {r} has inconsistent {count} "
                               f"params.")
    control = every[0][1]
    for i, (kind, p, value) in enumerate(meta):
        if i < len(control) and control[i][2] == value:
            continue
        sizes = list(params[p].shape)
        if kind == "size":
            raise RuntimeError(f"[{rank}]: params[{p}] in this process with sizes {sizes} "
                               f"appears not to match sizes of the same param in process 0.")
        raise RuntimeError(f"params[{p}] in this process with sizes {sizes} appears not to "
                           f"match strides of the same param in process 0.")
