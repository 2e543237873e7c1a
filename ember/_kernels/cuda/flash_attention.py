"""Fused attention in Triton: FlashAttention-2's forward and backward, for the memory-efficient
attention op (``attention.py``) on a GPU.

One program holds a block of query rows (forward, dQ) or of key rows (dK and dV) and walks the
other side in blocks, with the scores of one pair of blocks in registers: the forward keeps the
running row maximum and sum of its online softmax and writes the output and the row
log-sum-exp; the backward recomputes each block's probabilities from that log-sum-exp,

    P = exp(Q Kᵀ·scale − lse),   dV = Pᵀ dO,   dS = P ∘ (dO Vᵀ − rowsum(dO ∘ O)),
    dQ = dS K·scale,   dK = dSᵀ Q·scale,

with dK/dV and dQ in two kernels (no atomics: the sums are in a fixed order). Inputs are read
with their strides (no copies); float16 and bfloat16 products take the tensor cores with float32
accumulation, float32 ones are exact float32 (``input_precision="ieee"``, as PyTorch's float32
kernel, no tf32). A causal mask lets query i see keys 0..i + OFF: OFF = 0 is PyTorch's
top-left mask (``is_causal``), OFF = S - L the bottom-right one of its flash op; a query that
sees no key (OFF < 0) gets a zero output and an infinite log-sum-exp, as FlashAttention's.

Triton compiles the kernels on first use for the GPU at hand. Under Triton's interpreter
(``TRITON_INTERPRET=1``) the same kernels run on the host, which is how CI checks them on the
simulated device (``tests/test_cuda_attention.py``); elsewhere on the simulated device attention
takes the blocked path. Launches go on ember's current stream (Triton would ask PyTorch for
its own), so they follow stream semantics and are captured by CUDA graphs.
"""
from __future__ import annotations  # the kernels' tl.constexpr annotations: read by Triton

import os

from ..._core import dtype as D
from ..._core.tensor_impl import empty_tensor

__all__ = ["available", "supports", "forward", "backward"]

MAX_HEAD_DIM = 128
triton = tl = None  # imported on first use (_import): Triton takes ~70 ms to import


def _import():
    global triton, tl
    if triton is None:
        import triton as _triton
        import triton.language as _tl
        triton, tl = _triton, _tl


_missing = []  # the ImportError of Triton, once seen


def available():
    """Whether Triton is installed (optional: without it the blocked path runs)."""
    if _missing:
        return False
    try:
        _import()
    except ImportError as e:
        _missing.append(e)
        return False
    return True


def supports(query, key, value):
    """Whether the kernels take these inputs: head dimensions up to MAX_HEAD_DIM, float32,
    float16 or bfloat16, one dtype."""
    dt = query._dtype
    return (dt in (D.float32, D.float16, D.bfloat16) and key._dtype is dt
            and value._dtype is dt and query.size(-1) <= MAX_HEAD_DIM
            and value.size(-1) <= MAX_HEAD_DIM)


def _dims(n):
    """The block of a head dimension of ``n``: a power of two, at least 16 (tl.dot's least)."""
    return max(16, triton.next_power_of_2(n))


def _blocks(dtype, dq, dv):
    """(BLOCK_M, BLOCK_N) by element size and head dimensions (registers: scores, one query
    and one key block, the accumulator)."""
    big = max(dq, dv) > 64 or dtype is D.float32
    return (64, 32) if big else (64, 64)


def _precision(dtype):
    return "ieee" if dtype is D.float32 else "tf32"  # ("tf32" is ignored for 16-bit inputs)


# The kernels, decorated with triton.jit when first launched (_jit): Triton reads
# TRITON_INTERPRET when it decorates.
def _fwd_kernel(Q, K, V, O, LSE, scale,
                sqb, sqh, sqm, sqd, skb, skh, skn, skd, svb, svh, svn, svd,
                sob, soh, som, sod, slb, slh,
                H, L, S, DQ, DV, OFF,
                CAUSAL: tl.constexpr, PRECISION: tl.constexpr, BLOCK_M: tl.constexpr,
                BLOCK_N: tl.constexpr, BLOCK_D: tl.constexpr, BLOCK_E: tl.constexpr):
    pid_m = tl.program_id(0)
    bh = tl.program_id(1)
    b = (bh // H).to(tl.int64)  # (offsets past 2**31 elements)
    h = (bh % H).to(tl.int64)
    rows = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.arange(0, BLOCK_N)
    dq = tl.arange(0, BLOCK_D)
    dv = tl.arange(0, BLOCK_E)
    q = tl.load(Q + b * sqb + h * sqh + rows[:, None] * sqm + dq[None, :] * sqd,
                mask=(rows[:, None] < L) & (dq[None, :] < DQ), other=0.0)
    m_i = tl.full([BLOCK_M], float("-inf"), tl.float32)
    l_i = tl.zeros([BLOCK_M], tl.float32)
    acc = tl.zeros([BLOCK_M, BLOCK_E], tl.float32)
    qk_scale = scale * 1.4426950408889634  # exp2 of log2(e)-scaled scores
    end = S
    if CAUSAL:
        end = tl.minimum(S, (pid_m + 1) * BLOCK_M + OFF)
    for start in range(0, end, BLOCK_N):
        keys = start + cols
        kt = tl.load(K + b * skb + h * skh + keys[None, :] * skn + dq[:, None] * skd,
                     mask=(keys[None, :] < S) & (dq[:, None] < DQ), other=0.0)
        s = tl.dot(q, kt, input_precision=PRECISION) * qk_scale
        valid = keys[None, :] < S
        if CAUSAL:
            valid = valid & (keys[None, :] <= rows[:, None] + OFF)
        s = tl.where(valid, s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, 1))
        # a row that has seen no key yet keeps its -inf maximum: subtract 0 there
        m_safe = tl.where(m_new == float("-inf"), 0.0, m_new)
        alpha = tl.exp2(m_i - m_safe)
        p = tl.exp2(s - m_safe[:, None])
        l_i = l_i * alpha + tl.sum(p, 1)
        v = tl.load(V + b * svb + h * svh + keys[:, None] * svn + dv[None, :] * svd,
                    mask=(keys[:, None] < S) & (dv[None, :] < DV), other=0.0)
        acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v, input_precision=PRECISION)
        m_i = m_new
    unseen = l_i == 0  # (only a row the causal mask gives no key: zeros, an infinite lse)
    l_div = tl.where(unseen, 1.0, l_i)
    out = acc / l_div[:, None]
    tl.store(O + b * sob + h * soh + rows[:, None] * som + dv[None, :] * sod,
             out.to(O.dtype.element_ty), mask=(rows[:, None] < L) & (dv[None, :] < DV))
    lse = tl.where(unseen, float("inf"), (m_i + tl.log2(l_div)) * 0.6931471805599453)
    tl.store(LSE + b * slb + h * slh + rows, lse, mask=rows < L)

def _delta_kernel(O, G, DELTA, sob, soh, som, sod, sgb, sgh, sgm, sgd, H, L, DV,
                  BLOCK_M: tl.constexpr, BLOCK_E: tl.constexpr):
    """rowsum(dO ∘ O) per query row, into DELTA (B·H, L) float32."""
    pid_m = tl.program_id(0)
    bh = tl.program_id(1)
    b = (bh // H).to(tl.int64)  # (offsets past 2**31 elements)
    h = (bh % H).to(tl.int64)
    rows = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    dv = tl.arange(0, BLOCK_E)
    mask = (rows[:, None] < L) & (dv[None, :] < DV)
    o = tl.load(O + b * sob + h * soh + rows[:, None] * som + dv[None, :] * sod, mask=mask,
                other=0.0).to(tl.float32)
    g = tl.load(G + b * sgb + h * sgh + rows[:, None] * sgm + dv[None, :] * sgd, mask=mask,
                other=0.0).to(tl.float32)
    tl.store(DELTA + bh * L + rows, tl.sum(o * g, 1), mask=rows < L)

def _dkdv_kernel(Q, K, V, G, LSE, DELTA, DK, DV_, scale,
                 sqb, sqh, sqm, sqd, skb, skh, skn, skd, svb, svh, svn, svd,
                 sgb, sgh, sgm, sgd, slb, slh,
                 H, L, S, DQ, DV, OFF,
                 CAUSAL: tl.constexpr, PRECISION: tl.constexpr, BLOCK_M: tl.constexpr,
                 BLOCK_N: tl.constexpr, BLOCK_D: tl.constexpr, BLOCK_E: tl.constexpr):
    """dK and dV of one block of keys, over the query blocks that see them. DK and DV_ are
    contiguous (B·H, S, DQ) and (B·H, S, DV)."""
    pid_n = tl.program_id(0)
    bh = tl.program_id(1)
    b = (bh // H).to(tl.int64)  # (offsets past 2**31 elements)
    h = (bh % H).to(tl.int64)
    keys = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    dq = tl.arange(0, BLOCK_D)
    dv = tl.arange(0, BLOCK_E)
    k = tl.load(K + b * skb + h * skh + keys[:, None] * skn + dq[None, :] * skd,
                mask=(keys[:, None] < S) & (dq[None, :] < DQ), other=0.0)
    v = tl.load(V + b * svb + h * svh + keys[:, None] * svn + dv[None, :] * svd,
                mask=(keys[:, None] < S) & (dv[None, :] < DV), other=0.0)
    dk = tl.zeros([BLOCK_N, BLOCK_D], tl.float32)
    dvacc = tl.zeros([BLOCK_N, BLOCK_E], tl.float32)
    first = 0
    if CAUSAL:  # query i sees key j when j <= i + OFF: rows from the block's first key - OFF on
        first = (tl.maximum(pid_n * BLOCK_N - OFF, 0) // BLOCK_M) * BLOCK_M
    for start in range(first, L, BLOCK_M):
        rows = start + tl.arange(0, BLOCK_M)
        q = tl.load(Q + b * sqb + h * sqh + rows[:, None] * sqm + dq[None, :] * sqd,
                    mask=(rows[:, None] < L) & (dq[None, :] < DQ), other=0.0)
        g = tl.load(G + b * sgb + h * sgh + rows[:, None] * sgm + dv[None, :] * sgd,
                    mask=(rows[:, None] < L) & (dv[None, :] < DV), other=0.0)
        lse = tl.load(LSE + b * slb + h * slh + rows, mask=rows < L, other=0.0)
        delta = tl.load(DELTA + bh * L + rows, mask=rows < L, other=0.0)
        s = tl.dot(q, tl.trans(k), input_precision=PRECISION) * scale
        valid = (rows[:, None] < L) & (keys[None, :] < S)
        if CAUSAL:
            valid = valid & (keys[None, :] <= rows[:, None] + OFF)
        p = tl.where(valid, tl.exp(s - lse[:, None]), 0.0)
        dvacc += tl.dot(tl.trans(p.to(g.dtype)), g, input_precision=PRECISION)
        dp = tl.dot(g, tl.trans(v), input_precision=PRECISION)
        ds = p * (dp - delta[:, None])
        dk += tl.dot(tl.trans(ds.to(q.dtype)), q, input_precision=PRECISION)
    base = bh * S
    tl.store(DK + (base + keys[:, None]) * DQ + dq[None, :],
             (dk * scale).to(DK.dtype.element_ty),
             mask=(keys[:, None] < S) & (dq[None, :] < DQ))
    tl.store(DV_ + (base + keys[:, None]) * DV + dv[None, :],
             dvacc.to(DV_.dtype.element_ty),
             mask=(keys[:, None] < S) & (dv[None, :] < DV))

def _dq_kernel(Q, K, V, G, LSE, DELTA, DQ_, scale,
               sqb, sqh, sqm, sqd, skb, skh, skn, skd, svb, svh, svn, svd,
               sgb, sgh, sgm, sgd, slb, slh,
               H, L, S, DQ, DV, OFF,
               CAUSAL: tl.constexpr, PRECISION: tl.constexpr, BLOCK_M: tl.constexpr,
               BLOCK_N: tl.constexpr, BLOCK_D: tl.constexpr, BLOCK_E: tl.constexpr):
    """dQ of one block of queries, over the key blocks they see. DQ_ is contiguous
    (B·H, L, DQ)."""
    pid_m = tl.program_id(0)
    bh = tl.program_id(1)
    b = (bh // H).to(tl.int64)  # (offsets past 2**31 elements)
    h = (bh % H).to(tl.int64)
    rows = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    dq = tl.arange(0, BLOCK_D)
    dv = tl.arange(0, BLOCK_E)
    q = tl.load(Q + b * sqb + h * sqh + rows[:, None] * sqm + dq[None, :] * sqd,
                mask=(rows[:, None] < L) & (dq[None, :] < DQ), other=0.0)
    g = tl.load(G + b * sgb + h * sgh + rows[:, None] * sgm + dv[None, :] * sgd,
                mask=(rows[:, None] < L) & (dv[None, :] < DV), other=0.0)
    lse = tl.load(LSE + b * slb + h * slh + rows, mask=rows < L, other=0.0)
    delta = tl.load(DELTA + bh * L + rows, mask=rows < L, other=0.0)
    acc = tl.zeros([BLOCK_M, BLOCK_D], tl.float32)
    end = S
    if CAUSAL:
        end = tl.minimum(S, (pid_m + 1) * BLOCK_M + OFF)
    for start in range(0, end, BLOCK_N):
        keys = start + tl.arange(0, BLOCK_N)
        k = tl.load(K + b * skb + h * skh + keys[:, None] * skn + dq[None, :] * skd,
                    mask=(keys[:, None] < S) & (dq[None, :] < DQ), other=0.0)
        v = tl.load(V + b * svb + h * svh + keys[:, None] * svn + dv[None, :] * svd,
                    mask=(keys[:, None] < S) & (dv[None, :] < DV), other=0.0)
        s = tl.dot(q, tl.trans(k), input_precision=PRECISION) * scale
        valid = (rows[:, None] < L) & (keys[None, :] < S)
        if CAUSAL:
            valid = valid & (keys[None, :] <= rows[:, None] + OFF)
        p = tl.where(valid, tl.exp(s - lse[:, None]), 0.0)
        dp = tl.dot(g, tl.trans(v), input_precision=PRECISION)
        ds = p * (dp - delta[:, None])
        acc += tl.dot(ds.to(k.dtype), k, input_precision=PRECISION)
    tl.store(DQ_ + (bh * L + rows[:, None]) * DQ + dq[None, :],
             (acc * scale).to(DQ_.dtype.element_ty),
             mask=(rows[:, None] < L) & (dq[None, :] < DQ))


def _on_ember_stream(launch):
    """Run ``launch()`` with Triton asking ember, not PyTorch, for the current stream and
    device (Triton's driver asks PyTorch when it is imported)."""
    from ...cuda import current_device
    from ...cuda.streams import current_stream_handle
    from triton.runtime import driver
    drv = driver.active
    names = ("get_current_stream", "get_current_device")
    saved = {name: getattr(drv, name) for name in names}
    drv.get_current_stream = lambda device=None: current_stream_handle(
        current_device() if device is None else device)
    drv.get_current_device = current_device
    try:
        return launch()
    finally:
        for name, fn in saved.items():
            setattr(drv, name, fn)


_jitted = {}  # (kernel function, whether interpreted) -> Triton's kernel


def _jit(fn):
    _import()
    key = (fn, os.environ.get("TRITON_INTERPRET", "0") == "1")
    k = _jitted.get(key)
    if k is None:
        k = _jitted[key] = triton.jit(fn)
    return k


_recording = []  # while compile_for runs: the launches forward/backward would make, not made


def _launch(fn, grid, *args, **meta):
    if _recording:
        _recording[-1].append((fn, args, meta))
        return None
    from .arrays import runtime
    kernel = _jit(fn)
    if runtime().simulated:  # Triton's interpreter, on the host
        return kernel[grid](*args, **meta)
    # (fp fusion named: Triton warns once where it is left to its default, which changes)
    return _on_ember_stream(lambda: kernel[grid](*args, enable_fp_fusion=True, **meta))


def forward(query, key, value, lse, scale, causal, offset=0):
    """The attention of (B, H, L, DQ) ``query`` over ``key``/``value``: the output (B, H, L, DV)
    in the query's dtype, laid out as (B, L, H, DV) as PyTorch's; the row log-sum-exp into
    ``lse`` (B, H, ≥ L float32, last stride 1). ``causal``: query i sees keys 0..i + offset."""
    _import()
    B, H, L, DQ = query.shape
    S, DV = key.size(2), value.size(-1)
    out = empty_tensor((B, L, H, DV), query._dtype, query._device).transpose(1, 2)
    bm, bn = _blocks(query._dtype, DQ, DV)
    grid = (triton.cdiv(L, bm), B * H)
    _launch(_fwd_kernel, grid, query, key, value, out, lse, scale,
            *query.stride(), *key.stride(), *value.stride(), *out.stride(),
            lse.stride(0), lse.stride(1), H, L, S, DQ, DV, offset,
            CAUSAL=causal, PRECISION=_precision(query._dtype), BLOCK_M=bm, BLOCK_N=bn,
            BLOCK_D=_dims(DQ), BLOCK_E=_dims(DV))
    return out


def backward(grad_out, query, key, value, out, lse, scale, causal, offset=0):
    """(dQ, dK, dV), each contiguous in its input's dtype and shape."""
    _import()
    B, H, L, DQ = query.shape
    S, DV = key.size(2), value.size(-1)
    dev = query._device
    bm, bn = _blocks(query._dtype, DQ, DV)
    delta = empty_tensor((B * H, L), D.float32, dev)
    dq = empty_tensor((B, H, L, DQ), query._dtype, dev)
    dk = empty_tensor((B, H, S, DQ), key._dtype, dev)
    dv = empty_tensor((B, H, S, DV), value._dtype, dev)
    meta = dict(CAUSAL=causal, PRECISION=_precision(query._dtype), BLOCK_M=bm, BLOCK_N=bn,
                BLOCK_D=_dims(DQ), BLOCK_E=_dims(DV))
    _launch(_delta_kernel, (triton.cdiv(L, bm), B * H), out, grad_out, delta,
            *out.stride(), *grad_out.stride(), H, L, DV, BLOCK_M=bm, BLOCK_E=_dims(DV))
    common = (query, key, value, grad_out, lse, delta)
    strides = (*query.stride(), *key.stride(), *value.stride(), *grad_out.stride(),
               lse.stride(0), lse.stride(1), H, L, S, DQ, DV, offset)
    _launch(_dkdv_kernel, (triton.cdiv(S, bn), B * H), *common, dk, dv, scale, *strides,
            **meta)
    _launch(_dq_kernel, (triton.cdiv(L, bm), B * H), *common, dq, scale, *strides, **meta)
    return dq, dk, dv


_TRITON_DTYPES = {D.float32: "fp32", D.float16: "fp16", D.bfloat16: "bf16"}


def compile_for(target, dtype, causal, shape=(2, 3, 80, 64), kv_len=96, value_dim=None):
    """Triton's compilation of every kernel one forward and backward of these sizes launch,
    for ``target`` (a ``triton.backends.compiler.GPUTarget``) and without a GPU: the launches
    are recorded on meta tensors, not made, and each is compiled from the arguments it would
    have passed (tensors as typed pointers, floats as fp32, integers as i32). A list of
    (kernel name, Triton's CompiledKernel). CI compiles them so for sm_90
    (``tests/test_cuda_sources.py``, in a process of its own): an error the interpreter lets
    pass cannot land unseen."""
    if os.environ.get("TRITON_INTERPRET", "0") == "1":
        raise RuntimeError("compile_for needs a process without TRITON_INTERPRET=1: Triton's "
                           "language library is decorated for its interpreter there")
    _import()
    from triton.compiler import ASTSource
    from ... import empty
    B, H, L, DQ = shape
    DV = value_dim or DQ
    q = empty(B, H, L, DQ, dtype=dtype, device="meta")
    k = empty(B, H, kv_len, DQ, dtype=dtype, device="meta")
    v = empty(B, H, kv_len, DV, dtype=dtype, device="meta")
    lse = empty(B, H, L, dtype=D.float32, device="meta")
    _recording.append([])
    try:
        out = forward(q, k, v, lse, DQ ** -0.5, causal)
        backward(empty(B, H, L, DV, dtype=dtype, device="meta"), q, k, v, out, lse,
                 DQ ** -0.5, causal)
    finally:
        launches = _recording.pop()
    compiled = []
    for fn, args, meta in launches:
        kernel = _jit(fn)
        names = kernel.arg_names
        signature = {name: _triton_type(a) for name, a in zip(names, args)}
        signature.update({name: "constexpr" for name in meta})
        constexprs = {(names.index(name),): value for name, value in meta.items()}
        src = ASTSource(fn=kernel, signature=signature, constexprs=constexprs)
        compiled.append((fn.__name__, triton.compile(
            src, target=target, options={"enable_fp_fusion": True})))
    return compiled


def _triton_type(a):
    if isinstance(a, float):
        return "fp32"
    if isinstance(a, int):
        return "i32" if -2 ** 31 <= a < 2 ** 31 else "i64"
    return "*" + _TRITON_DTYPES[a._dtype]
