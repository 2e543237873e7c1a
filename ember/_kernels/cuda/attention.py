"""Memory-efficient attention on CUDA: ``aten::_scaled_dot_product_efficient_attention`` and its
backward, what ``scaled_dot_product_attention`` runs on a CUDA device when PyTorch's rules pick
the memory-efficient backend (``ember/backends/_sdp.py``).

The kernels are ``csrc/attention.cu`` (one thread per query or key row, FlashAttention's online
softmax; float32). On a GPU CuPy compiles and launches them — for head dimensions up to
``WARP_MAX_DIM`` the file's one-warp-per-row versions; on the simulated device the same
source is compiled for the host (``EMBER_HOST_EMULATION``: each kernel's grid-stride loop visits
every row) and run on the device memory, so CI runs the kernels' own code. float16 and bfloat16
inputs compute in float32 (converted copies) and round the output once.

As PyTorch's: the output is (B, H, L, Ev) laid out as (B, L, H, Ev) (its transpose back to
(B, L, H * Ev) is free), the log-sum-exp is float32 (B, H, L rounded up to 32), the Philox seed
and offset are 0-dim int64 CPU tensors. What ember's kernels do not take — an attention bias,
dropout, grouped-query heads, float64 — ``_sdp.py`` sends to the math path instead; called
directly with those, these ops raise.
"""
import math

import numpy as np

from ..._core import dtype as D
from ..._core.device import device as _device
from ..._core.tensor_impl import empty_tensor
from .arrays import launch
from .fused import _kernel
from .fused import host_module as host_module_of

_ALIGN_LSE = 32  # PyTorch's kAlignLSE: the log-sum-exp rows are padded to a multiple of this
MAX_HEAD_DIM = 256  # csrc/attention.cu's ATTENTION_MAX_DIM
WARP_MAX_DIM = 128  # csrc/attention.cu's WARP_MAX_DIM: the one-warp-per-row kernels' limit
_BLOCK = 128
_CPU = _device("cpu")

# each kernel's arguments after its pointers: "q" int64, "i" int32, "f" float32
_SIGNATURES = {
    "attention_forward_f32": (5, "qiiiii" + "q" * 12 + "q" + "fi"),
    "attention_backward_query_f32": (8, "qiiiii" + "q" * 15 + "q" + "fi"),
    "attention_backward_key_f32": (8, "qiiiii" + "q" * 12 + "q" + "fi"),
}
_HOST_IDS = {name: i for i, name in enumerate(_SIGNATURES)}


def _warp_name(name):
    return name.replace("_f32", "_warp_f32")


def kernel_names():
    return list(_SIGNATURES) + [_warp_name(name) for name in _SIGNATURES]


# ---------------------------------------------------------------------------------------------
# The same kernels compiled for the host (the simulated device)

_BINDINGS = r"""
#define PY_SSIZE_T_CLEAN
#include <Python.h>

/* run(kernel, *arguments): pointers and integers as ints, the scale as a float (the second to
 * last argument), in the kernel's order */
static PyObject *run(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    long long a[40];
    if (nargs < 3 || nargs > 41) {
        PyErr_SetString(PyExc_TypeError, "run(kernel, *arguments)");
        return NULL;
    }
    const long kernel = PyLong_AsLong(args[0]);
    const Py_ssize_t n = nargs - 1, scale_at = n - 2;
    for (Py_ssize_t i = 0; i < n; i++)
        a[i] = i == scale_at ? 0 : PyLong_AsLongLong(args[i + 1]);
    const float scale = (float)PyFloat_AsDouble(args[scale_at + 1]);
    if (PyErr_Occurred())
        return NULL;
    const int causal = (int)a[n - 1];
#define P(i) ((float *)(intptr_t)a[i])
#define I(i) ((int)a[i])
    Py_BEGIN_ALLOW_THREADS
    switch (kernel) {
    case 0:
        attention_forward_f32(P(0), P(1), P(2), P(3), P(4), a[5], I(6), I(7), I(8), I(9), I(10),
                              a[11], a[12], a[13], a[14], a[15], a[16], a[17], a[18], a[19],
                              a[20], a[21], a[22], a[23], scale, causal);
        break;
    case 1:
        attention_backward_query_f32(P(0), P(1), P(2), P(3), P(4), P(5), P(6), P(7), a[8], I(9),
                                     I(10), I(11), I(12), I(13), a[14], a[15], a[16], a[17],
                                     a[18], a[19], a[20], a[21], a[22], a[23], a[24], a[25],
                                     a[26], a[27], a[28], a[29], scale, causal);
        break;
    default:
        attention_backward_key_f32(P(0), P(1), P(2), P(3), P(4), P(5), P(6), P(7), a[8], I(9),
                                   I(10), I(11), I(12), I(13), a[14], a[15], a[16], a[17], a[18],
                                   a[19], a[20], a[21], a[22], a[23], a[24], a[25], a[26], scale,
                                   causal);
    }
    Py_END_ALLOW_THREADS
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"run", (PyCFunction)(void (*)(void))run, METH_FASTCALL, "run a kernel on host memory"},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "ember_cuda_attention_host", NULL, -1,
                                    methods};

PyMODINIT_FUNC PyInit_ember_cuda_attention_host(void) { return PyModule_Create(&module); }
"""


def host_module():
    """attention.cu built for the host (the simulated device's kernels)."""
    return host_module_of("ember_cuda_attention_host", "attention.cu", _BINDINGS)


def _run(name, dev, rows, pointers, rest):
    """Launch kernel ``name`` over ``rows`` rows on ``dev``: on a GPU through CuPy (a warp per
    row where the head dimensions allow), on the simulated device as the host build of the same
    source. ``rest`` starts (rows, H, L, S, D, Dv)."""
    def body(xp, rt):
        if rt.simulated:
            host_module().run(_HOST_IDS[name], *pointers, *rest)
            return None
        n_ptr, kinds = _SIGNATURES[name]
        typed = [np.uint64(p) for p in pointers] + [
            (np.int64 if k == "q" else np.int32 if k == "i" else np.float32)(x)
            for k, x in zip(kinds, rest)]
        if max(rest[4], rest[5]) <= WARP_MAX_DIM:
            grid = max(1, min(math.ceil(rows * 32 / _BLOCK), 1 << 20))
            _kernel("attention.cu", _warp_name(name))((grid,), (_BLOCK,), tuple(typed))
        else:
            grid = max(1, min(math.ceil(rows / _BLOCK), 65535))
            _kernel("attention.cu", name)((grid,), (_BLOCK,), tuple(typed))
        return None
    return launch(dev, body, capturable=True)


def _bhl(t):
    """(batch, head, row) strides of a (B, H, rows, dim) tensor."""
    return t.stride(0), t.stride(1), t.stride(2)


def _float32(t):
    return t if t._dtype is D.float32 else t.to(D.float32)


def _scale(query, scale):
    return 1.0 / math.sqrt(query.size(-1)) if scale is None else float(scale)


def _check_supported(query, key, value, attn_bias, dropout_p):
    if attn_bias is not None:
        raise NotImplementedError("ember's memory-efficient attention takes no attn_bias (the "
                                  "math path does: scaled_dot_product_attention picks it)")
    if dropout_p > 0.0:
        raise NotImplementedError("ember's memory-efficient attention takes no dropout (the math "
                                  "path does: scaled_dot_product_attention picks it)")
    if query.dim() != 4 or key.dim() != 4 or value.dim() != 4:
        raise RuntimeError("_scaled_dot_product_efficient_attention: query, key and value must "
                           "be 4-dimensional (batch, heads, sequence, head dimension)")
    for t in (query, key, value):
        if t._dtype not in (D.float32, D.float16, D.bfloat16):
            raise RuntimeError(f"_scaled_dot_product_efficient_attention: expected query, key "
                               f"and value to be of dtype Float, Half or BFloat16, got "
                               f"{t._dtype}")
    if query.size(-1) > MAX_HEAD_DIM or value.size(-1) > MAX_HEAD_DIM:
        raise NotImplementedError(f"ember's memory-efficient attention takes head dimensions up "
                                  f"to {MAX_HEAD_DIM}")


def _contiguous_last(t):
    return t if t.stride(-1) == 1 else t.contiguous()


def _scaled_dot_product_efficient_attention(query, key, value, attn_bias, compute_log_sumexp,
                                            dropout_p=0.0, is_causal=False, scale=None):
    _check_supported(query, key, value, attn_bias, dropout_p)
    B, H, L, _ = query.shape
    S, Ev = key.size(2), value.size(-1)
    q, k, v = (_contiguous_last(_float32(t)) for t in (query, key, value))
    # (B, L, H, Ev) memory, seen as (B, H, L, Ev): PyTorch's layout of this output
    out = empty_tensor((B, L, H, Ev), D.float32, query._device).transpose(1, 2)
    padded = -(-L // _ALIGN_LSE) * _ALIGN_LSE
    lse = empty_tensor((B, H, padded), D.float32, query._device)
    rows = B * H * L
    if rows and S:
        _run("attention_forward_f32", query._device, rows,
             (q.data_ptr(), k.data_ptr(), v.data_ptr(), out.data_ptr(), lse.data_ptr()),
             (rows, H, L, S, q.size(-1), Ev, *_bhl(q), *_bhl(k), *_bhl(v), *_bhl(out), padded,
              _scale(query, scale), int(bool(is_causal))))
    if out._dtype is not query._dtype:
        out = out.to(query._dtype)
    if not compute_log_sumexp:
        lse = empty_tensor((B, H, 0), D.float32, query._device)
    seed = empty_tensor((), D.int64, _CPU).zero_()
    offset = empty_tensor((), D.int64, _CPU).zero_()
    return out, lse, seed, offset


def _scaled_dot_product_efficient_attention_backward(grad_out_, query, key, value, attn_bias,
                                                     out, logsumexp, philox_seed, philox_offset,
                                                     dropout_p, grad_input_mask, is_causal=False,
                                                     scale=None):
    _check_supported(query, key, value, attn_bias, dropout_p)
    B, H, L, Dq = query.shape
    S, Ev = key.size(2), value.size(-1)
    q, k, v, o, g = (_contiguous_last(_float32(t)) for t in (query, key, value, out, grad_out_))
    padded = logsumexp.size(-1)
    if padded < L:
        raise RuntimeError("_scaled_dot_product_efficient_attention_backward: the forward's "
                           "logsumexp is needed (compute_log_sumexp=True)")
    dev = query._device
    dq = empty_tensor((B, H, L, Dq), D.float32, dev)
    dk = empty_tensor((B, H, S, Dq), D.float32, dev)
    dv = empty_tensor((B, H, S, Ev), D.float32, dev)
    delta = empty_tensor((B, H, padded), D.float32, dev)
    s = _scale(query, scale)
    causal = int(bool(is_causal))
    lse = logsumexp if logsumexp.is_contiguous() else logsumexp.contiguous()
    if B * H * L and S:
        _run("attention_backward_query_f32", dev, B * H * L,
             (q.data_ptr(), k.data_ptr(), v.data_ptr(), o.data_ptr(), g.data_ptr(),
              lse.data_ptr(), dq.data_ptr(), delta.data_ptr()),
             (B * H * L, H, L, S, Dq, Ev, *_bhl(q), *_bhl(k), *_bhl(v), *_bhl(o), *_bhl(g),
              padded, s, causal))
        _run("attention_backward_key_f32", dev, B * H * S,
             (q.data_ptr(), k.data_ptr(), v.data_ptr(), g.data_ptr(), lse.data_ptr(),
              delta.data_ptr(), dk.data_ptr(), dv.data_ptr()),
             (B * H * S, H, L, S, Dq, Ev, *_bhl(q), *_bhl(k), *_bhl(v), *_bhl(g), padded, s,
              causal))
    else:  # nothing to attend: zero gradients
        dq.zero_(), dk.zero_(), dv.zero_()
    grads = [t if t._dtype is ref._dtype else t.to(ref._dtype)
             for t, ref in ((dq, query), (dk, key), (dv, value))]
    mask = list(grad_input_mask) + [False] * (4 - len(grad_input_mask))
    return tuple(g if m else None for g, m in zip(grads, mask[:3])) + (None,)


def kernels():
    return {"_scaled_dot_product_efficient_attention": _scaled_dot_product_efficient_attention,
            "_scaled_dot_product_efficient_attention_backward":
                _scaled_dot_product_efficient_attention_backward}
