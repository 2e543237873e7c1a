"""Autocast: the per-device policy tables, the Autocast dispatch key's kernels, nesting, thread
locality, the cast cache, custom_fwd/custom_bwd. PyTorch 2.13 is the oracle on CPU; CUDA-only
policies (fp32_set_opt_dtype, promote on ops ember has, banned) are exercised by attaching the
CUDA policy kernel to the CPU key for one test, since no GPU is needed to check the casts."""
import threading
import warnings

import numpy as np
import pytest

import ember
from ember._dispatch import dispatcher as _d
from ember._dispatch.keys import K
from ember.amp import policies
from helpers import assert_same, from_np, to_torch


def _pair(torch, *shape, dtype=np.float32, requires_grad=False, seed=0):
    a = np.random.default_rng(seed).standard_normal(shape).astype(dtype)
    e, t = from_np(a), torch.from_numpy(a.copy())
    if requires_grad:
        e.requires_grad_(True)
        t.requires_grad_(True)
    return e, t


# ---------------------------------------------------------------------------------------------
# The tables are PyTorch's.

@pytest.mark.parametrize("device,key", [("cpu", "AutocastCPU"), ("cuda", "AutocastCUDA")])
def test_policy_table_matches_pytorch_registrations(torch, device, key):
    names = torch._C._dispatch_get_all_op_names()
    theirs = {n.replace("aten::", "") for n in names
              if n.startswith("aten::") and torch._C._dispatch_has_kernel_for_dispatch_key(n, key)}
    assert set(policies.TABLES[device]) == theirs


def test_kernels_attached_to_existing_and_new_ops():
    assert _d.get_entry("aten::mm").has_kernel(K.AutocastCPU)
    assert _d.get_entry("aten::mm").has_kernel(K.AutocastCUDA)
    assert not _d.get_entry("aten::add.Tensor").has_kernel(K.AutocastCPU)  # falls through
    from ember.library import _entry_setup_hooks
    assert policies._attach in _entry_setup_hooks
    assert "AutocastCPU: registered at ember/amp/policies.py (lower_precision_fp)" in \
        ember._C._dispatch_dump_table("aten::matmul")


# ---------------------------------------------------------------------------------------------
# Seed 002, exercise 2 (on the CPU): keys, kernel order and the result dtype.

def test_seed_exercise_2_no_grad_autocast_matmul(torch):
    ea, ta = _pair(torch, 4, 3, requires_grad=True)
    eb, tb = _pair(torch, 3, 5, requires_grad=True, seed=1)
    with ember.no_grad(), ember.autocast("cpu", dtype=ember.bfloat16):
        ey = ea @ eb
    with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16):
        ty = ta @ tb
    assert ey.dtype is ember.bfloat16 and ey.requires_grad is False
    assert ty.requires_grad is False
    assert_same(ey, ty, rtol=1e-2, atol=1e-2)


def test_gradients_reach_fp32_leaves_in_fp32(torch):
    ea, ta = _pair(torch, 4, 3, requires_grad=True)
    eb, tb = _pair(torch, 3, 5, requires_grad=True, seed=1)
    with ember.autocast("cpu"):
        ey = ember.mm(ea, eb)
    with torch.autocast("cpu"):
        ty = torch.mm(ta, tb)
    assert type(ey.grad_fn).__name__ == type(ty.grad_fn).__name__ == "MmBackward0"
    ey.float().sum().backward()
    ty.float().sum().backward()
    assert ea.grad.dtype is ember.float32 and eb.grad.dtype is ember.float32
    assert_same(ea.grad, ta.grad, rtol=2e-2, atol=2e-2)
    assert_same(eb.grad, tb.grad, rtol=2e-2, atol=2e-2)


# ---------------------------------------------------------------------------------------------
# One sample op per CPU list, against PyTorch.

@pytest.mark.parametrize("op,shapes", [
    ("mm", [(3, 4), (4, 2)]),
    ("matmul", [(2, 3, 4), (4, 2)]),
    ("bmm", [(2, 3, 4), (2, 4, 5)]),
    ("addmm", [(2,), (3, 4), (4, 2)]),
])
def test_cpu_lower_precision_ops(torch, op, shapes):
    pairs = [_pair(torch, *s, seed=i) for i, s in enumerate(shapes)]
    with ember.autocast("cpu"):
        e = getattr(ember, op)(*[p[0] for p in pairs])
    with torch.autocast("cpu"):
        t = getattr(torch, op)(*[p[1] for p in pairs])
    assert_same(e, t, rtol=2e-2, atol=5e-2)


def test_cpu_fp32_op_prod(torch):
    e, t = _pair(torch, 2, 3)
    e, t = e.bfloat16(), t.bfloat16()
    with ember.autocast("cpu"):
        er, erd = ember.prod(e), ember.prod(e, 1)
    with torch.autocast("cpu"):
        tr, trd = torch.prod(t), torch.prod(t, 1)
    assert er.dtype is ember.float32 and erd.dtype is ember.float32
    assert_same(er, tr, rtol=1e-2)
    assert_same(erd, trd, rtol=1e-2)


def test_ops_outside_the_table_are_untouched(torch):
    e, t = _pair(torch, 2, 3)
    with ember.autocast("cpu"):
        r = ember.exp(e.bfloat16())  # exp is fp32 on CUDA only
        s = e + e
    with torch.autocast("cpu"):
        tr = torch.exp(t.bfloat16())
    assert_same(r, tr, rtol=1e-2)
    assert s.dtype is ember.float32


def test_float64_and_integer_inputs_are_never_cast(torch):
    e, t = _pair(torch, 3, 3, dtype=np.float64)
    with ember.autocast("cpu"):
        r = ember.mm(e, e)
        i = ember.mm(ember.ones(2, 2, dtype=ember.int64), ember.ones(2, 2, dtype=ember.int64))
    with torch.autocast("cpu"):
        tr = torch.mm(t, t)
    assert_same(r, tr)
    assert i.dtype is ember.int64


def test_cpu_float16_region(torch):
    ea, ta = _pair(torch, 3, 4)
    with ember.autocast("cpu", dtype=ember.float16):
        e = ember.mm(ea, ea.t())
    with torch.autocast("cpu", dtype=torch.float16):
        t = torch.mm(ta, ta.t())
    assert_same(e, t, rtol=1e-2, atol=1e-2)


# ---------------------------------------------------------------------------------------------
# Policies that only the CUDA table uses, checked by attaching the CUDA policy to AutocastCPU.

@pytest.fixture
def cpu_policy():
    attached = []

    def attach(qualname, policy):
        entry = _d.get_entry(qualname)
        kernel = _d.Kernel(policies._make_kernel(entry, "cpu", policy), _d.KEYSET, "test")
        entry.register(K.AutocastCPU, kernel)
        attached.append((entry, kernel))
    yield attach
    for entry, kernel in attached:
        entry.deregister(K.AutocastCPU, kernel)


def test_fp32_policy_casts_lower_precision_up(cpu_policy):
    cpu_policy("aten::exp", "fp32")
    x = ember.ones(3, dtype=ember.bfloat16)
    with ember.autocast("cpu"):
        assert ember.exp(x).dtype is ember.float32
    assert ember.exp(x).dtype is ember.bfloat16  # outside the region: no autocast


def test_fp32_set_opt_dtype_policy(cpu_policy):
    cpu_policy("aten::sum.dim_IntList", "fp32_set_opt_dtype")
    x = ember.ones(2, 3, dtype=ember.bfloat16)
    with ember.autocast("cpu"):
        assert ember.sum(x, 1).dtype is ember.float32
        assert ember.sum(x, 1, dtype=ember.float64).dtype is ember.float64  # an explicit dtype wins
        assert ember.sum(ember.ones(2, 3, dtype=ember.int64), 1).dtype is ember.int64


def test_promote_policy(cpu_policy):
    cpu_policy("aten::dot", "promote")
    lo, hi = ember.ones(3, dtype=ember.bfloat16), ember.ones(3)
    with ember.autocast("cpu"):
        assert ember.dot(lo, hi).dtype is ember.float32  # float32 wins
        assert ember.dot(lo, lo).dtype is ember.bfloat16
        with pytest.raises(RuntimeError, match="Unexpected floating ScalarType"):
            ember.dot(lo, ember.ones(3, dtype=ember.float16))


def test_banned_policy_message(torch, cpu_policy):
    cpu_policy("aten::mv", "banned")
    with ember.autocast("cpu"):
        with pytest.raises(RuntimeError) as e:
            ember.mv(ember.ones(2, 2), ember.ones(2))
    assert str(e.value).startswith("torch.nn.functional.binary_cross_entropy and torch.nn.BCELoss "
                                   "are unsafe to autocast.")


# ---------------------------------------------------------------------------------------------
# Regions: nesting, disabling, decorators, threads, state functions.

def test_nested_and_disabled_regions(torch):
    ea, ta = _pair(torch, 2, 2)
    results = []
    for lib, a in ((ember, ea), (torch, ta)):
        seen = []
        with lib.autocast("cpu"):
            seen.append(lib.mm(a, a).dtype)
            with lib.autocast("cpu", enabled=False):
                seen.append(lib.mm(a, a).dtype)
                seen.append(lib.is_autocast_enabled("cpu"))
            with lib.autocast("cpu", dtype=lib.float16):
                seen.append(lib.mm(a, a).dtype)
                seen.append(lib.get_autocast_dtype("cpu"))
            seen.append(lib.mm(a, a).dtype)
            seen.append(lib.is_autocast_enabled("cpu"))
        seen.append(lib.mm(a, a).dtype)
        seen.append(lib.is_autocast_enabled("cpu"))
        results.append([str(s).split(".")[-1] for s in seen])
    assert results[0] == results[1]


def test_state_functions_match_pytorch(torch):
    for lib in (ember, torch):
        assert str(lib.get_autocast_dtype("cpu")).endswith("bfloat16")
        assert str(lib.get_autocast_dtype("cuda")).endswith("float16")
        assert lib.is_autocast_enabled("cpu") is False
        assert lib.is_autocast_enabled() is False
        assert lib.is_autocast_cache_enabled() is True
        with lib.autocast("cpu"):
            assert lib.is_autocast_enabled("cpu") is True
            assert lib.is_autocast_enabled() is False  # no argument: CUDA
            assert lib.autocast_increment_nesting() == 2
            assert lib.autocast_decrement_nesting() == 1
    ember.set_autocast_dtype("cpu", ember.float16)
    try:
        assert ember.get_autocast_dtype("cpu") is ember.float16
    finally:
        ember.set_autocast_dtype("cpu", ember.bfloat16)
    with pytest.warns(DeprecationWarning, match="get_autocast_cpu_dtype"):
        assert ember.get_autocast_cpu_dtype() is ember.bfloat16


def test_decorator_and_deprecated_spellings():
    @ember.autocast("cpu")
    def f(a):
        return ember.mm(a, a)
    a = ember.ones(2, 2)
    assert f(a).dtype is ember.bfloat16
    assert ember.mm(a, a).dtype is ember.float32
    with pytest.warns(FutureWarning, match=r"torch.cpu.amp.autocast\(args...\)` is deprecated"):
        region = ember.cpu.amp.autocast()
    with region:
        assert ember.mm(a, a).dtype is ember.bfloat16
    with ember.amp.autocast("cpu"):
        assert ember.mm(a, a).dtype is ember.bfloat16


def test_autocast_is_thread_local():
    a = ember.ones(2, 2)
    seen = {}

    def worker():
        seen["enabled"] = ember.is_autocast_enabled("cpu")
        seen["dtype"] = ember.mm(a, a).dtype
    with ember.autocast("cpu"):
        t = threading.Thread(target=worker)
        t.start()
        t.join()
        assert ember.mm(a, a).dtype is ember.bfloat16
    assert seen == {"enabled": False, "dtype": ember.float32}


def test_constructor_errors_and_warnings(torch):
    for lib in (ember, torch):
        with pytest.raises(ValueError, match="Expected `device_type` of type `str`"):
            lib.autocast(lib.device("cpu"))
        with pytest.raises(RuntimeError, match="Expected one of cpu, cuda"):
            lib.autocast("xyz")
        # (dtypes print with their library's name: torch.bfloat16 / ember.bfloat16)
        with pytest.warns(UserWarning, match=r"CPU Autocast only supports dtypes of "
                                             r"\w+\.bfloat16, \w+\.float16 currently\."):
            region = lib.autocast("cpu", dtype=lib.float32)
        assert region._enabled is False
    if not ember.cuda.is_available():
        with pytest.warns(UserWarning, match="CUDA is not available"):
            assert ember.autocast("cuda")._enabled is False
    with pytest.raises(TypeError, match="requires a callable"):
        ember.autocast("cpu")(3)


# ---------------------------------------------------------------------------------------------
# The cast cache.

def test_cast_cache_for_leaves_that_require_grad():
    state = ember.amp.autocast_mode.state
    w = ember.ones(3, 3, requires_grad=True)
    x = ember.ones(3, 3)
    with ember.autocast("cpu"):
        y1 = ember.mm(w, x)
        y2 = ember.mm(w, x)
        assert len(state.cache) == 1  # w only: x does not require grad
        with ember.autocast("cpu"):
            ember.mm(w, x)
        assert len(state.cache) == 1  # an inner exit does not clear it
        (w_cast,) = [v for _, v in state.cache.values()]
        assert w_cast.dtype is ember.bfloat16
        ember.mm(w * 1, x)  # a non-leaf is never cached
        assert len(state.cache) == 1
    assert state.cache == {}  # cleared when the outermost region exits
    with ember.autocast("cpu", cache_enabled=False):
        ember.mm(w, x)
        assert state.cache == {}
    (y1.float().sum() + y2.float().sum()).backward()
    assert w.grad.dtype is ember.float32
    np.testing.assert_allclose(w.grad._nd(), np.full((3, 3), 6.0))


def test_cast_goes_through_to_copy_so_autograd_records_it():
    w = ember.ones(2, 2, requires_grad=True)
    with ember.autocast("cpu"):
        y = ember.mm(w, w)
    nxt = y.grad_fn.next_functions
    assert [type(n).__name__ for n, _ in nxt] == ["ToCopyBackward0", "ToCopyBackward0"]


# ---------------------------------------------------------------------------------------------
# custom_fwd / custom_bwd.

def test_custom_fwd_casts_inputs_and_custom_bwd_restores_state(torch):
    record = {}

    def make(lib):
        class MyMM(lib.autograd.Function):
            @staticmethod
            @lib.amp.custom_fwd(device_type="cpu", cast_inputs=lib.float32)
            def forward(ctx, a, b):
                ctx.save_for_backward(a, b)
                record[lib.__name__ + "fwd"] = (a.dtype, lib.mm(a, b).dtype)
                return lib.mm(a, b)

            @staticmethod
            @lib.amp.custom_bwd(device_type="cpu")
            def backward(ctx, g):
                a, b = ctx.saved_tensors
                record[lib.__name__ + "bwd"] = lib.is_autocast_enabled("cpu")
                return g.mm(b.t()), a.t().mm(g)
        return MyMM

    ea, ta = _pair(torch, 2, 2, requires_grad=True)
    for lib, a in ((ember, ea), (torch, ta)):
        with lib.autocast("cpu"):
            y = make(lib).apply(a.bfloat16(), a)
        y.sum().backward()
        assert str(y.dtype).endswith("float32")
    e_fwd, t_fwd = record["emberfwd"], record["torchfwd"]
    assert [str(d).split(".")[-1] for d in e_fwd] == [str(d).split(".")[-1] for d in t_fwd]
    assert record["emberbwd"] == record["torchbwd"] is False
    assert_same(ea.grad, ta.grad, rtol=1e-2, atol=1e-2)


def test_custom_fwd_requires_str_device_type():
    with pytest.raises(ValueError, match="Expected `device_type` of type `str`"):
        ember.amp.custom_fwd(lambda ctx: None, device_type=None)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        deco = ember.cuda.amp.custom_fwd(cast_inputs=ember.float32)
    assert callable(deco)


def test_to_torch_roundtrip_under_autocast(torch):
    # Values computed under autocast agree with PyTorch's to bfloat16 precision.
    ea, ta = _pair(torch, 8, 8)
    with ember.autocast("cpu"):
        e = ember.matmul(ea, ea)
    with torch.autocast("cpu"):
        t = torch.matmul(ta, ta)
    np.testing.assert_allclose(to_torch(torch, e).float().numpy(), t.float().numpy(),
                               rtol=2e-2, atol=5e-2)


def test_autocast_state_of_device_types_without_an_ember_backend(torch):
    """``is_autocast_enabled``/``set_autocast_enabled`` answer for every autocast device type
    PyTorch has (kornia asks about "mps" and "xpu"), and refuse the others with its message."""
    for lib in (ember, torch):
        for device_type in ("cpu", "cuda", "xpu", "mps", "hpu", "xla", "mtia", "maia", "ipu"):
            assert lib.is_autocast_enabled(device_type) is False
        lib.set_autocast_enabled("mps", True)
        try:
            assert lib.is_autocast_enabled("mps") is True
        finally:
            lib.set_autocast_enabled("mps", False)
        assert lib.is_autocast_enabled("mps") is False
        with pytest.raises(RuntimeError, match="unknown device type for autocast"):
            lib.is_autocast_enabled("meta")
