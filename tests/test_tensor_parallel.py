"""ember.distributed.tensor.parallel (parallelize_module, the ParallelStyles, loss_parallel),
the embedding and layer-norm sharding rules, ember.distributed.algorithms.join with DDP's
join(), the ember.distributed._tensor alias package and ember.distributed.elastic's error
files. In-process on a world of one next to PyTorch's (layouts, values, messages compared), the
sharding rules on PyTorch's fake meshes of several ranks, then two ranks through
``python -m ember.distributed.run`` (tests/_tp_worker.py: a Llama-style model trained with
tensor parallelism against the plain model, loss_parallel, DDP with uneven inputs)."""
import json
import os
import subprocess
import sys
import warnings

import numpy as np
import pytest

import ember
import ember.distributed as dist
import ember.distributed.tensor as dt
import ember.distributed.tensor.parallel as tp
from ember.distributed.device_mesh import DeviceMesh, init_device_mesh

from _tp_worker import make_transformer, tp_plan

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WORKER = os.path.join(ROOT, "tests", "_tp_worker.py")

needs_mpi = pytest.mark.skipif(not dist.is_available(), reason="mpi4py is not installed")


def _libs(torch):
    """(library, tensor module, tensor.parallel module, mesh) for ember and PyTorch."""
    import torch.distributed.tensor as tdt
    import torch.distributed.tensor.parallel as ttp
    from torch.distributed.device_mesh import init_device_mesh as t_init
    return ((ember, dt, tp, init_device_mesh("cpu", (1,))),
            (torch, tdt, ttp, t_init("cpu", (1,))))


def _np(t):
    return t.detach().numpy()


def _copy_weights(e_mod, t_mod):
    e_mod.load_state_dict({k: ember.tensor(v.detach().numpy())
                           for k, v in t_mod.state_dict().items()})


def _placements(t):
    return tuple(str(p) for p in t.placements) if hasattr(t, "placements") else "plain"


def test_parallelized_transformer_as_pytorch(worlds):
    torch = worlds
    torch.manual_seed(0)
    t_model = make_transformer(torch)
    e_model = make_transformer(ember)
    _copy_weights(e_model, t_model)
    tokens = np.array([[1, 5, 11, 0, 3, 3, 7, 2], [4, 4, 9, 10, 6, 1, 0, 8]])
    labels = np.roll(tokens, -1, axis=1)
    seen = []
    for (L, dtmod, tpmod, mesh), model in zip(_libs(torch), (e_model, t_model)):
        tpmod.parallelize_module(model, mesh, tp_plan(tpmod, dtmod))
        params = [(n, _placements(p), type(p).__name__, isinstance(p, L.nn.Parameter))
                  for n, p in model.named_parameters()]
        pred = model(L.tensor(tokens))
        with tpmod.loss_parallel():
            loss = L.nn.functional.cross_entropy(pred.flatten(0, 1),
                                                 L.tensor(labels).flatten(0, 1))
            loss.backward()
        grads = [(n, _placements(p.grad), _np(p.grad.full_tensor()))
                 for n, p in model.named_parameters()]
        seen.append((params, _placements(pred), tuple(pred.shape), _placements(loss),
                     float(loss.full_tensor().detach()), grads))
    (e_params, *e_out, e_loss, e_grads), (t_params, *t_out, t_loss, t_grads) = seen
    assert e_params == t_params and e_out == t_out
    assert e_loss == pytest.approx(t_loss, rel=1e-5)
    for (en, ep, eg), (tn, tpl, tg) in zip(e_grads, t_grads):
        assert (en, ep) == (tn, tpl)
        np.testing.assert_allclose(eg, tg, rtol=1e-4, atol=1e-6, err_msg=en)


def _style_cases(L, D, P):
    """(module, style, input args, input kwargs) covering every style's options."""
    L.manual_seed(0)
    nn = L.nn
    return [
        (nn.Linear(4, 6), P.ColwiseParallel(), (L.ones(2, 4),), {}),
        (nn.Linear(4, 6), P.ColwiseParallel(output_layouts=D.Replicate(),
                                            use_local_output=False), (L.ones(2, 4),), {}),
        (nn.Linear(4, 6, bias=False), P.RowwiseParallel(input_layouts=D.Replicate()),
         (L.ones(2, 4),), {}),
        (nn.Linear(4, 6), P.RowwiseParallel(output_layouts=D.Shard(0), use_local_output=False),
         (L.ones(2, 4),), {}),
        (nn.Embedding(7, 4), P.ColwiseParallel(), (L.tensor([[1, 6], [0, 2]]),), {}),
        (nn.Embedding(7, 4), P.RowwiseParallel(use_local_output=False),
         (L.tensor([[1, 6], [0, 2]]),), {}),
        (nn.LayerNorm(4), P.SequenceParallel(), (L.ones(2, 3, 4),), {}),
        (nn.Dropout(0.0), P.SequenceParallel(sequence_dim=0, use_local_output=True),
         (L.ones(2, 3, 4),), {}),
        (nn.Linear(4, 6), P.PrepareModuleInput(input_layouts=D.Shard(0),
                                               desired_input_layouts=D.Replicate(),
                                               use_local_output=True),
         (L.ones(2, 4),), {}),
        (nn.Linear(4, 6), P.PrepareModuleOutput(output_layouts=D.Replicate(),
                                                desired_output_layouts=D.Shard(1)),
         (L.ones(2, 4),), {}),
        (nn.Bilinear(4, 4, 3), P.PrepareModuleInputOutput(
            input_layouts=(D.Replicate(), None), desired_input_layouts=(D.Replicate(), None),
            use_local_input=True, output_layouts=D.Replicate(),
            desired_output_layouts=D.Replicate(), use_local_output=False),
         (L.ones(2, 4), L.ones(2, 4)), {}),
    ]


def _describe(x):
    if hasattr(x, "placements"):
        return ("DTensor", _placements(x), tuple(x.shape), _np(x.full_tensor()).round(5).tolist())
    return (type(x).__name__, tuple(x.shape), _np(x).round(5).tolist())


def test_styles_as_pytorch(worlds):
    torch = worlds
    libs = _libs(torch)
    cases = [_style_cases(L, D, P) for L, D, P, _ in libs]
    for (e_mod, *_), (t_mod, *_) in zip(*cases):
        _copy_weights(e_mod, t_mod)
    results = []
    for (L, D, P, mesh), lib_cases in zip(libs, cases):
        got = []
        for module, style, args, kwargs in lib_cases:
            P.parallelize_module(module, mesh, style)
            out = module(*args, **kwargs)
            got.append((repr(style), [(n, _placements(p)) for n, p in module.named_parameters()],
                        _describe(out)))
        results.append(got)
    for e, t in zip(*results):
        assert e == t


def test_prepare_module_input_with_kwargs_as_pytorch(worlds):
    torch = worlds
    seen = []
    for L, D, P, mesh in _libs(torch):
        class Scale(L.nn.Module):
            def forward(self, x, *, scale):
                return x * scale
        m = Scale()
        P.parallelize_module(m, mesh, P.PrepareModuleInput(
            input_layouts=(D.Shard(0),), desired_input_layouts=(D.Replicate(),),
            input_kwarg_layouts={"scale": D.Shard(0)},
            desired_input_kwarg_layouts={"scale": D.Replicate()}))
        seen.append(_describe(m(L.ones(2, 3), scale=L.full((2, 3), 2.0))))
    assert seen[0] == seen[1]


def _error(fn):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            fn()
        except Exception as e:  # noqa: BLE001  (the type is what is compared)
            return type(e).__name__, str(e).replace("torch.", "ember.")
    return None


def test_plans_and_errors_as_pytorch(worlds):
    torch = worlds
    results = []
    for L, D, P, mesh in _libs(torch):
        nn = L.nn
        got = []
        # fnmatch patterns at every level, the empty path, an unresolved key (a warning)
        L.manual_seed(0)
        m = nn.Sequential(nn.Sequential(nn.Linear(2, 4), nn.ReLU()),
                          nn.Sequential(nn.Linear(4, 2), nn.ReLU()), nn.Linear(2, 2))
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            out = P.parallelize_module(m, mesh, {"[01].0": P.ColwiseParallel(),
                                                 "2": P.RowwiseParallel(),
                                                 "*.5": P.ColwiseParallel(),
                                                 "": P.PrepareModuleOutput(
                                                     output_layouts=D.Replicate(),
                                                     desired_output_layouts=D.Replicate())})
            none = P.parallelize_module(nn.Linear(2, 2), mesh)
        assert out is m
        got.append([str(x.message) for x in w])
        got.append([(n, _placements(p)) for n, p in m.named_parameters()])
        got.append(type(none).__name__)
        style = P.ColwiseParallel()
        P.parallelize_module(nn.Linear(2, 2), mesh, style, src_data_rank=None)
        got.append(style.src_data_rank)
        got.append([_error(f) for f in (
            lambda: P.parallelize_module(nn.Linear(2, 2), mesh, 3),
            lambda: P.parallelize_module(nn.Conv1d(2, 2, 1), mesh, P.ColwiseParallel()),
            lambda: P.parallelize_module(nn.LayerNorm(2), mesh, P.RowwiseParallel()),
            lambda: P.PrepareModuleInput(input_layouts=(D.Shard(0), None),
                                         desired_input_layouts=(D.Replicate(),)),
            lambda: P.PrepareModuleInput(input_layouts=D.Shard(0)),
            lambda: P.PrepareModuleInput(input_kwarg_layouts={"a": D.Shard(0)}),
            lambda: P.PrepareModuleOutput(output_layouts=(D.Shard(0), None),
                                          desired_output_layouts=D.Replicate()),
            lambda: P.parallelize_module(nn.Linear(2, 2), mesh, P.PrepareModuleInput(
                input_layouts=(D.Shard(0), None), desired_input_layouts=(None, None)))(
                L.ones(2, 2)),
            lambda: P.parallelize_module(nn.Bilinear(2, 2, 2), mesh, P.PrepareModuleInput(
                input_layouts=(D.Shard(0), D.Shard(0)),
                desired_input_layouts=(D.Shard(0), D.Shard(0))))(L.ones(2, 2), 3),
            lambda: P.parallelize_module(nn.Linear(2, 2), mesh, P.PrepareModuleOutput(
                output_layouts=(D.Shard(0), None), desired_output_layouts=(None, None)))(
                L.ones(2, 2)),
            lambda: P.parallelize_module(nn.Dropout(), mesh, P.SequenceParallel())(3))])
        got.append(repr(P.SequenceParallel(sequence_dim=0)) + repr(P.RowwiseParallel()) +
                   repr(P.PrepareModuleOutput(output_layouts=D.Shard(0),
                                              desired_output_layouts=D.Replicate())))
        results.append(got)
    e, t = results
    assert e[1:] == t[1:] and None not in e[4]
    # the warnings name the module: its repr is the same in both libraries
    assert e[0] == t[0] and len(e[0]) == 4


def _fake_mesh_args(lib, dtmod, mesh, inputs):
    args = []
    for shape, placements, dtype in inputs:
        local, _ = dtmod._utils.compute_local_shape_and_global_offset(shape, mesh, placements)
        args.append(dtmod.DTensor.from_local(lib.zeros(local, dtype=dtype), mesh, placements,
                                             shape=lib.Size(shape),
                                             stride=lib.empty(shape).stride()))
    return args


# (op, inputs as (global shape, placement code, integer?), the call's arguments from the
# DTensors) on a 2-rank mesh
_EMB_BWD = (lambda a: (a[0], a[1], 10, -1, False))
RULES = [
    ("embedding.default", [((10, 6), "S0", False), ((3, 4), "R", True)], None),
    ("embedding.default", [((10, 6), "S1", False), ((3, 4), "R", True)], None),
    ("embedding.default", [((10, 6), "R", False), ((4, 4), "S0", True)], None),
    ("embedding.default", [((10, 6), "S0", False), ((4, 4), "S1", True)], None),
    ("embedding_dense_backward.default", [((3, 4, 6), "R", False), ((3, 4), "R", True)],
     _EMB_BWD),
    ("embedding_dense_backward.default", [((3, 4, 6), "S2", False), ((3, 4), "R", True)],
     _EMB_BWD),
    ("embedding_dense_backward.default", [((4, 4, 6), "S0", False), ((4, 4), "S0", True)],
     _EMB_BWD),
    ("embedding_dense_backward.default", [((4, 4, 6), "P", False), ((4, 4), "R", True)],
     _EMB_BWD),
    ("native_layer_norm.default", [((4, 6, 8), "S1", False), ((8,), "R", False),
                                   ((8,), "R", False)], lambda a: (a[0], [8], a[1], a[2], 1e-5)),
    ("native_layer_norm.default", [((4, 6, 8), "S2", False), ((8,), "R", False),
                                   ((8,), "R", False)], lambda a: (a[0], [8], a[1], a[2], 1e-5)),
    ("native_layer_norm.default", [((4, 6, 8), "S1", False)],
     lambda a: (a[0], [6, 8], None, None, 1e-5)),
    ("native_layer_norm.default", [((4, 6, 8), "P", False), ((8,), "S0", False)],
     lambda a: (a[0], [8], a[1], None, 1e-5)),
]


def _rule_call(lib, dtmod, mesh, op_name, inputs, call):
    code = {"R": dtmod.Replicate, "P": dtmod.Partial, "S0": lambda: dtmod.Shard(0),
            "S1": lambda: dtmod.Shard(1), "S2": lambda: dtmod.Shard(2)}
    args = _fake_mesh_args(lib, dtmod, mesh, [(s, [code[c]()], lib.int64 if i else lib.float32)
                                             for s, c, i in inputs])
    packet, overload = op_name.split(".")
    return getattr(getattr(lib.ops.aten, packet), overload)(*(call(args) if call else args))


def _rule_placements(out):
    outs = out if isinstance(out, (tuple, list)) else (out,)
    return [None if o is None else str(o.placements).replace("torch.Size", "Size")
            .replace("ember.Size", "Size") for o in outs]


def test_sharding_rules_as_pytorch(torch):
    from torch.testing._internal.distributed.fake_pg import FakeStore
    import torch.distributed.tensor as tdt
    from torch.distributed.device_mesh import init_device_mesh as t_init
    torch.distributed.init_process_group("fake", rank=0, world_size=2, store=FakeStore())
    try:
        t_mesh = t_init("cpu", (2,))
        e_mesh = DeviceMesh("cpu", [0, 1], _init_backend=False, _rank=0)
        dispatcher = dt.DTensor._op_dispatcher
        for op_name, inputs, call in RULES:
            want = _rule_placements(_rule_call(torch, tdt, t_mesh, op_name, inputs, call))
            # ember's choice without running the op (no peers): sharding propagation alone
            calls = []
            real = dispatcher.propagate_and_run
            dispatcher.propagate_and_run = lambda op, a, k: calls.append(
                dispatcher.sharding_propagator.propagate_op_sharding(
                    dispatcher.unwrap(op, a, k)[0]).output_spec)
            try:
                _rule_call(ember, dt, e_mesh, op_name, inputs, call)
            finally:
                dispatcher.propagate_and_run = real
            specs = calls[0] if isinstance(calls[0], (tuple, list)) else (calls[0],)
            got = [None if s is None else str(s.placements).replace("ember.Size", "Size")
                   for s in specs]
            assert got == want, (op_name, inputs)
    finally:
        torch.distributed.destroy_process_group()


def test_layer_norm_backward_rule_as_pytorch(torch):
    """The gradients of a sequence-parallel LayerNorm's weight and bias are pending sums."""
    from torch.testing._internal.distributed.fake_pg import FakeStore
    import torch.distributed.tensor as tdt
    from torch.distributed.device_mesh import init_device_mesh as t_init
    torch.distributed.init_process_group("fake", rank=0, world_size=2, store=FakeStore())
    try:
        results = []
        for lib, dtmod, mesh in ((torch, tdt, t_init("cpu", (2,))),
                                 (ember, dt, DeviceMesh("cpu", [0, 1], _init_backend=False,
                                                        _rank=0))):
            f32 = lib.float32
            x, g, g0 = _fake_mesh_args(lib, dtmod, mesh, [((4, 6, 8), [dtmod.Shard(1)], f32),
                                                          ((4, 6, 8), [dtmod.Shard(1)], f32),
                                                          ((4, 6, 8), [dtmod.Shard(0)], f32)])
            w, b = _fake_mesh_args(lib, dtmod, mesh, [((8,), [dtmod.Replicate()], f32)] * 2)
            stats = _fake_mesh_args(lib, dtmod, mesh, [((4, 6, 1), [dtmod.Shard(1)], f32)] * 2)
            aten = lib.ops.aten
            if lib is ember:
                dispatcher = dt.DTensor._op_dispatcher

                def bwd(*a):
                    schema = dispatcher.unwrap(aten.native_layer_norm_backward.default, a, {})[0]
                    return dispatcher.sharding_propagator.propagate_op_sharding(
                        schema).output_spec
                outs = [bwd(g, x, [8], *stats, w, b, [True, True, True]),
                        bwd(g0, x, [8], *stats, w, None, [True, True, False])]
            else:
                f = aten.native_layer_norm_backward.default
                outs = [f(g, x, [8], *stats, w, b, [True, True, True]),
                        f(g0, x, [8], *stats, w, None, [True, True, False])]
            results.append([_rule_placements(o) for o in outs])
        assert results[0] == results[1]
    finally:
        torch.distributed.destroy_process_group()


def test_loss_parallel_as_pytorch(worlds):
    torch = worlds
    logits = (np.arange(40.0).reshape(4, 10) % 7 - 3) / 2
    ignored = np.array([1, 9, -100, 4])
    weight = np.linspace(0.5, 2.0, 10)
    results = []
    for L, D, P, mesh in _libs(torch):
        got = []
        F = L.nn.functional
        # (PyTorch's backward gathers the weight at ignored targets, an index error: ember
        # gathers at the safe targets; the two-rank run checks that case against cross_entropy)
        for reduction, w, target in (("mean", None, ignored), ("none", None, ignored),
                                     ("sum", weight, ignored.clip(0)),
                                     ("none", weight, ignored.clip(0)),
                                     ("mean", weight, ignored.clip(0))):
            x = D.distribute_tensor(L.tensor(logits, dtype=L.float32), mesh,
                                    [D.Shard(1)]).requires_grad_()
            kw = {} if w is None else {"weight": L.tensor(w, dtype=L.float32)}
            with P.loss_parallel():
                # inside, log_softmax keeps the class dim sharded
                got.append(_placements(x.log_softmax(1)))
                loss = F.cross_entropy(x, L.tensor(target), reduction=reduction, **kw)
                (loss.to_local() * L.arange(1.0, 1.0 + loss.numel()).view(loss.shape)).sum() \
                    .backward()
            got.append((reduction, _placements(loss), _np(loss.full_tensor()).round(5).tolist(),
                        _placements(x.grad), _np(x.grad.full_tensor()).round(5).tolist()))
        got.append(_placements(x.log_softmax(1)))  # outside: the class dim is gathered
        with P.loss_parallel():
            replicated = D.distribute_tensor(L.ones(2, 3), mesh, [D.Replicate()])
            got.append(_error(lambda: F.cross_entropy(replicated, L.tensor([0, 1]))))
        results.append(got)
    assert results[0] == results[1]
    # the handlers are gone after the block, also when it raised
    handlers = dt.DTensor._op_dispatcher._custom_op_handlers
    with pytest.raises(KeyError):
        with tp.loss_parallel():
            raise KeyError("x")
    assert ember.ops.aten.nll_loss_forward.default not in handlers


def test_join_as_pytorch(worlds):
    torch = worlds
    from torch.distributed.algorithms.join import Join as TJoin, Joinable as TJoinable, \
        JoinHook as TJoinHook
    from ember.distributed.algorithms import Join, Joinable, JoinHook
    results = []
    for L, JoinCls, JoinableCls, HookCls in ((ember, Join, Joinable, JoinHook),
                                             (torch, TJoin, TJoinable, TJoinHook)):
        calls = []

        class Hook(HookCls):
            def main_hook(self):
                calls.append("main")

            def post_hook(self, is_last_joiner):
                calls.append(("post", is_last_joiner))

        class Counter(JoinableCls):
            def __init__(self):
                super().__init__()

            def join_hook(self, **kwargs):
                calls.append(("hook", kwargs))
                return Hook()

            @property
            def join_device(self):
                return L.device("cpu")

            @property
            def join_process_group(self):
                return L.distributed.group.WORLD

            def step(self):
                work = JoinCls.notify_join_context(self)
                calls.append(work is not None)
                if work is not None:
                    work.wait()

        first, second = Counter(), Counter()
        with JoinCls([first, second], flag=3):
            first.step()
            second.step()
        with JoinCls([first], enable=False):
            first.step()
        calls.append(_error(lambda: JoinCls([])))
        calls.append(_error(lambda: JoinableCls()))

        class NoInit(Counter):
            def __init__(self):
                pass
        calls.append(_error(lambda: JoinCls.notify_join_context(NoInit()))[0])
        # DDP under join() on one rank: the plain DDP result
        L.manual_seed(0)
        model = L.nn.parallel.DistributedDataParallel(L.nn.Linear(3, 2))
        with model.join():
            for _ in range(2):
                model(L.ones(4, 3)).sum().backward()
        calls.append(_np(model.module.weight.grad).tolist())
        calls.append(isinstance(model, JoinableCls))
        results.append(calls)
    assert results[0] == results[1]


def test_dtensor_tolist_and_numpy_as_pytorch(worlds):
    torch = worlds
    import torch.distributed.tensor as tdt
    from torch.distributed.device_mesh import init_device_mesh as t_init
    errors = []
    for lib, dtmod, mesh in ((ember, dt, init_device_mesh("cpu", (1,))),
                             (torch, tdt, t_init("cpu", (1,)))):
        x = dtmod.distribute_tensor(lib.arange(6.0).reshape(2, 3), mesh, [dtmod.Shard(0)])
        errors.append([_error(f) for f in (x.tolist, x.numpy, lambda: x.numpy(force=True),
                                           lambda: np.asarray(x), lambda: x[0].tolist(),
                                           lambda: lib.nn.Parameter(x).tolist())])
        errors[-1].append(x.full_tensor().tolist())
    assert errors[0] == errors[1]


def test_tensor_alias_package_as_pytorch(torch):
    import importlib
    import torch.distributed._tensor as t_alias
    import ember.distributed._tensor as e_alias
    import ember.distributed._tensor.placement_types as e_pt
    import ember.distributed._tensor.api as e_api
    names = [n for n in dir(t_alias) if not n.startswith("_") and n[0].isupper() or
             n in ("distribute_tensor", "distribute_module", "init_device_mesh", "ones",
                   "zeros", "empty", "full", "rand", "randn")]
    for n in names:
        assert getattr(e_alias, n) is getattr(dt, n), n
    for n in ("DTensorSpec", "TensorMeta", "Shard", "Replicate", "Partial", "Placement"):
        assert hasattr(importlib.import_module("torch.distributed._tensor.placement_types"), n)
        assert getattr(e_pt, n) is (getattr(dt._dtensor_spec, n, None) or getattr(dt, n))
    assert e_api.DTensor is dt.DTensor and e_api.distribute_tensor is dt.distribute_tensor
    for sub in ("_utils", "experimental", "device_mesh"):
        mod = importlib.import_module(f"ember.distributed._tensor.{sub}")
        assert mod is importlib.import_module(f"ember.distributed.tensor.{sub}")
        assert f"torch.distributed._tensor.{sub}" in sys.modules
    from ember.distributed._tensor.experimental import implicit_replication
    assert implicit_replication is dt.experimental.implicit_replication


def test_elastic_error_files_as_pytorch(torch, tmp_path, monkeypatch):
    from torch.distributed.elastic.multiprocessing import errors as t_err
    from ember.distributed.elastic.multiprocessing import errors as e_err
    failures = []
    for name, mod in (("ember", e_err), ("torch", t_err)):
        path = tmp_path / f"{name}.json"
        monkeypatch.setenv("TORCHELASTIC_ERROR_FILE", str(path))

        @mod.record
        def fails():
            raise ValueError("boom")

        @mod.record
        def exits():
            raise SystemExit(0)

        with pytest.raises(ValueError, match="boom"):
            fails()
        assert exits() is None
        data = json.loads(path.read_text())
        assert data["message"]["message"] == "ValueError: boom"
        assert data["message"]["extraInfo"]["py_callstack"].endswith("ValueError: boom\n")
        # the report of a rank that wrote the file, one that did not, one killed by a signal
        same = {"message": {"message": "ValueError: boom", "extraInfo": {
            "py_callstack": "Traceback:\nValueError: boom\n", "timestamp": "1700000000"}}}
        path.write_text(json.dumps(same))
        err = mod.ChildFailedError("train.py", {
            3: mod.ProcessFailure(1, 42, 1, str(path)),
            5: mod.ProcessFailure(0, 43, -9, str(tmp_path / "missing.json"))})
        rank, first = err.get_first_failure()
        # a ChildFailedError raised under @record: its root cause becomes this process's error
        parent = tmp_path / f"{name}_parent.json"
        monkeypatch.setenv("TORCHELASTIC_ERROR_FILE", str(parent))

        @mod.record
        def agent():
            raise err

        with pytest.raises(mod.ChildFailedError):
            agent()
        failures.append((str(err).replace(str(tmp_path), "DIR").replace(name, "LIB"), rank,
                         first.message, first.timestamp, first.signal_name(),
                         err.failures[5].message.replace("PID 43", ""),
                         json.loads(parent.read_text()),
                         type(mod.get_error_handler()).__name__))
    # the failure without a file is timestamped now: its line may differ by the clock
    e, t = failures
    strip = [line for line in e[0].splitlines() if "time" not in line]
    assert strip == [line for line in t[0].splitlines() if "time" not in line]
    assert e[1:] == t[1:]


def _launch(args, **kw):
    return subprocess.run([sys.executable, "-m", "ember.distributed.run", "--standalone"] + args,
                          cwd=ROOT, capture_output=True, text=True, timeout=240, **kw)


@needs_mpi
def test_launcher_reports_the_recorded_traceback(tmp_path):
    script = tmp_path / "fails.py"
    script.write_text("from ember.distributed.elastic.multiprocessing.errors import record\n"
                      "@record\n"
                      "def main():\n"
                      "    raise ValueError('boom')\n"
                      "main()\n")
    p = _launch(["--nproc-per-node", "1", "--log-dir", str(tmp_path / "logs"), str(script)])
    assert p.returncode == 1
    error_file = tmp_path / "logs" / "attempt_0" / "0" / "error.json"
    assert json.loads(error_file.read_text())["message"]["message"] == "ValueError: boom"
    assert f"error_file: {error_file}" in p.stderr
    assert "traceback : Traceback (most recent call last):" in p.stderr
    assert "raise ValueError('boom')" in p.stderr and "rank      : 0 (local_rank: 0)" in p.stderr


@needs_mpi
def test_two_ranks():
    # a Llama-style model with tensor parallelism (SGD and AdamW steps against the plain model),
    # loss_parallel, a column-parallel embedding, DDP under join() with uneven inputs
    p = _launch(["--nproc-per-node", "2", WORKER])
    out = p.stdout + p.stderr
    assert p.returncode == 0, out
    for r in range(2):
        assert f"PASS {r}" in out, out
