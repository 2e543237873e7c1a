"""CUDA random ops on the device: ``uniform_``, ``normal_``, ``random_`` (and its ranges),
``bernoulli_(p: float)`` and ``native_dropout``, drawn from the device's generator by Philox
(``philox.py``: the numbers, the simulated device's computation; ``csrc/random.cu``: the same on
a GPU). Each op takes its generator's next (seed, offset); nothing is staged through the host.

The checks are the CPU kernels' (``rules/factory.py``, ``rules/random.py``). A float32/float64
result that is contiguous is written where it lies; any other dtype or layout is drawn into a
contiguous float32, float64 or int64 tensor and copied in (a device copy). Complex tensors and
the rarer distributions (exponential, cauchy, ...) stay CPU kernels through the fallback.

Random ops captured in a CUDA graph draw new numbers at each replay, as PyTorch's do: while a
graph captures, a generator registered with it (the capturing device's default generator always)
hands its ops offsets 0, 1, ... and the address of the graph's two state words
(:class:`GraphState`); before each replay the graph writes the generator's (seed, offset) there
and advances the generator past the graph's ops, and each kernel adds its captured offset to the
one it reads.
"""
import math

import numpy as np

from ..._core import dtype as D
from ..._core import strides as _st
from ..._core.tensor_impl import empty_tensor
from ..rules.factory import check_normal, check_uniform, random_bounds, random_default_bounds
from ..rules.nn import check_dropout
from ..rules.random import check_bernoulli_float
from . import philox
from .arrays import NeedsHost, _cuda, device_array, launch
from .fused import _kernel

_FLOATS = {D.float32: "f32", D.float64: "f64"}
_BLOCK = 256


def _generator(t, generator):
    if generator is not None:
        if generator.device.type != "cuda":
            raise RuntimeError(f"Expected a 'cuda' device type for generator but found "
                               f"'{generator.device.type}'")
        return generator
    return _cuda().default_generators[t._device.index or 0]


def _grid(counters):
    return (max(1, min(math.ceil(counters / _BLOCK), 65535)),)


class GraphState:
    """A CUDA graph's record of one generator whose random ops it captures: the two device
    words the graph's kernels read (seed, offset) from, and how many offsets its ops took."""

    def __init__(self, generator, device):
        self.generator = generator
        self.words = empty_tensor((2,), D.int64, device)  # made before the capture begins
        self.increment = 0

    def next_offset(self):
        """The offset of the next captured op, counted from the replay's."""
        self.increment += 1
        return self.increment - 1

    def prologue(self):
        """Before a replay: the generator's (seed, offset) into the words (a kernel on the
        current stream, its values as arguments), the generator past the graph's ops."""
        seed, offset = self.generator.philox_next(self.increment)
        words = self.words

        def body(xp, rt):
            if rt.simulated:
                device_array(words, rt).view(np.uint64)[:] = (seed, offset)
            else:
                _kernel("random.cu", "philox_set_state")(
                    (1,), (1,), (np.uint64(words.data_ptr()), np.uint64(seed), np.uint64(offset)))
        launch(words._device, body, capturable=True)


def _philox_args(t, gen):
    """(seed, offset, state address) for one op: the generator's next (seed, offset) and no
    state, or under a capture the op's offset within the graph and the graph's state words."""
    cuda = _cuda()
    if not cuda._lazy_init().stream_is_capturing(
            cuda.streams.current_stream_handle(t._device.index or 0)):
        return (*gen.philox_next(), 0)
    st = getattr(gen, "_graph_state", None)
    if st is None:
        raise RuntimeError("Attempt to use a CUDA generator in a CUDA graph capture that is not "
                           "registered with the graph: call "
                           "graph.register_generator_state(generator) before capturing")
    return 0, st.next_offset(), st.words.data_ptr()


def _draw(t, generator, dtype, kind, params, into=False):
    """A contiguous tensor of ``t``'s shape and float32/float64/int64 ``dtype`` filled with
    ``kind`` numbers ("uniform", "normal", "integers") of ``params`` from ``t``'s generator:
    ``t`` itself with ``into`` (an in-place sampler's self) when it has that dtype and is
    contiguous, else a new tensor."""
    gen = _generator(t, generator)
    out = t if (into and t._dtype is dtype and t.is_contiguous()) else \
        empty_tensor(t._size, dtype, t._device)
    n = out.numel()
    if n == 0:
        return out
    seed, offset, state = _philox_args(t, gen)

    def body(xp, rt):
        if rt.simulated:
            s, o = seed, offset
            if state:  # read at run time: at each replay of a captured graph
                s, base = (int(w) for w in rt.host_view(state, 16).view(np.uint64))
                o = (o + base) & ((1 << 64) - 1)
            if kind == "integers":
                values = philox.integers(s, o, n, *params[:2])
            else:
                values = getattr(philox, kind)(s, o, n, dtype._np.type, *params)
            device_array(out, rt).reshape(-1)[...] = values
            return
        per_counter = 4 if dtype is D.float32 or (kind == "integers" and not params[2]) else 2
        counters = -(-n // per_counter)
        args = (np.uint64(out.data_ptr()), np.int64(n), np.uint64(seed), np.uint64(offset),
                np.uint64(state))
        if kind == "integers":
            low, count, wide = params
            _kernel("random.cu", "philox_integers")(
                _grid(counters), (_BLOCK,),
                args + (np.int64(low), np.uint64(count % (1 << 64)), np.int32(wide)))
        else:
            scalar = dtype._np.type
            a, b = params  # uniform: low, high; normal: mean, std
            second = scalar(b - a) if kind == "uniform" else scalar(b)
            _kernel("random.cu", f"philox_{kind}_{_FLOATS[dtype]}")(
                _grid(counters), (_BLOCK,), args + (scalar(a), second))
    launch(t._device, body, capturable=True)  # it writes only ``out``, made above
    return out


def _work_float(t):
    if t._dtype.is_complex:
        raise NeedsHost("complex random values")
    return D.float64 if t._dtype is D.float64 else D.float32


def _fill(self, drawn):
    if drawn is not self:
        self.copy_(drawn)
    return self


def uniform_(self, from_=0.0, to=1.0, generator=None):
    check_uniform(self, from_, to)
    return _fill(self, _draw(self, generator, _work_float(self), "uniform", (from_, to), True))


def normal_(self, mean=0.0, std=1.0, generator=None):
    check_normal(self._dtype, std)
    return _fill(self, _draw(self, generator, _work_float(self), "normal", (mean, std), True))


def _integers(self, low, high, generator):
    """Integers uniform over [low, high] (both included) into ``self``."""
    if self._dtype.is_complex:
        raise NeedsHost("complex random values")
    count = high - low + 1
    wide = count >= 1 << 32
    drawn = _draw(self, generator, D.int64, "integers", (low, count, wide), True)
    return _fill(self, drawn)


def random_(self, generator=None):
    return _integers(self, *random_default_bounds(self), generator)


def random__from(self, from_, to, generator=None):
    return _integers(self, *random_bounds(self, from_, to), generator)


def random__to(self, to, generator=None):
    return _integers(self, *random_bounds(self, 0, to), generator)


def bernoulli__float(self, p=0.5, generator=None):
    check_bernoulli_float(self, p)
    u = _draw(self, generator, D.float64, "uniform", (0.0, 1.0))
    return _fill(self, u.lt(p))


def native_dropout(input, p, train):  # noqa: A002  (the schema's name)
    """(output, mask): each element kept with probability 1 - p and scaled by 1 / (1 - p), as
    the CPU kernel; the mask is the kept elements (bool)."""
    check_dropout(input, p)
    if train is False or p == 1:
        raise NeedsHost("dropout without sampling")  # the CPU kernel's copy or zeros
    if input._dtype not in (D.float32, D.float64, D.float16, D.bfloat16):
        raise NeedsHost("dropout of this dtype")
    u = _draw(input, None, D.float32, "uniform", (0.0, 1.0))
    mask = u.ge(p)
    # ATen's mask and output are empty_like(input): both keep input's layout
    stride = _st.suggest_memory_format_strides(input._size, input._stride)
    if mask._stride != stride:
        mask = empty_tensor(input._size, D.bool_, input._device, stride).copy_(mask)
    scale = 1.0 / (1.0 - p)
    if input._dtype in (D.float16, D.bfloat16):  # scaled in float32, rounded once
        out = input.to(D.float32).mul(mask).mul_(scale).to(input._dtype)
    else:
        out = input.mul(mask).mul_(scale)
    if out._stride != stride:  # (where TensorIterator would lay the product out otherwise)
        out = empty_tensor(input._size, input._dtype, input._device, stride).copy_(out)
    return out, mask


# random.cu built for the host: CI compares the kernels' own code with philox.py
_HOST_BINDINGS = r"""
#define PY_SSIZE_T_CLEAN
#include <Python.h>

/* run(kernel, out address, n, seed, offset, state address, a, b[, wide]): kernel 0..3 uniform
 * f32, uniform f64, normal f32, normal f64 (a, b: low and range, or mean and std); 4 integers
 * (a: low, b: count with 0 for 2**64); state 0 for none */
static PyObject *run(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs < 8) {
        PyErr_SetString(PyExc_TypeError, "run(kernel, out, n, seed, offset, state, a, b[, wide])");
        return NULL;
    }
    const long kernel = PyLong_AsLong(args[0]);
    void *out = (void *)(intptr_t)PyLong_AsLongLong(args[1]);
    const long long n = PyLong_AsLongLong(args[2]);
    const unsigned long long seed = PyLong_AsUnsignedLongLong(args[3]);
    const unsigned long long offset = PyLong_AsUnsignedLongLong(args[4]);
    const unsigned long long *state = (const unsigned long long *)(intptr_t)
        PyLong_AsLongLong(args[5]);
    if (PyErr_Occurred())
        return NULL;
    if (kernel == 4) {
        const long long low = PyLong_AsLongLong(args[6]);
        const unsigned long long count = PyLong_AsUnsignedLongLong(args[7]);
        const int wide = nargs > 8 ? PyObject_IsTrue(args[8]) : 0;
        if (PyErr_Occurred())
            return NULL;
        philox_integers((long long *)out, n, seed, offset, state, low, count, wide);
        Py_RETURN_NONE;
    }
    const double a = PyFloat_AsDouble(args[6]), b = PyFloat_AsDouble(args[7]);
    if (PyErr_Occurred())
        return NULL;
    switch (kernel) {
    case 0: philox_uniform_f32((float *)out, n, seed, offset, state, (float)a, (float)b); break;
    case 1: philox_uniform_f64((double *)out, n, seed, offset, state, a, b); break;
    case 2: philox_normal_f32((float *)out, n, seed, offset, state, (float)a, (float)b); break;
    default: philox_normal_f64((double *)out, n, seed, offset, state, a, b);
    }
    Py_RETURN_NONE;
}

/* set_state(state address, seed, offset): philox_set_state */
static PyObject *set_state(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "set_state(state, seed, offset)");
        return NULL;
    }
    unsigned long long *state = (unsigned long long *)(intptr_t)PyLong_AsLongLong(args[0]);
    const unsigned long long seed = PyLong_AsUnsignedLongLong(args[1]);
    const unsigned long long offset = PyLong_AsUnsignedLongLong(args[2]);
    if (PyErr_Occurred())
        return NULL;
    philox_set_state(state, seed, offset);
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"run", (PyCFunction)(void (*)(void))run, METH_FASTCALL, "run a kernel on host memory"},
    {"set_state", (PyCFunction)(void (*)(void))set_state, METH_FASTCALL,
     "write a graph's state words"},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "ember_cuda_random_host", NULL, -1,
                                    methods};

PyMODINIT_FUNC PyInit_ember_cuda_random_host(void) { return PyModule_Create(&module); }
"""


def host_module():
    """random.cu built for the host (``run(kernel, out address, n, seed, offset, state address,
    a, b[, wide])``, ``set_state(state address, seed, offset)``: see the bindings)."""
    from .fused import host_module as host_module_of
    return host_module_of("ember_cuda_random_host", "random.cu", _HOST_BINDINGS)


def kernel_names():
    """Every kernel of csrc/random.cu this module launches."""
    return [f"philox_{kind}_{sfx}" for kind in ("uniform", "normal") for sfx in ("f32", "f64")] \
        + ["philox_integers", "philox_set_state"]


def kernels():
    return {"uniform_": uniform_, "normal_": normal_, "random_": random_,
            "random_.from": random__from, "random_.to": random__to,
            "bernoulli_.float": bernoulli__float, "native_dropout": native_dropout}
