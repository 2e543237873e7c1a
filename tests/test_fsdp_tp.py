"""FSDP2 over tensor-parallel parameters (the 2-D "FSDP + TP" recipe): a Llama parallelized on
the "tp" dim of a mesh, then ``fully_shard`` over its "dp" dim. In-process on a world of one,
ember's and PyTorch's 1-rank gloo groups side by side, on (1, 1) meshes: the parameters'
placements and meshes, the shapes, the unsharded TP parameters, the state dicts, a training
step with AdamW (plain, bfloat16 mixed precision with gradient accumulation, HSDP + TP), the
errors. Then four ranks through ``python -m ember.distributed.run`` (tests/_fsdp_tp_worker.py:
a (dp=2, tp=2) mesh trained against the plain model on the full batch)."""
import os
import subprocess
import sys

import numpy as np
import pytest

import ember
import ember.distributed as dist
import ember.distributed.tensor as dt
import ember.distributed.tensor.parallel as tp
from ember.distributed.device_mesh import init_device_mesh
from ember.distributed.fsdp import fully_shard

from _tp_worker import make_transformer, tp_plan

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WORKER = os.path.join(ROOT, "tests", "_fsdp_tp_worker.py")

needs_mpi = pytest.mark.skipif(not dist.is_available(), reason="mpi4py is not installed")

TOKENS = np.array([[1, 5, 11, 0, 3, 3, 7, 2], [4, 4, 9, 10, 6, 1, 0, 8]])
LABELS = np.roll(TOKENS, -1, axis=1)


def _libs(torch):
    """(library, tensor module, tensor.parallel module, fully_shard, init_device_mesh) for
    ember and PyTorch."""
    import torch.distributed.tensor as tdt
    import torch.distributed.tensor.parallel as ttp
    from torch.distributed.device_mesh import init_device_mesh as t_init
    from torch.distributed.fsdp import fully_shard as t_fully_shard
    return ((ember, dt, tp, fully_shard, init_device_mesh),
            (torch, tdt, ttp, t_fully_shard, t_init))


def _np(t):
    # a copy: PyTorch cannot free a storage that NumPy has seen
    return t.detach().float().clone().numpy()


def _placements(t):
    return tuple(str(p) for p in t.placements)


def _twin_models(torch, mesh_shape=(1, 1), names=("dp", "tp"), dp=("dp",), **kwargs):
    """The same Llama in ember and PyTorch: parallelized on "tp", ``fully_shard`` over the
    ``dp`` dims on each block and on the root. Yields (library, model, tensor.parallel)."""
    torch.manual_seed(0)
    t_model = make_transformer(torch, n_layers=1)
    e_model = make_transformer(ember, n_layers=1)
    e_model.load_state_dict({k: ember.tensor(v.detach().numpy())
                             for k, v in t_model.state_dict().items()})
    out = []
    for (L, dtmod, tpmod, fs, init), model in zip(_libs(torch), (e_model, t_model)):
        mesh = init("cpu", mesh_shape, mesh_dim_names=names)
        tpmod.parallelize_module(model, mesh["tp"], tp_plan(tpmod, dtmod))
        dp_mesh = mesh[dp] if len(dp) > 1 else mesh[dp[0]]
        kw = {k: v(L) if callable(v) else v for k, v in kwargs.items()}
        for layer in model.layers:
            fs(layer, mesh=dp_mesh, **kw)
        fs(model, mesh=dp_mesh, **kw)
        out.append((L, model, tpmod))
    return out


def _describe_params(model):
    return [(n, type(p).__name__, _placements(p), p.device_mesh.mesh_dim_names,
             tuple(p.device_mesh.shape), tuple(p.shape), tuple(p.to_local().shape),
             p.requires_grad) for n, p in model.named_parameters()]


def _step(L, model, tpmod, opt=None):
    """Forward on TOKENS, loss_parallel cross-entropy, backward (and the optimizer's step):
    the loss."""
    pred = model(L.tensor(TOKENS))
    with tpmod.loss_parallel():
        loss = L.nn.functional.cross_entropy(pred.flatten(0, 1), L.tensor(LABELS).flatten(0, 1))
        loss.backward()
    if opt is not None:
        opt.step()
        opt.zero_grad()
    return float(loss.full_tensor().detach())


def test_placements_and_shapes_as_pytorch(worlds):
    (_, e_model, _), (_, t_model, _) = _twin_models(worlds)
    e_params = _describe_params(e_model)
    assert e_params == _describe_params(t_model)
    wq = dict(e_model.named_parameters())["layers.0.attention.wq.weight"]
    assert _placements(wq) == ("S(0)", "S(0)")  # FSDP's over "dp", TP's over "tp"
    assert repr(wq.device_mesh) == repr(dict(t_model.named_parameters())[
        "layers.0.attention.wq.weight"].device_mesh)
    # unsharded: the TP DTensors over "tp", which the TP layers compute with
    for m in (e_model, t_model):
        m.layers[0].unshard()
    seen = []
    for m in (e_model, t_model):
        w = m.layers[0].feed_forward.w2.weight
        seen.append((type(w).__name__, _placements(w), w.device_mesh.mesh_dim_names,
                     tuple(w.shape), w.requires_grad, _np(w.full_tensor()).tolist()))
        m.layers[0].reshard()
    assert seen[0] == seen[1]
    assert type(e_model.layers[0].feed_forward.w2.weight).__name__ == "DTensor"


def test_state_dict_as_pytorch(worlds):
    (_, e_model, _), (_, t_model, _) = _twin_models(worlds)
    e_sd, t_sd = e_model.state_dict(), t_model.state_dict()
    assert list(e_sd) == list(t_sd)
    for key in e_sd:
        e, t = e_sd[key], t_sd[key]
        assert (type(e).__name__, _placements(e), tuple(e.shape)) == \
            (type(t).__name__, _placements(t), tuple(t.shape)), key
        np.testing.assert_array_equal(_np(e.full_tensor()), _np(t.full_tensor()), err_msg=key)
    # the sharded state dict loads back (the values copied into the 2-D DTensors)
    changed = {k: v * 2 for k, v in e_sd.items()}
    e_model.load_state_dict(changed)
    for key, value in e_model.state_dict().items():
        assert _placements(value) == _placements(e_sd[key]), key
        np.testing.assert_array_equal(_np(value.full_tensor()), 2 * _np(t_sd[key].full_tensor()))


def _train_and_compare(models, steps, **opt_kwargs):
    """``steps`` AdamW steps on both models: the losses, gradients and parameters agree."""
    (e_lib, e_model, e_tp), (t_lib, t_model, t_tp) = models
    e_opt = e_lib.optim.AdamW(e_model.parameters(), lr=0.01, **opt_kwargs)
    t_opt = t_lib.optim.AdamW(t_model.parameters(), lr=0.01, **opt_kwargs)
    for step in range(steps):
        e_loss, t_loss = _step(e_lib, e_model, e_tp), _step(t_lib, t_model, t_tp)
        assert e_loss == pytest.approx(t_loss, rel=1e-5), step
        for (name, e), (_, t) in zip(e_model.named_parameters(), t_model.named_parameters()):
            assert (_placements(e.grad), e.grad.dtype.is_floating_point) == \
                (_placements(t.grad), True), name
            np.testing.assert_allclose(_np(e.grad.full_tensor()), _np(t.grad.full_tensor()),
                                       rtol=1e-4, atol=1e-6, err_msg=f"grad {name} {step}")
        e_opt.step(), t_opt.step()
        e_opt.zero_grad(), t_opt.zero_grad()
        for (name, e), (_, t) in zip(e_model.named_parameters(), t_model.named_parameters()):
            np.testing.assert_allclose(_np(e.full_tensor()), _np(t.full_tensor()), rtol=1e-5,
                                       atol=1e-6, err_msg=f"{name} {step}")


def test_adamw_step_as_pytorch(worlds):
    _train_and_compare(_twin_models(worlds), 1, weight_decay=0.1)


def test_hsdp_with_tp_as_pytorch(worlds):
    """A (replicate, shard, tp) mesh: placements (Replicate(), Shard(0), <TP>)."""
    models = _twin_models(worlds, (1, 1, 1), ("rep", "shard", "tp"), dp=("rep", "shard"))
    (_, e_model, _), (_, t_model, _) = models
    assert _describe_params(e_model) == _describe_params(t_model)
    assert _placements(e_model.layers[0].feed_forward.w2.weight) == ("R", "S(0)", "S(1)")
    _train_and_compare(models, 1)


def test_mixed_precision_and_accumulation_as_pytorch(worlds):
    """bfloat16 compute with float32 reduction: the unsharded TP DTensors are bfloat16, and a
    microbatch without synchronization keeps a float32 TP gradient to add to."""
    models = _twin_models(worlds, mp_policy=lambda L: L.distributed.fsdp.MixedPrecisionPolicy(
        param_dtype=L.bfloat16, reduce_dtype=L.float32))
    seen = []
    for L, model, tpmod in models:
        model.layers[0].unshard()
        w = model.layers[0].attention.wq.weight
        assert w.dtype == L.bfloat16 and w.to_local().dtype == L.bfloat16
        model.layers[0].reshard()
        model.set_requires_gradient_sync(False)
        _step(L, model, tpmod)
        assert all(p.grad is None for p in model.parameters())
        model.set_requires_gradient_sync(True)
        loss = _step(L, model, tpmod)
        seen.append((loss, [(n, _placements(p.grad), str(p.grad.dtype).split(".")[-1],
                             _np(p.grad.full_tensor())) for n, p in model.named_parameters()]))
    (e_loss, e_grads), (t_loss, t_grads) = seen
    assert e_loss == pytest.approx(t_loss, rel=1e-2)
    for (en, ep, edt, eg), (tn, tpl, tdt, tg) in zip(e_grads, t_grads):
        assert (en, ep, edt) == (tn, tpl, tdt)
        np.testing.assert_allclose(eg, tg, rtol=2e-2, atol=2e-3, err_msg=en)


def test_errors_as_pytorch(worlds):
    torch = worlds
    seen = []
    for L, dtmod, _, fs, init in _libs(torch):
        # a DTensor over a 3-D mesh: FSDP composes with 1-D TP/EP or 2-D EP+TP only
        mesh = init("cpu", (1, 1, 1, 1), mesh_dim_names=("dp", "ep", "tp", "x"))
        lin = L.nn.Linear(2, 2)
        lin.weight = L.nn.Parameter(dtmod.distribute_tensor(
            lin.weight.detach(), mesh[("ep", "tp", "x")], [dtmod.Replicate()] * 3))
        with pytest.raises(NotImplementedError) as e:
            fs(lin, mesh=mesh["dp"])
        seen.append(str(e.value))
        # concatenating the data-parallel mesh with the TP mesh needs names
        unnamed = init("cpu", (1,))
        lin = L.nn.Linear(2, 2)
        lin.weight = L.nn.Parameter(dtmod.distribute_tensor(
            lin.weight.detach(), init("cpu", (1,), mesh_dim_names=("tp",)),
            [dtmod.Replicate()]))
        with pytest.raises(TypeError) as e:
            fs(lin, mesh=unnamed)
        seen.append(str(e.value))
    assert seen[0] == seen[2] and seen[1] == seen[3], seen


@needs_mpi
def test_four_ranks():
    # a (dp=2, tp=2) mesh: TP on "tp", FSDP2 on "dp", 3 AdamW steps against the plain model
    # on the full batch (losses, every parameter's and gradient's full_tensor(), placements
    # with _StridedShard, the unsharded TP parameters, the state dict)
    p = subprocess.run([sys.executable, "-m", "ember.distributed.run", "--standalone",
                        "--nproc-per-node", "4", WORKER], cwd=ROOT, capture_output=True,
                       text=True, timeout=240)
    out = p.stdout + p.stderr
    assert p.returncode == 0, out
    for r in range(4):
        assert f"PASS {r}" in out, out
