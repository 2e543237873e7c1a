"""FSDP1 (``ember.distributed.fsdp.FullyShardedDataParallel``), its wrap policies, the
checkpoint wrapper and ``ShardedGradScaler``. In-process on ember's and PyTorch's 1-rank gloo
groups (PyTorch on the CPU with ``device_id=cpu``; a world of one runs ``NO_SHARD``, as in
PyTorch): wrapped module trees, parameter names, state-dict keys and optimizer state-dict keys
compared. Then one 2-rank launch (tests/_fsdp1_worker.py): FULL_SHARD / SHARD_GRAD_OP /
NO_SHARD and bfloat16 mixed precision trained against the unsharded model."""
import functools
import os
import subprocess
import sys
import warnings

import numpy as np
import pytest

import ember
import ember.distributed as dist

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WORKER = os.path.join(ROOT, "tests", "_fsdp1_worker.py")

needs_mpi = pytest.mark.skipif(not dist.is_available(), reason="mpi4py is not installed")


@pytest.fixture
def worlds(worlds):
    """The shared 1-rank groups, without the warnings FSDP1 gives on one rank."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield worlds


def _models(lib):
    nn = lib.nn

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln = nn.LayerNorm(4)
            self.fc = nn.Linear(4, 4)
            self.register_buffer("scale", lib.ones(4))

        def forward(self, x):
            return x + self.fc(self.ln(x)) * self.scale

    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(10, 4)
            self.blocks = nn.ModuleList([Block(), Block()])
            self.head = nn.Linear(4, 10)

        def forward(self, x):
            h = self.emb(x)
            for b in self.blocks:
                h = b(h)
            return self.head(h)

    return Block, Model


def _fsdp(lib, policy_fn, **kw):
    if lib.__name__ == "torch":
        from torch.distributed.fsdp import FullyShardedDataParallel as F, wrap
        kw["device_id"] = lib.device("cpu")
    else:
        from ember.distributed.fsdp.fully_sharded_data_parallel import \
            FullyShardedDataParallel as F
        from ember.distributed.fsdp import wrap
    Block, Model = _models(lib)
    lib.manual_seed(0)
    plain = Model()
    model = Model()
    model.load_state_dict(plain.state_dict())
    policy = policy_fn(wrap, Block, lib)
    return F, F(model, auto_wrap_policy=policy, **kw), plain


POLICIES = {
    "transformer": lambda w, B, lib: functools.partial(w.transformer_auto_wrap_policy,
                                                       transformer_layer_cls={B}),
    "module": lambda w, B, lib: w.ModuleWrapPolicy({B, lib.nn.Embedding}),
    "size": lambda w, B, lib: functools.partial(w.size_based_auto_wrap_policy,
                                                min_num_params=30),
    "always": lambda w, B, lib: w.always_wrap_policy,
    "lambda": lambda w, B, lib: functools.partial(
        w.lambda_auto_wrap_policy, lambda_fn=lambda m: isinstance(m, lib.nn.Linear)),
    "custom": lambda w, B, lib: w.CustomPolicy(
        lambda m: {"backward_prefetch": None} if isinstance(m, B) else False),
    "custom_orig": lambda w, B, lib: w.CustomPolicy(
        lambda m: {"use_orig_params": True} if isinstance(m, B) else False),
    "or": lambda w, B, lib: functools.partial(w._or_policy, policies=[
        functools.partial(w.transformer_auto_wrap_policy, transformer_layer_cls={B}),
        functools.partial(w.size_based_auto_wrap_policy, min_num_params=40)]),
    "none": lambda w, B, lib: None,
}


@pytest.mark.parametrize("policy", [p for p in POLICIES if p != "custom_orig"])
@pytest.mark.parametrize("use_orig_params", [False, True])
def test_wrapping_names_and_state_dict_keys_as_pytorch(worlds, policy, use_orig_params):
    torch = worlds
    got = []
    for lib in (torch, ember):
        F, m, plain = _fsdp(lib, POLICIES[policy], use_orig_params=use_orig_params)
        x = lib.tensor([[1, 2, 3], [4, 5, 6]])
        out = m(x)
        out.sum().backward()
        # the wrapped model computes what the plain one does
        np.testing.assert_allclose(out.detach().numpy(), plain(x).detach().numpy(), rtol=1e-6)
        with F.summon_full_params(m):
            full = [(n, tuple(p.shape)) for n, p in m.named_parameters()]
        sd = m.state_dict()
        got.append((repr(m), [(n, tuple(p.shape)) for n, p in m.named_parameters()],
                    [n for n, _ in m.named_buffers()], list(sd), full,
                    [(n, p.grad is None) for n, p in m.named_parameters()]))
        for k, v in plain.state_dict().items():
            assert lib.equal(sd[k], v), k
    assert got[0] == got[1]


def test_state_dict_round_trip_and_optim_state_dict_as_pytorch(worlds):
    torch = worlds
    got = []
    for lib in (torch, ember):
        for uop in (False, True):
            F, m, _ = _fsdp(lib, POLICIES["transformer"], use_orig_params=uop)
            opt = lib.optim.AdamW(m.parameters(), lr=0.1)
            m(lib.tensor([[1, 2, 3]])).sum().backward()
            opt.step()
            osd = F.optim_state_dict(m, opt)
            load = F.optim_state_dict_to_load(m, opt, osd)
            opt.load_state_dict(load)
            sd = {k: v.clone() for k, v in m.state_dict().items()}
            with F.summon_full_params(m):
                for p in m.parameters():
                    p.data.zero_()
            m.load_state_dict(sd)
            after = m.state_dict()
            got.append((list(osd["state"]), [sorted(v) for v in osd["state"].values()],
                        osd["param_groups"][0]["params"],
                        [sorted(v) for v in load["state"].values()],
                        [(lib.equal(sd[k], after[k])) for k in sd],
                        {k: tuple(v["exp_avg"].shape) for k, v in osd["state"].items()}))
    assert got[:2] == got[2:]


def test_errors_as_pytorch(worlds):
    torch = worlds
    errs = []
    for lib in (torch, ember):
        F, m, _ = _fsdp(lib, POLICIES["transformer"])
        m(lib.tensor([[1, 2]]))
        mod = sys.modules[F.__module__]
        cases = [lambda: m.module.blocks[0].no_sync().__enter__(),
                 lambda: m.module.blocks[0].clip_grad_norm_(1.0),
                 lambda: F.set_state_dict_type(m, mod.StateDictType.FULL_STATE_DICT,
                                               mod.ShardedStateDictConfig()),
                 lambda: F.summon_full_params(m, rank0_only=True).__enter__(),
                 lambda: F.summon_full_params(m, with_grads=True).__enter__(),
                 lambda: F(m.module.blocks[0], ignored_modules=[1], ignored_states=[2]),
                 lambda: _fsdp(lib, POLICIES["custom_orig"])[1](lib.tensor([[1]]))]
        out = []
        for c in cases:
            with pytest.raises(Exception) as ei:
                c()
            out.append((type(ei.value).__name__, str(ei.value).replace("torch.", "ember.")
                        .replace("ember.distributed", "X").replace("torch", "ember")))
        errs.append(out)
    assert errs[0] == errs[1]


def test_checkpoint_wrapper_keys_and_numbers_as_pytorch(torch):
    got = []
    for lib in (torch, ember):
        if lib is torch:
            from torch.distributed.algorithms._checkpoint import checkpoint_wrapper as cw
        else:
            from ember.distributed.algorithms._checkpoint import checkpoint_wrapper as cw
        lib.manual_seed(0)
        m = lib.nn.Sequential(lib.nn.Linear(3, 4), lib.nn.GELU(), lib.nn.Linear(4, 2))
        with lib.no_grad():  # the same numbers in both libraries
            for i, p in enumerate(m.parameters()):
                p.copy_(lib.linspace(-0.5, 0.5, p.numel()).reshape(p.shape) * (i + 1))
        plain_sd = {k: v.clone() for k, v in m.state_dict().items()}
        cw.apply_activation_checkpointing(
            m, checkpoint_wrapper_fn=functools.partial(
                cw.checkpoint_wrapper, checkpoint_impl=cw.CheckpointImpl.NO_REENTRANT),
            check_fn=lambda s: isinstance(s, lib.nn.Linear))
        r = lib.nn.Sequential(lib.nn.Linear(3, 4))
        r[0] = cw.checkpoint_wrapper(r[0], cw.CheckpointImpl.REENTRANT)
        o = cw.offload_wrapper(lib.nn.Linear(3, 4))
        x = lib.linspace(-1, 1, 6).reshape(2, 3).requires_grad_()
        y = m(x)
        y.sum().backward()
        m.load_state_dict(plain_sd)
        r(x.detach().requires_grad_()).sum().backward()  # (random weights: only run)
        got.append((repr(m), list(m.state_dict()), [n for n, _ in m.named_parameters()],
                    list(r.state_dict()), list(o.state_dict()), y.detach().numpy(),
                    x.grad.numpy(), m[0].weight.grad.numpy(), type(m[0]).__name__,
                    m[0].in_features))
    t, e = got
    assert t[:5] == e[:5] and t[8:] == e[8:]
    for a, b in zip(e[5:8], t[5:8]):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_sharded_grad_scaler_as_pytorch(worlds):
    torch = worlds
    got = []
    for lib in (torch, ember):
        if lib is torch:
            from torch.distributed.fsdp.sharded_grad_scaler import ShardedGradScaler
        else:
            from ember.distributed.fsdp.sharded_grad_scaler import ShardedGradScaler
        p = lib.nn.Parameter(lib.ones(3))
        opt = lib.optim.SGD([p], lr=0.1)
        s = ShardedGradScaler(device="cpu", init_scale=4.0, growth_interval=1)
        trace = []
        for bad in (False, True, False):
            opt.zero_grad()
            loss = (p * (float("inf") if bad else 2.0)).sum()
            s.scale(loss).backward()
            s.step(opt)
            s.update()
            trace.append((s.get_scale(), p.detach().tolist()))
        got.append(trace)
    assert got[0] == got[1]


def test_api_dataclasses_as_pytorch(torch):
    import dataclasses
    from torch.distributed.fsdp import api as tapi
    from ember.distributed.fsdp import api as eapi
    assert eapi.__all__ == tapi.__all__
    for name in tapi.__all__:
        t, e = getattr(tapi, name), getattr(eapi, name)
        if dataclasses.is_dataclass(t):
            assert [(f.name, f.default) for f in dataclasses.fields(e) if f.name[0] != "_"] == \
                [(f.name, f.default) for f in dataclasses.fields(t) if f.name[0] != "_"]
        else:
            assert [m.name for m in e] == [m.name for m in t]


@needs_mpi
def test_two_ranks():
    p = subprocess.run([sys.executable, "-m", "ember.distributed.run", "--standalone",
                        "--nproc-per-node", "2", WORKER], cwd=ROOT, capture_output=True,
                       text=True, timeout=240)
    out = p.stdout + p.stderr
    assert p.returncode == 0, out
    for r in range(2):
        assert f"PASS {r}" in out, out
