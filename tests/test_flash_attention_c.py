"""The C attention kernel (ember/_kernels/cpu/flash_attention.py) against the NumPy tile kernel
it stands in for and against PyTorch: outputs and all three gradients, float32 and float64,
causal, additive masks (full, broadcast, rows masked entirely), grouped-query heads, head sizes
that are not multiples of its 32-wide blocks, NaN/inf inputs, and the same bits on one thread
as on two."""
import os

import numpy as np
import pytest
import torch

import ember
from ember._kernels.cpu import attention, flash_attention

pytestmark = pytest.mark.skipif(flash_attention.module() is None,
                                reason="no C compiler: attention keeps its NumPy kernel")


def _run(lib, q, k, v, causal=False, mask=None):
    q, k, v = (lib.tensor(a, requires_grad=True) for a in (q, k, v))
    m = None if mask is None else lib.tensor(mask)
    out = lib.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=m, is_causal=causal,
                                                         enable_gqa=q.shape[1] != k.shape[1])
    dt = q.detach().numpy().dtype
    out.backward(lib.tensor(np.cos(np.arange(out.numel())).reshape(tuple(out.shape)).astype(dt)))
    return [t.detach().numpy() for t in (out, q.grad, k.grad, v.grad)]


def _numpy_kernel(*args, **kwargs):
    os.environ["EMBER_EAGER_CODEGEN"] = "0"  # generated kernels off: the NumPy tiles
    try:
        return _run(ember, *args, **kwargs)
    finally:
        del os.environ["EMBER_EAGER_CODEGEN"]


SHAPES = [  # (B, Hq, Hk, L, S, E, Ev)
    (2, 4, 4, 64, 64, 32, 32),    # the GPT benchmark's heads
    (1, 4, 2, 17, 33, 16, 8),     # grouped-query, a 32-key block plus a tail, Ev < 32
    (2, 2, 1, 5, 70, 40, 24),     # more keys than queries, E = 32 + 8
    (1, 2, 2, 48, 48, 64, 64),
]


def _problem(rng, shape, dt, mask_kind):
    B, Hq, Hk, L, S, E, Ev = shape
    q = rng.standard_normal((B, Hq, L, E)).astype(dt)
    k = rng.standard_normal((B, Hk, S, E)).astype(dt)
    v = rng.standard_normal((B, Hk, S, Ev)).astype(dt)
    mask = None
    if mask_kind == "full":
        mask = rng.standard_normal((B, Hq, L, S)).astype(dt)
    elif mask_kind == "broadcast":
        mask = rng.standard_normal((L, S)).astype(dt)
    elif mask_kind == "-inf":
        mask = np.zeros((B, 1, L, S), dt)
        mask[..., ::3] = -np.inf
        mask[0, 0, 1, :] = -np.inf  # a row with every key masked: output 0
    return q, k, v, mask


def _close(a, b, dt):
    tol = 2e-5 if dt == np.float32 else 1e-12
    return np.allclose(a, b, rtol=tol, atol=tol, equal_nan=True) and \
        np.array_equal(np.isnan(a), np.isnan(b))


@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("case", ["plain", "causal", "full", "broadcast", "-inf"])
def test_the_c_kernel_gives_the_numpy_kernels_results(dt, shape, case):
    rng = np.random.default_rng(sum(shape))
    q, k, v, mask = _problem(rng, shape, dt, case)
    P = attention._Problem(ember.tensor(q), ember.tensor(k), ember.tensor(v),
                           None if mask is None else ember.tensor(mask), case == "causal", None)
    assert flash_attention.usable(P)
    c = _run(ember, q, k, v, causal=case == "causal", mask=mask)
    ref = _numpy_kernel(q, k, v, causal=case == "causal", mask=mask)
    for name, a, b in zip(("out", "dq", "dk", "dv"), c, ref):
        assert _close(a, b, dt), (name, np.nanmax(np.abs(a - b)))


@pytest.mark.parametrize("causal", [False, True])
def test_against_pytorch_with_nan_and_inf(causal):
    rng = np.random.default_rng(3)
    q, k, v, _ = _problem(rng, (2, 4, 4, 64, 64, 32, 32), np.float32, None)
    q[0, 0, 2, 1] = np.nan
    k[0, 0, 3, 0] = np.inf
    ours, theirs = _run(ember, q, k, v, causal=causal), _run(torch, q, k, v, causal=causal)
    # Where PyTorch's kernel multiplies a whole key block, a masked weight (0) can meet a NaN
    # or an infinity and give NaN; ours skips the masked keys (under causality here: dq of rows
    # 0-1, whose block holds key 3 with k = inf, and dk of key 63, masked for the NaN rows;
    # which elements depends on PyTorch's vector width: with ATEN_CPU_CAPABILITY=default its dv
    # is NaN for whole rows of keys). So: every NaN of ours is PyTorch's,
    # the output's NaNs are exactly PyTorch's, and the finite values agree.
    for name, a, b in zip(("out", "dq", "dk", "dv"), ours, theirs):
        assert not (np.isnan(a) & ~np.isnan(b)).any(), name
        if name == "out" or not causal:
            assert np.array_equal(np.isnan(a), np.isnan(b)), name
        both = ~np.isnan(a) & ~np.isnan(b)
        assert np.allclose(a[both], b[both], rtol=1e-4, atol=1e-5), name


def test_transposed_inputs():
    # q, k, v as the GPT example makes them: (B, T, H, E) storage seen as (B, H, T, E)
    rng = np.random.default_rng(5)
    qkv = [rng.standard_normal((2, 64, 4, 32), dtype=np.float32) for _ in range(3)]
    grads = []
    for lib in (ember, torch):
        leaves = [lib.tensor(a, requires_grad=True) for a in qkv]
        q, k, v = (t.transpose(1, 2) for t in leaves)
        assert not q.is_contiguous()
        out = lib.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        out.sum().backward()
        grads.append([out.detach().numpy()] + [t.grad.numpy() for t in leaves])
    for a, b in zip(*grads):
        assert np.allclose(a, b, rtol=1e-4, atol=1e-5)


def test_the_same_bits_on_one_thread_as_on_two():
    rng = np.random.default_rng(4)
    q, k, v, _ = _problem(rng, (2, 4, 2, 50, 50, 32, 32), np.float32, None)
    before = ember.get_num_threads()
    try:
        ember.set_num_threads(1)
        one = _run(ember, q, k, v, causal=True)
        ember.set_num_threads(2)
        two = _run(ember, q, k, v, causal=True)
    finally:
        ember.set_num_threads(before)
    assert all(np.array_equal(a, b) for a, b in zip(one, two))


def test_long_sequences_keep_the_tiled_kernel():
    q = ember.randn(1, 1, 4096, 64)
    P = attention._Problem(q, q, q, None, False, None)
    assert not flash_attention.usable(P)  # 4096 keys x 128 floats: BLAS's tiles are faster
