"""ember.distributed.device_mesh, ember.distributed.tensor (DTensor) and the functional
collectives. In-process on a world of one (ember's and PyTorch's 1-rank gloo groups side by
side: the chosen placements, shapes and values compared op by op), then two and four ranks
through ``python -m ember.distributed.run`` (tests/_dtensor_worker.py: redistribution with
collectives, a tensor-parallel MLP trained with SGD and AdamW, a 2 x 2 mesh)."""
import os
import subprocess
import sys

import numpy as np
import pytest

import ember
import ember.distributed as dist
import ember.distributed._functional_collectives as funcol
import ember.distributed.tensor as dt
from ember.distributed.device_mesh import DeviceMesh, init_device_mesh
from ember.distributed.tensor import Replicate, Shard, distribute_tensor
from ember.distributed.tensor._utils import _compute_local_shape_and_global_offset

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WORKER = os.path.join(ROOT, "tests", "_dtensor_worker.py")

needs_mpi = pytest.mark.skipif(not dist.is_available(), reason="mpi4py is not installed")


def _np(t):
    return t.detach().numpy() if hasattr(t, "detach") else np.asarray(t)


def test_placements_as_pytorch(torch):
    from torch.distributed.tensor import placement_types as tp
    from ember.distributed.tensor import placement_types as ep
    for lib in (tp, ep):
        objs = [lib.Shard(0), lib.Shard(1), lib.Replicate(), lib.Partial(), lib.Partial("avg"),
                lib._StridedShard(0, split_factor=2)]
        got = [(repr(p), str(p), p.is_shard(), p.is_shard(0), p.is_replicate(), p.is_partial(),
                p.is_partial("sum")) for p in objs]
        eq = [[a == b for b in objs] for a in objs]
        hashes = [hash(p) for p in objs[:3]]
        if lib is tp:
            expected = (got, eq, hashes)
    assert (got, eq, hashes) == expected
    assert ep.Partial().reduce_op == "sum" and ep.Shard(3).dim == 3
    assert ep._StridedShard(1, sf=4) == ep._StridedShard(1, split_factor=4)
    import pickle
    for p in objs:
        assert pickle.loads(pickle.dumps(p)) == p


def test_device_mesh_world_of_one(worlds):
    from torch.distributed.device_mesh import init_device_mesh as t_init
    for shape, names in (((1,), ("tp",)), ((1,), None), ((1, 1), ("dp", "tp"))):
        e, t = init_device_mesh("cpu", shape, mesh_dim_names=names), t_init("cpu", shape,
                                                                          mesh_dim_names=names)
        assert repr(e) == repr(t)
        assert (e.ndim, e.shape, e.size(), e.get_coordinate(), e.mesh_dim_names,
                e.device_type) == (t.ndim, t.shape, t.size(), t.get_coordinate(),
                                   t.mesh_dim_names, t.device_type)
        assert e.mesh.tolist() == t.mesh.tolist() and str(e.mesh.dtype) == "ember.int32"
        for d in range(len(shape)):
            assert e.get_local_rank(d) == 0 and e.get_group(d).size() == 1
    mesh = init_device_mesh("cpu", (1, 1), mesh_dim_names=("dp", "tp"))
    tmesh = t_init("cpu", (1, 1), mesh_dim_names=("dp", "tp"))
    assert repr(mesh["tp"]) == repr(tmesh["tp"]) and mesh["dp", "tp"] is mesh
    assert mesh.get_group("tp") is mesh.get_group(1) is mesh["tp"].get_group()
    assert mesh == init_device_mesh("cpu", (1, 1), mesh_dim_names=("dp", "tp"))
    assert hash(mesh) == hash(DeviceMesh("cpu", [[0]], mesh_dim_names=("dp", "tp")))
    assert mesh != init_device_mesh("cpu", (1, 1))
    for fn, tfn in ((lambda: mesh["zz"], lambda: tmesh["zz"]),
                    (lambda: mesh.get_group(), lambda: tmesh.get_group()),
                    (lambda: init_device_mesh("cpu", (1,))["tp"],
                     lambda: t_init("cpu", (1,))["tp"]),
                    (lambda: init_device_mesh("cpu", (4,)), lambda: t_init("cpu", (4,))),
                    (lambda: init_device_mesh("cpu", (1, 1), mesh_dim_names=("a", "a")),
                     lambda: t_init("cpu", (1, 1), mesh_dim_names=("a", "a"))),
                    (lambda: init_device_mesh("cuda:0", (1,)), lambda: t_init("cuda:0", (1,)))):
        with pytest.raises(Exception) as e_err:
            fn()
        with pytest.raises(Exception) as t_err:
            tfn()
        assert type(e_err.value) is type(t_err.value)
        assert str(e_err.value) == str(t_err.value)
    with mesh:
        assert dt.zeros(2, 3).device_mesh is mesh


def test_local_shape_and_offset_as_pytorch(torch):
    from torch.distributed.tensor import placement_types as tp
    from torch.distributed.tensor._utils import _compute_local_shape_and_global_offset as t_fn
    cases = [((5, 3), (4,), [("S", 0)]), ((8, 6), (2, 2), [("S", 0), ("S", 1)]),
             ((8, 6), (2, 2), [("S", 0), ("S", 0)]), ((7, 6), (2, 3), [("S", 0), ("S", 0)]),
             ((8, 6), (2, 2), [("SS", 0, 2), ("S", 0)]), ((9,), (4,), [("SS", 0, 2)]),
             ((3, 4), (2, 2), [("R",), ("P",)]), ((1, 3), (4,), [("S", 0)])]

    def make(lib, spec):
        if spec[0] == "S":
            return lib.Shard(spec[1])
        if spec[0] == "SS":
            return lib._StridedShard(spec[1], split_factor=spec[2])
        return lib.Replicate() if spec[0] == "R" else lib.Partial()
    from ember.distributed.tensor import placement_types as ep
    for shape, mesh_shape, specs in cases:
        for coord in np.ndindex(*mesh_shape):
            got = _compute_local_shape_and_global_offset(shape, mesh_shape, list(coord),
                                                         [make(ep, s) for s in specs])
            want = t_fn(shape, mesh_shape, list(coord), [make(tp, s) for s in specs])
            assert got == tuple(tuple(int(v) for v in w) for w in want), (shape, specs, coord)


def _dtensor(lib, dtmod, mesh, data, placements):
    data = np.asarray(data)
    data = data.astype(np.float32 if data.dtype.kind == "f" else np.int64)
    return dtmod.DTensor.from_local(lib.tensor(data), mesh, placements)


A = np.arange(24.0).reshape(4, 6) / 7
B = np.arange(18.0).reshape(6, 3) / 5 - 1
BIAS = np.arange(3.0)
C = np.arange(24.0).reshape(2, 3, 4) / 3
D = np.arange(16.0).reshape(2, 4, 2) - 4
TARGET = np.array([1, 0, 5, 2])

# (name, inputs as (array, placement code), function of (lib, *dtensors)); codes: R, P, Pa
# (avg), S<d>
OPS = [
    ("add P+P", [(A, "P"), (A, "P")], lambda L, x, y: x + y),
    ("add P+R", [(A, "P"), (A, "R")], lambda L, x, y: x + y),
    ("add Pa+R", [(A, "Pa"), (A, "R")], lambda L, x, y: x + y),
    ("mul P*2", [(A, "P")], lambda L, x: x * 2),
    ("mul P*R", [(A, "P"), (A, "R")], lambda L, x, y: x * y),
    ("div P/R", [(A, "P"), (A, "R")], lambda L, x, y: x / y),
    ("exp P", [(A, "P")], lambda L, x: x.exp()),
    ("relu S0", [(A, "S0")], lambda L, x: L.relu(x)),
    ("sub S0-S1", [(A, "S0"), (A, "S1")], lambda L, x, y: x - y),
    ("add S1+bcast R", [(A, "S1"), (A[0], "R")], lambda L, x, y: x + y),
    ("add S0+bcast S0", [(A, "S0"), (A[0], "S0")], lambda L, x, y: x + y),
    ("neg P", [(A, "P")], lambda L, x: -x),
    ("maximum P R", [(A, "P"), (A, "R")], lambda L, x, y: L.maximum(x, y)),
    ("where S0", [(A, "S0"), (A, "R")], lambda L, x, y: L.where(x > 1, x, y)),
    ("mm S1 S0", [(A, "S1"), (B, "S0")], lambda L, x, y: x @ y),
    ("mm S0 R", [(A, "S0"), (B, "R")], lambda L, x, y: x @ y),
    ("mm R S1", [(A, "R"), (B, "S1")], lambda L, x, y: x @ y),
    ("mm R R", [(A, "R"), (B, "R")], lambda L, x, y: x @ y),
    ("mm S0 S1", [(A, "S0"), (B, "S1")], lambda L, x, y: x @ y),
    ("mm P R", [(A, "P"), (B, "R")], lambda L, x, y: x @ y),
    ("mm S1 R", [(A, "S1"), (B, "R")], lambda L, x, y: x @ y),
    ("addmm R S1 S0", [(BIAS, "R"), (A, "S1"), (B, "S0")], lambda L, b, x, y: L.addmm(b, x, y)),
    ("linear S0 S0", [(A, "S0"), (B.T, "S0"), (BIAS, "S0")],
     lambda L, x, w, b: L.nn.functional.linear(x, w, b)),
    ("bmm S0 S0", [(C, "S0"), (D[:, :, :], "S0")], lambda L, x, y: L.bmm(x[:, :, :4], y)),
    ("baddbmm", [(np.zeros((2, 3, 2)), "R"), (C, "S2"), (D, "S1")],
     lambda L, b, x, y: L.baddbmm(b, x, y)),
    ("sum S0", [(A, "S0")], lambda L, x: x.sum()),
    ("sum dim S0", [(A, "S0")], lambda L, x: x.sum(1)),
    ("sum dim0 keepdim S0", [(A, "S0")], lambda L, x: x.sum(0, keepdim=True)),
    ("sum P", [(A, "P")], lambda L, x: x.sum()),
    ("mean S0", [(A, "S0")], lambda L, x: x.mean()),
    ("mean P", [(A, "P")], lambda L, x: x.mean()),
    ("mean dim S1", [(A, "S1")], lambda L, x: x.mean(0)),
    ("amax S1", [(A, "S1")], lambda L, x: x.amax(1)),
    ("softmax S1", [(A, "S1")], lambda L, x: x.softmax(1)),
    ("softmax S0", [(A, "S0")], lambda L, x: x.softmax(1)),
    ("log_softmax P", [(A, "P")], lambda L, x: x.log_softmax(0)),
    ("view S0", [(A, "S0")], lambda L, x: x.view(2, 2, 6)),
    ("view split S1", [(A, "S1")], lambda L, x: x.view(4, 2, 3)),
    ("view flatten S1", [(A, "S1")], lambda L, x: x.view(24)),
    ("view flatten S0", [(C, "S0")], lambda L, x: x.view(6, 4)),
    ("reshape flatten S1", [(A, "S1")], lambda L, x: x.reshape(24)),
    ("view P", [(A, "P")], lambda L, x: x.view(6, 4)),
    ("transpose S0", [(C, "S0")], lambda L, x: x.transpose(0, 2)),
    ("t S1", [(A, "S1")], lambda L, x: x.t()),
    ("permute S2", [(C, "S2")], lambda L, x: x.permute(2, 0, 1)),
    ("unsqueeze S1", [(A, "S1")], lambda L, x: x.unsqueeze(0)),
    ("squeeze S0", [(A[None], "S1")], lambda L, x: x.squeeze()),
    ("squeeze dim S0", [(A[:, None], "S0")], lambda L, x: x.squeeze(1)),
    ("expand R", [(A[:1], "R")], lambda L, x: x.expand(3, 4, 6)),
    ("expand S1", [(A[:1], "S1")], lambda L, x: x.expand(4, 6)),
    ("slice S0 rows", [(A, "S0")], lambda L, x: x[1:3]),
    ("slice S0 cols", [(A, "S0")], lambda L, x: x[:, 2:]),
    ("select S1", [(A, "S1")], lambda L, x: x[1]),
    ("detach P", [(A, "P")], lambda L, x: x.detach()),
    ("clone S1", [(A, "S1")], lambda L, x: x.clone()),
    ("ones_like P", [(A, "P")], lambda L, x: L.ones_like(x)),
    ("zeros_like S0", [(A, "S0")], lambda L, x: L.zeros_like(x)),
    ("empty_like P shape", [(A, "P")], lambda L, x: L.empty_like(x).fill_(1)),
    ("new_zeros S0", [(A, "S0")], lambda L, x: x.new_zeros(4, 6)),
    ("new_ones other shape", [(A, "S0")], lambda L, x: x.new_ones(3)),
    ("to float64 P", [(A, "P")], lambda L, x: x.to(L.float64)),
    ("to int P", [(A, "P")], lambda L, x: x.to(L.int64)),
    ("pow S1", [(A, "S1")], lambda L, x: x.pow(2)),
    ("gelu S0", [(A, "S0")], lambda L, x: L.nn.functional.gelu(x)),
    ("add_ S0 R", [(A, "S0"), (A, "R")], lambda L, x, y: x.add_(y)),
    ("mul_ P", [(A, "P")], lambda L, x: x.mul_(3)),
    ("addcmul_ S1", [(A, "S1"), (A, "S1"), (A, "R")], lambda L, x, y, z: x.addcmul_(y, z, value=2)),
    ("lerp_ S0", [(A, "S0"), (A, "R")], lambda L, x, y: x.lerp_(y, 0.3)),
    ("zero_ P", [(A, "P")], lambda L, x: x.zero_()),
    ("fill_ S0", [(A, "S0")], lambda L, x: x.fill_(2.5)),
    ("copy_ S0 R", [(A, "S0"), (A * 2, "R")], lambda L, x, y: x.copy_(y)),
    ("cross_entropy S0", [(A, "S0"), (TARGET, "S0")],
     lambda L, x, t: L.nn.functional.cross_entropy(x, t)),
    ("cross_entropy sum S0 R", [(A, "S0"), (TARGET, "R")],
     lambda L, x, t: L.nn.functional.cross_entropy(x, t, reduction="sum")),
    ("nll_loss none S1", [(A, "S1"), (TARGET, "R")],
     lambda L, x, t: L.nn.functional.nll_loss(x, t, reduction="none")),
    ("matmul 3-D S0", [(C, "S0"), (B[:4, :2], "R")], lambda L, x, y: x @ y),
]


def _placement(dtmod, code):
    if code == "R":
        return dtmod.Replicate()
    if code.startswith("P"):
        return dtmod.Partial("avg" if code == "Pa" else "sum")
    return dtmod.Shard(int(code[1:]))


@pytest.mark.parametrize("name", [c[0] for c in OPS])
def test_op_placements_and_values_as_pytorch(worlds, name):
    torch = worlds
    import torch.distributed.tensor as tdt
    from torch.distributed.device_mesh import init_device_mesh as t_init
    _, inputs, fn = next(c for c in OPS if c[0] == name)
    results = []
    for lib, dtmod, mesh in ((ember, dt, init_device_mesh("cpu", (1,))),
                             (torch, tdt, t_init("cpu", (1,)))):
        args = [_dtensor(lib, dtmod, mesh, a, [_placement(dtmod, code)]) for a, code in inputs]
        out = fn(lib, *args)
        results.append((tuple(str(p) for p in out.placements), tuple(out.shape),
                        tuple(out.stride()), str(out.dtype).split(".")[-1],
                        _np(out.full_tensor())))
    e, t = results
    assert e[:4] == t[:4], (name, e[:4], t[:4])
    np.testing.assert_allclose(e[4], t[4], rtol=1e-5, atol=1e-6)


# (mesh shape, op, [(global shape, placement codes)], extra args): sharding decisions on meshes
# of several ranks, where the costs of the choices differ
PROPAGATION = [
    ((2,), "mm.default", [((8, 6), "S1"), ((6, 4), "S0")], ()),
    ((2,), "mm.default", [((8, 6), "S0"), ((6, 4), "S1")], ()),
    ((2,), "mm.default", [((8, 6), "S1"), ((6, 4), "R")], ()),
    ((2,), "mm.default", [((8, 6), "P"), ((6, 4), "S1")], ()),
    ((4,), "mm.default", [((3, 6), "S0"), ((6, 4), "R")], ()),
    ((2, 2), "mm.default", [((8, 6), "S0,S1"), ((6, 4), "R,S0")], ()),
    ((2, 2), "mm.default", [((8, 6), "R,S1"), ((6, 4), "S1,S0")], ()),
    ((2, 2), "addmm.default", [((4,), "R,R"), ((8, 6), "S0,S1"), ((6, 4), "R,S0")], ()),
    ((2, 2), "bmm.default", [((4, 8, 6), "S0,S2"), ((4, 6, 2), "S0,S1")], ()),
    ((2,), "add.Tensor", [((8, 6), "S0"), ((8, 6), "S1")], ()),
    ((2,), "add.Tensor", [((8, 6), "P"), ((8, 6), "S1")], ()),
    ((2, 2), "mul.Tensor", [((8, 6), "S0,P"), ((6,), "R,S0")], ()),
    ((2,), "add.Tensor", [((5, 6), "S0"), ((5, 6), "R")], ()),
    ((2, 2), "sum.dim_IntList", [((8, 6), "S0,S1")], ([1],)),
    ((2, 2), "mean.dim", [((7, 6), "S0,S1")], ([0],)),
    ((2,), "_softmax.default", [((8, 6), "S1")], (1, False)),
    ((2, 2), "view.default", [((8, 6), "S0,S1")], ([2, 4, 6],)),
    ((2, 2), "view.default", [((8, 6), "R,S1")], ([48],)),
    ((2,), "view.default", [((6, 8), "S1")], ([6, 2, 4],)),
    ((2,), "view.default", [((6, 6), "S1")], ([6, 3, 2],)),
    ((2, 2), "transpose.int", [((8, 6, 4), "S0,S2")], (0, 2)),
    ((2,), "slice.Tensor", [((8, 6), "S0")], (0, 2, 6)),
    ((4,), "sum.default", [((3, 5), "S0")], ()),
    ((2,), "view.default", [((5, 6), "S0")], ([30],)),
    ((2,), "view.default", [((5, 6), "S1")], ([30],)),
    ((2,), "view.default", [((6, 5), "S0")], ([3, 2, 5],)),
    ((2, 2), "view.default", [((8, 6), "S0,S0")], ([48],)),
    ((2,), "view.default", [((4, 6), "S1")], ([6, 4],)),
    ((2,), "expand.default", [((1, 6), "S1")], ([3, 4, 6],)),
    ((2,), "amax.default", [((8, 6), "P")], ([1],)),
    ((2, 2), "sum.default", [((8, 6), "P,S1")], ()),
    ((2,), "mean.default", [((5, 6), "S0")], ()),
    ((2,), "baddbmm.default", [((4, 8, 2), "R"), ((4, 8, 6), "S2"), ((4, 6, 2), "S1")], ()),
    ((2, 2), "addcmul.default", [((8, 6), "S0,R"), ((8, 6), "R,S1"), ((6,), "R,R")], ()),
    ((2,), "_to_copy.default", [((8, 6), "P")], ()),
    ((2,), "new_zeros.default", [((8, 6), "S0")], ([8, 6],)),
    ((2,), "unsqueeze.default", [((8, 6), "S1")], (1,)),
    ((2,), "permute.default", [((8, 6, 4), "S2")], ([2, 0, 1],)),
    ((2,), "select.int", [((8, 6), "S0")], (1, 3)),
    ((2,), "nll_loss_forward.default", [((8, 6), "S0"), ((8,), "S0:i")], (None, 1, -100)),
    ((2,), "linalg_vector_norm.default", [((8, 6), "S0")], ()),
    ((2, 2), "linalg_vector_norm.default", [((8, 6), "S0,S1")], (3.0, [1])),
    ((2,), "linalg_vector_norm.default", [((8, 6), "S1")], (float("inf"),)),
    ((2,), "linalg_vector_norm.default", [((8, 6), "P")], ()),
    ((2,), "stack.default", [[((8, 6), "S1"), ((8, 6), "R")]], (1,)),
    ((2,), "cat.default", [[((8, 6), "S0"), ((8, 6), "S1")]], (0,)),
    ((2, 2), "cat.default", [[((8, 6), "S1,P"), ((8, 6), "R,R")]], (1,)),
    ((2,), "_log_softmax_backward_data.default", [((8, 6), "S1"), ((8, 6), "S0")],
     (1, lambda lib: lib.float32)),
]


def _codes(dtmod, codes):
    return [_placement(dtmod, c) for c in codes.split(":")[0].split(",")]


def _zeros(lib, shape, codes):
    return lib.zeros(shape, dtype=lib.int64 if codes.endswith(":i") else lib.float32)


def _make_args(lib, dtmod, mesh, inputs):
    """DTensors of the global shapes (zeros: the values do not matter), a list for a list."""
    args = []
    for item in inputs:
        if isinstance(item, list):
            args.append(_make_args(lib, dtmod, mesh, item))
            continue
        shape, codes = item
        placements = _codes(dtmod, codes)
        local, _ = dtmod._utils.compute_local_shape_and_global_offset(shape, mesh, placements)
        args.append(dtmod.DTensor.from_local(_zeros(lib, local, codes), mesh, placements,
                                             shape=lib.Size(shape),
                                             stride=lib.empty(shape).stride()))
    return args


def _ember_propagation(mesh_shape, op_name, inputs, extra):
    ranks = np.arange(int(np.prod(mesh_shape))).reshape(mesh_shape).tolist()
    mesh = DeviceMesh("cpu", ranks, _init_backend=False, _rank=0)
    args = _make_args(ember, dt, mesh, inputs)
    packet, overload = op_name.split(".")
    op = getattr(getattr(ember.ops.aten, packet), overload)
    dispatcher = dt.DTensor._op_dispatcher
    extra = tuple(e(ember) if callable(e) else e for e in extra)
    schema = dispatcher.unwrap(op, tuple(args) + extra, {})[0]
    try:
        out = dispatcher.sharding_propagator.propagate_op_sharding(schema).output_spec
    except RuntimeError as e:
        return str(e).split("\n")[0]
    return _describe(out)


def _describe(out):
    if isinstance(out, (tuple, list)):
        return tuple(_describe(o) for o in out)
    return str(out.placements), tuple(out.shape)


def test_sharding_propagation_on_meshes_of_several_ranks(torch):
    # PyTorch's choices on the same meshes, from its fake process group (rank 0 of 4)
    from torch.testing._internal.distributed.fake_pg import FakeStore
    import torch.distributed.tensor as tdt
    from torch.distributed.device_mesh import init_device_mesh as t_init
    torch.distributed.init_process_group("fake", rank=0, world_size=4, store=FakeStore())
    try:
        for mesh_shape, op_name, inputs, extra in PROPAGATION:
            mesh = t_init("cpu", mesh_shape)
            args = _make_args(torch, tdt, mesh, inputs)
            packet, overload = op_name.split(".")
            try:
                out = getattr(getattr(torch.ops.aten, packet), overload)(
                    *args, *(e(torch) if callable(e) else e for e in extra))
                want = _describe(out)
            except RuntimeError as e:
                want = str(e).split("\n")[0]
            got = _ember_propagation(mesh_shape, op_name, inputs, extra)
            assert got == want, (mesh_shape, op_name, inputs)
    finally:
        torch.distributed.destroy_process_group()


def test_errors_as_pytorch(worlds):
    torch = worlds
    import torch.distributed.tensor as tdt
    from torch.distributed.device_mesh import init_device_mesh as t_init
    cases = [
        # an in-place op whose result would need another layout than self's
        lambda L, D, m: D.DTensor.from_local(L.ones(4, 4), m, [D.Partial()]).exp_(),
        lambda L, D, m: D.DTensor.from_local(L.ones(4, 4), m, [D.Shard(0)]).redistribute(m),
        lambda L, D, m: D.DTensor.from_local(L.ones(4), m, [D.Partial(), D.Partial("max")]),
        # mixing a DTensor with a plain tensor of more than one element
        lambda L, D, m: D.DTensor.from_local(L.ones(4, 4), m, [D.Replicate()]) + L.ones(4, 4),
        lambda L, D, m: D.DTensor.from_local(L.ones(4), m, [D.Shard(0)]).redistribute(
            m, [D.Partial()]),
        lambda L, D, m: D.distribute_tensor(L.ones(2, requires_grad=True) * 2, m),
        lambda L, D, m: D.DTensor.from_local(D.DTensor.from_local(L.ones(2), m), m),
        lambda L, D, m: D.distribute_tensor(L.ones(2), m, [D.Shard(0), D.Shard(0)]),
    ]
    for case in cases:
        errors = []
        for lib, dtmod, mesh in ((ember, dt, init_device_mesh("cpu", (1,))),
                                 (torch, tdt, t_init("cpu", (1,)))):
            with pytest.raises(Exception) as err:
                case(lib, dtmod, mesh)
            errors.append((type(err.value), str(err.value).replace("torch.", "ember.")))
        assert errors[0] == errors[1]


def test_op_without_a_strategy_raises(world):
    mesh = init_device_mesh("cpu", (1,))
    x = distribute_tensor(ember.ones(3, 3), mesh, [Shard(0)])
    with pytest.raises(NotImplementedError,
                       match=r"^Operator aten.cholesky.default does not have a sharding "
                             r"strategy registered.$"):
        ember.ops.aten.cholesky.default(x)
    # an op with a CompositeImplicitAutograd kernel runs as its decomposition
    assert ember.ops.aten.linear.default.has_kernel_for_dispatch_key("CompositeImplicitAutograd")
    y = ember.nn.functional.linear(x, distribute_tensor(ember.ones(2, 3), mesh, [Replicate()]))
    assert y.placements == (Shard(0),) and y.full_tensor().tolist() == [[3.0, 3.0]] * 3


def test_autograd_as_pytorch(worlds):
    torch = worlds
    import torch.distributed.tensor as tdt
    from torch.distributed.device_mesh import init_device_mesh as t_init
    grads = []
    for lib, dtmod, mesh in ((ember, dt, init_device_mesh("cpu", (1,))),
                             (torch, tdt, t_init("cpu", (1,)))):
        w = lib.tensor(np.arange(12.0, dtype=np.float32).reshape(4, 3) / 3)
        local = lib.tensor(np.arange(12.0, dtype=np.float32).reshape(4, 3),
                           requires_grad=True)
        x = dtmod.DTensor.from_local(local, mesh, [dtmod.Shard(0)])
        p = dtmod.DTensor.from_local(lib.ones(4, 3, requires_grad=True), mesh,
                                     [dtmod.Partial()])
        y = (x * p).redistribute(mesh, [dtmod.Replicate()]).to_local()
        z = x.full_tensor(grad_placements=[dtmod.Replicate()])
        ((y * w).sum() + (z.exp() * w).sum()).backward()
        leaf = dtmod.distribute_tensor(lib.ones(4, 3), mesh, [dtmod.Shard(1)]).requires_grad_()
        (leaf.sin() * 2).sum().backward()
        grads.append((_np(local.grad), str(leaf.grad.placements), _np(leaf.grad.to_local()),
                      type(leaf.grad).__name__, leaf.is_leaf, x.requires_grad,
                      type(y.grad_fn).__name__.replace("Backward", "")[:8]))
    e, t = grads
    np.testing.assert_allclose(e[0], t[0], rtol=1e-5)
    np.testing.assert_allclose(e[2], t[2], rtol=1e-6)
    assert e[1] == t[1] and e[3:5] == t[3:5] and e[5] == t[5]


def test_factories_and_distribute_module(worlds):
    torch = worlds
    import torch.distributed.tensor as tdt
    from torch.distributed.device_mesh import init_device_mesh as t_init
    mesh, tmesh = init_device_mesh("cpu", (1,)), t_init("cpu", (1,))
    for name, args in (("zeros", (2, 3)), ("ones", ([4, 2],)), ("empty", (3,)),
                       ("full", ((2, 2), 7.0))):
        e = getattr(dt, name)(*args, device_mesh=mesh, placements=[Shard(0)])
        t = getattr(tdt, name)(*args, device_mesh=tmesh, placements=[tdt.Shard(0)])
        assert (tuple(e.shape), e.stride(), str(e.placements), e.requires_grad) == \
            (tuple(t.shape), t.stride(), str(t.placements), t.requires_grad)
        if name != "empty":
            assert e.full_tensor().tolist() == t.full_tensor().tolist()
    assert dt.zeros(2, requires_grad=True, device_mesh=mesh).requires_grad
    # rand/randn: the values one device draws (PyTorch refuses CPU meshes here)
    ember.manual_seed(3)
    r = dt.randn(4, 3, device_mesh=mesh, placements=[Shard(1)])
    ember.manual_seed(3)
    assert r.full_tensor().tolist() == ember.randn(4, 3).tolist()
    # distribute_module replicates what partition_fn leaves alone, and installs the hooks
    mod = ember.nn.Linear(3, 2)
    tmod = torch.nn.Linear(3, 2)

    def partition(name, m, device_mesh):
        if isinstance(m, (ember.nn.Linear, torch.nn.Linear)):
            m.register_parameter("weight", type(m.weight)(
                (dt if isinstance(m, ember.nn.Linear) else tdt).distribute_tensor(
                    m.weight, device_mesh, [(Shard if isinstance(m, ember.nn.Linear)
                                             else tdt.Shard)(0)])))
    def input_fn(dtmod):
        return lambda mm, inputs, dm: (dtmod.DTensor.from_local(inputs[0], dm),)
    seen = []
    for m, lib, dtmod, msh in ((mod, ember, dt, mesh), (tmod, torch, tdt, tmesh)):
        dtmod.distribute_module(m, msh, partition, input_fn=input_fn(dtmod),
                                output_fn=lambda mm, out, dm: out.to_local())
        out = m(lib.ones(1, 3))
        seen.append((str(m.weight.placements), str(m.bias.placements), type(out).__name__,
                     tuple(out.shape)))
        with pytest.raises(RuntimeError, match="only be called once"):
            dtmod.distribute_module(m, msh)
    assert seen[0] == seen[1]


def test_random_ops_are_the_global_tensors(world):
    mesh = init_device_mesh("cpu", (1,))
    x = distribute_tensor(ember.zeros(5, 4), mesh, [Shard(0)])
    ember.manual_seed(7)
    x.normal_(0.0, 2.0)
    ember.manual_seed(7)
    assert x.full_tensor().tolist() == ember.zeros(5, 4).normal_(0.0, 2.0).tolist()
    ember.manual_seed(1)
    d = ember.nn.functional.dropout(distribute_tensor(ember.ones(4, 6), mesh, [Shard(1)]),
                                    0.5)
    ember.manual_seed(1)
    ref = ember.nn.functional.dropout(ember.ones(4, 6), 0.5)
    assert d.placements == (Shard(1),) and d.full_tensor().tolist() == ref.tolist()


def test_copies_item_and_equal(worlds):
    import copy
    torch = worlds
    import torch.distributed.tensor as tdt
    from torch.distributed.device_mesh import init_device_mesh as t_init
    mesh = init_device_mesh("cpu", (1,))
    x = ember.nn.Parameter(distribute_tensor(ember.ones(4, 3), mesh, [Shard(0)]))
    y = copy.deepcopy(x)
    with ember.no_grad():
        y.mul_(2)
    assert type(y) is type(x) and isinstance(y, ember.nn.Parameter) and y.requires_grad
    assert y.device_mesh is mesh and y.placements == x.placements
    assert x.full_tensor().sum().item() == 12.0 and y.full_tensor().sum().item() == 24.0
    got = [x.sum().item(), ember.equal(x, x), x.equal(y), bool((x > 0).all())]
    tx = tdt.distribute_tensor(torch.ones(4, 3), t_init("cpu", (1,)), [tdt.Shard(0)])
    assert got == [tx.sum().item(), torch.equal(tx, tx), tx.equal(tx * 2), bool((tx > 0).all())]


def test_functional_collectives_world_of_one(worlds):
    torch = worlds
    import torch.distributed._functional_collectives as tfc
    x = np.arange(6.0, dtype=np.float32).reshape(2, 3)
    mesh = init_device_mesh("cpu", (1,))
    for e_call, t_call in (
            (lambda t: funcol.all_reduce(t, "sum", dist.group.WORLD),
             lambda t: tfc.all_reduce(t, "sum", torch.distributed.group.WORLD)),
            (lambda t: funcol.all_reduce(t, "avg", (mesh, 0)),
             lambda t: tfc.all_reduce(t, "avg", torch.distributed.group.WORLD)),
            (lambda t: funcol.all_gather_single(t, 1, mesh),
             lambda t: tfc.all_gather_single(t, 1, torch.distributed.group.WORLD)),
            (lambda t: funcol.reduce_scatter_single(t, "sum", 0, dist.group.WORLD),
             lambda t: tfc.reduce_scatter_single(t, "sum", 0, torch.distributed.group.WORLD)),
            (lambda t: funcol.all_to_all_single(t, None, None, dist.group.WORLD),
             lambda t: tfc.all_to_all_single(t, None, None, torch.distributed.group.WORLD)),
            (lambda t: funcol.all_to_all_single_autograd(t, [2], [2], dist.group.WORLD),
             lambda t: tfc.all_to_all_single_autograd(t, [2], [2],
                                                      torch.distributed.group.WORLD))):
        e = e_call(ember.tensor(x, requires_grad=True))
        t = t_call(torch.tensor(x, requires_grad=True))
        assert _np(e).tolist() == _np(t).tolist()
        assert (e.grad_fn is not None) == (t.grad_fn is not None)
    with pytest.warns(FutureWarning, match="all_gather_tensor` is deprecated"):
        funcol.all_gather_tensor(ember.ones(2), 0, dist.group.WORLD)
    with pytest.warns(FutureWarning, match="ranks \\+ tag"):
        assert funcol.all_reduce(ember.ones(2), "sum", [0]).tolist() == [1.0, 1.0]
    with pytest.raises(RuntimeError, match="Unrecognized reduce_op: foo"):
        funcol.all_reduce(ember.ones(2), "foo", dist.group.WORLD)
    t = ember.ones(2)
    assert funcol.wait_tensor(t) is t
    assert ember.ops._c10d_functional.all_reduce(t, "sum", "0").tolist() == [1.0, 1.0]
    meta = ember.ops._c10d_functional.all_gather_into_tensor(ember.empty(2, 3, device="meta"), 4,
                                                             "0")
    assert tuple(meta.shape) == (8, 3)


def _launch(nproc):
    return subprocess.run([sys.executable, "-m", "ember.distributed.run", "--standalone",
                           "--nproc-per-node", str(nproc), WORKER], cwd=ROOT,
                          capture_output=True, text=True, timeout=240)


@needs_mpi
@pytest.mark.parametrize("nproc", [2, 4])
def test_ranks(nproc):
    # 2 ranks: layouts (even, uneven, empty shards), every redistribution, autograd, a
    # tensor-parallel MLP with SGD/AdamW (foreach and not), functional collectives;
    # 4 ranks: a 2 x 2 mesh (sub-meshes, nested and strided sharding, flattening)
    p = _launch(nproc)
    out = p.stdout + p.stderr
    assert p.returncode == 0, out
    for r in range(nproc):
        assert f"PASS {r}" in out, out
