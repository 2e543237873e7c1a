"""The CPU kernel bodies a GPU runs on device arrays, checked here without one.

On a GPU, every functional op without a CUDA kernel of its own first runs its CPU kernel body
on CuPy arrays (``ember/_kernels/cuda/shared.py``). A body that converts a device array to a
NumPy one fails there and the op is staged through the host from then on (each call copies its
inputs to the host and its results back); a body that takes host arrays as operands or reads
values back cannot be captured in a CUDA graph, and waits for the device at every call. This
runs each such op's samples of the op table on stand-in device arrays with CuPy's rules
(``tests/device_arrays.py``), each sample twice as a capture follows a warm-up: the ops not in
``STAGED`` must run clean — no conversion, and on the second call no host operand and no value
read back — and give the CPU's values; the ops in ``STAGED`` must still fail the rules (an op
that has been mended must leave the list)."""
import traceback
import warnings

import numpy as np
import pytest

import device_arrays
import ember
from ember._core.device import CPU
from ember._core.tensor_impl import make_tensor
from ember._dispatch.keys import K, bit
from ember._kernels.cuda import shared
from opinfo import OPS
from test_ops import ember_args, overload

_CPU = bit(K.CPU)

# Ops whose bodies a GPU still stages through the host or cannot capture, by cause. PyTorch's
# own CUDA kernels synchronise for the first group (their output sizes depend on the values).
STAGED = {
    "values decide the output's size (PyTorch synchronises too)": """
        _unique2.default unique_consecutive.default unique_dim.default bincount.default
        repeat_interleave.Tensor masked_scatter.default histc.default""",
    "linear algebra through SciPy/LAPACK on the host": """
        _linalg_det.default _linalg_slogdet.default cholesky.default cholesky_inverse.default
        cholesky_solve.default linalg_householder_product.default linalg_inv_ex.default
        linalg_lu.default linalg_lu_factor_ex.default linalg_matrix_exp.default ormqr.default""",
    "special functions through SciPy on the host": """
        polygamma.default mvlgamma.default special_chebyshev_polynomial_t.default
        special_chebyshev_polynomial_t.n_scalar special_chebyshev_polynomial_u.default
        special_chebyshev_polynomial_u.n_scalar special_chebyshev_polynomial_v.default
        special_chebyshev_polynomial_v.n_scalar special_chebyshev_polynomial_w.default
        special_chebyshev_polynomial_w.n_scalar special_hermite_polynomial_h.default
        special_hermite_polynomial_h.n_scalar special_hermite_polynomial_he.default
        special_hermite_polynomial_he.n_scalar special_laguerre_polynomial_l.default
        special_laguerre_polynomial_l.n_scalar special_legendre_polynomial_p.default
        special_legendre_polynomial_p.n_scalar special_shifted_chebyshev_polynomial_t.default
        special_shifted_chebyshev_polynomial_t.n_scalar
        special_shifted_chebyshev_polynomial_u.default
        special_shifted_chebyshev_polynomial_u.n_scalar
        special_shifted_chebyshev_polynomial_v.default
        special_shifted_chebyshev_polynomial_v.n_scalar
        special_shifted_chebyshev_polynomial_w.default
        special_shifted_chebyshev_polynomial_w.n_scalar special_chebyshev_polynomial_t.x_scalar
        special_chebyshev_polynomial_u.x_scalar special_chebyshev_polynomial_v.x_scalar
        special_chebyshev_polynomial_w.x_scalar special_shifted_chebyshev_polynomial_t.x_scalar
        special_shifted_chebyshev_polynomial_u.x_scalar
        special_shifted_chebyshev_polynomial_v.x_scalar
        special_shifted_chebyshev_polynomial_w.x_scalar special_hermite_polynomial_h.x_scalar
        special_hermite_polynomial_he.x_scalar special_laguerre_polynomial_l.x_scalar
        special_legendre_polynomial_p.x_scalar""",
}
_STAGED = {name: cause for cause, names in STAGED.items() for name in names.split()}


def _through_cpu_body(op):
    """Whether a GPU runs ``op`` through its CPU body: a CPU kernel, no CUDA kernel, and
    shared.eligible (in-place only where WRITES_ON_DEVICE lists it)."""
    keys = {str(k).split(".")[-1] for k in op._entry.kernels}
    return "CPU" in keys and "CUDA" not in keys and shared.eligible(op)


def _device_ops(form):
    """The op table's overloads of ``form`` ("name" or "inplace") a GPU runs through their CPU
    bodies: overload name -> the table's entries for it."""
    found = {}
    for info in OPS:
        name = getattr(info, form)
        if name is not None and _through_cpu_body(overload(ember.ops, name)):
            found.setdefault(name, []).append(info)
    return found


_OPS = _device_ops("name")


def _on_device(v):
    """Argument ``v`` with each tensor a CPU tensor over a stand-in device array of its values,
    as shared.run hands the CPU kernel device views."""
    if isinstance(v, ember.Tensor):
        t = make_tensor(v._storage, v._size, v._stride, v._offset, v._dtype, CPU)
        t._np = device_arrays.DeviceArray(v._nd())
        return t
    if isinstance(v, (list, tuple)) and any(isinstance(x, ember.Tensor) for x in v):
        return type(v)(_on_device(x) for x in v)
    return v


def _problems(name, monkeypatch):
    """What breaks CuPy's rules in the samples of overload ``name`` (a set of descriptions),
    after checking each clean sample's values against the CPU's."""
    from ember.cuda import _device_assert
    # device-side index checks are kernels on a GPU: nothing read back
    monkeypatch.setattr(_device_assert, "check_range", lambda index, low, high, message: None)
    op = overload(ember.ops, name)
    found = set()
    samples = [s for info in _OPS[name] for s in info.samples(info)]
    with device_arrays.installed(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for s in samples:
            args, kwargs = ember_args(s)
            try:
                expected = op._entry.redispatch(_CPU, *args, **kwargs)
            except Exception:  # noqa: BLE001  (a sample the CPU refuses: nothing to run)
                continue
            on_device = ([_on_device(a) for a in args],
                         {k: _on_device(v) for k, v in kwargs.items()})
            try:
                # twice: a CUDA graph captures a call after a warm-up call, so what the first
                # call alone does (copying a table it then keeps) is no capture's concern
                op._entry.redispatch(_CPU, *on_device[0], **on_device[1])
                device_arrays.events.clear()
                got = op._entry.redispatch(_CPU, *on_device[0], **on_device[1])
            except Exception as e:  # noqa: BLE001  (the failure is the finding)
                found.add(f"{type(e).__name__} at {_site(e)}: {str(e)[:60]}")
                continue
            found.update(f"{kind} ({what})" for kind, what in device_arrays.events)
            if not device_arrays.events:
                _same(got, expected, s.desc)
    return found


def _site(e):
    """Where in ember ``e`` was raised: the innermost ember frame of its traceback."""
    frames = [f for f in traceback.extract_tb(e.__traceback__) if "/ember/" in f.filename]
    if not frames:
        return "?"
    f = frames[-1]
    return f"{f.filename.rsplit('/ember/', 1)[1]}:{f.lineno}"


def _same(got, expected, desc, rtol=1e-6, atol=1e-12):
    # (atol: a value that cancels to zero on one side may be a rounding step off it on the
    # other, 1.5e-16 beside 0.0 in native_batch_norm's centred input)
    if isinstance(expected, (tuple, list)):
        for g, e in zip(got, expected):
            _same(g, e, desc, rtol, atol)
    elif isinstance(expected, ember.Tensor):
        g = got._nd()
        g = g._a if isinstance(g, device_arrays.DeviceArray) else g
        np.testing.assert_allclose(np.asarray(g), expected._nd(), rtol=rtol, atol=atol,
                                   equal_nan=True, err_msg=desc)


@pytest.mark.parametrize("name", sorted(_OPS))
def test_the_cpu_body_runs_on_device_arrays(name, monkeypatch):
    found = _problems(name, monkeypatch)
    if name in _STAGED:
        assert found, f"{name} now runs clean on device arrays: take it out of STAGED"
    else:
        assert not found, f"{name} on device arrays: {sorted(found)}"


def test_the_staged_list_names_ops_of_the_table():
    assert set(_STAGED) <= set(_OPS)


@pytest.mark.parametrize("name,extra", [("threshold_backward.default", (0.0,)),
                                        ("gelu_backward.default", ()), ("silu.default", ())])
def test_large_calls_on_device_arrays_leave_the_generated_c_kernels_out(name, extra):
    """The generated C kernels (cpu/generated.py) read host memory: from a call large enough
    for them, a device array must go to NumPy's calls instead — a failure would stage the op
    through the host from then on (ReLU's backward, threshold_backward, was staged so on a
    GPU after its first large call)."""
    from ember._kernels.cpu import generated
    if not generated.enabled():
        pytest.skip("no C compiler: no generated kernels to leave out")
    op = overload(ember.ops, name)
    x = ember.randn(2 * generated.MIN_NUMEL)
    args = ([x, x] if "backward" in name else [x]) + list(extra)
    expected = op._entry.redispatch(_CPU, *args)
    with device_arrays.installed():
        got = op._entry.redispatch(_CPU, *[_on_device(a) for a in args])
    _same(got, expected, name, rtol=1e-5, atol=1e-6)  # (NumPy's calls beside C's)


_INPLACE = _device_ops("inplace")


def _copied(v):
    """``v`` with each tensor a copy of it (same sizes; contiguous)."""
    if isinstance(v, ember.Tensor):
        return v.clone()
    if isinstance(v, (list, tuple)):
        return type(v)(_copied(x) for x in v)
    return v


@pytest.mark.parametrize("name", sorted(_INPLACE))
def test_inplace_bodies_write_device_arrays(name, monkeypatch):
    """Each sample applied twice (the warm-up and the captured call) to a copy on the CPU and
    to stand-in device arrays: the same values in self, nothing converted, no host operand and
    nothing read back on the second call."""
    op = overload(ember.ops, name)
    found = set()
    with device_arrays.installed(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for info in _INPLACE[name]:
            for s in info.samples(info):
                args, kwargs = ember_args(s)
                cpu = _copied(args)
                try:
                    op._entry.redispatch(_CPU, *cpu, **kwargs)
                    op._entry.redispatch(_CPU, *cpu, **kwargs)
                except Exception:  # noqa: BLE001  (a sample the CPU refuses: nothing to run)
                    continue
                dev = [_on_device(a) for a in _copied(args)]
                try:
                    op._entry.redispatch(_CPU, *dev, **kwargs)
                    device_arrays.events.clear()
                    op._entry.redispatch(_CPU, *dev, **kwargs)
                except Exception as e:  # noqa: BLE001  (the failure is the finding)
                    found.add(f"{type(e).__name__} at {_site(e)}: {str(e)[:60]}")
                    continue
                found.update(f"{kind} ({what})" for kind, what in device_arrays.events)
                _same(dev[0], cpu[0], s.desc)
    assert not found, f"{name} on device arrays: {sorted(found)}"


# ---------------------------------------------------------------------------------------------
# Training steps: every op a forward and backward call on the way (backward ops included, which
# the op table does not list), checked as a GPU would run it.

class _Watch(ember.utils._python_dispatch.TorchDispatchMode):
    """Runs, before each op, the op's CPU body on stand-in device arrays of copies of its
    arguments where a GPU would (no CUDA kernel, shared.eligible), twice as a capture follows a
    warm-up; records what breaks CuPy's rules and checks the values against the op's."""

    def __init__(self):
        super().__init__()
        self.problems = {}
        self.checked = set()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        values = func._normalize(*args, **(kwargs or {}))  # as its kernels take them
        if not _through_cpu_body(func):
            return func(*args, **(kwargs or {}))
        name = str(func)
        self.checked.add(name)
        got = None
        with device_arrays.installed(), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                func._entry.redispatch(_CPU, *[_on_device(_copied(v)) for v in values])
                device_arrays.events.clear()
                got = func._entry.redispatch(_CPU, *[_on_device(_copied(v)) for v in values])
                for kind, what in device_arrays.events:
                    self.problems.setdefault(name, set()).add(f"{kind} ({what})")
            except Exception as e:  # noqa: BLE001  (the failure is the finding)
                self.problems.setdefault(name, set()).add(f"{type(e).__name__} at {_site(e)}")
        out = func(*args, **(kwargs or {}))
        if name not in self.problems:
            _same(got, out, name, rtol=1e-5, atol=1e-6)
        return out


def _cnn():
    nn = ember.nn
    m = nn.Sequential(
        nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(inplace=True), nn.MaxPool2d(2),
        nn.Conv2d(8, 8, 3, padding=1, groups=2), nn.GroupNorm(2, 8), nn.SiLU(), nn.AvgPool2d(2),
        nn.Conv2d(8, 16, 1), nn.Hardswish(), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
        nn.Linear(16, 10))
    x, y = ember.randn(4, 3, 16, 16), ember.randint(10, (4,))
    return lambda: ember.nn.functional.cross_entropy(m(x), y, label_smoothing=0.1).backward()


def _unet():
    nn, F = ember.nn, ember.nn.functional
    down, up = nn.Conv2d(3, 4, 3, stride=2, padding=1), nn.ConvTranspose2d(4, 4, 2, stride=2)
    x = ember.randn(2, 3, 16, 16, requires_grad=True)

    def step():
        h = F.leaky_relu(down(x), 0.2)
        z = ember.cat([F.interpolate(h, scale_factor=2, mode="bilinear"),
                       F.interpolate(h, scale_factor=2, mode="nearest"), up(h)], 1)
        z = F.pad(F.pad(z, (1, 1, 1, 1), mode="reflect"), (1, 1, 1, 1))
        (z.pow(2).mean() + F.mse_loss(z[:, :1, 2:-2, 2:-2], x[:, :1])).backward()
    return step


def _transformer():
    nn, F = ember.nn, ember.nn.functional
    emb, head = nn.Embedding(50, 32), nn.Linear(32, 50)
    layer = nn.TransformerEncoderLayer(32, 4, 64, dropout=0.0, batch_first=True,
                                       activation="gelu")
    x, y = ember.randint(50, (2, 12)), ember.randint(50, (2, 12))

    def step():
        h = layer(emb(x))
        logits = head(F.silu(h))
        (F.cross_entropy(logits.view(-1, 50), y.view(-1)) + h.var(-1).mean()
         + logits.logsumexp(-1).mean()).backward()
    return step


def _rnn():
    nn, F = ember.nn, ember.nn.functional
    lstm, gru = nn.LSTM(8, 16, batch_first=True), nn.GRU(16, 8, batch_first=True)
    x = ember.randn(2, 5, 8)

    def step():
        g = gru(lstm(x)[0])[0]
        (F.smooth_l1_loss(g, ember.zeros_like(g))
         + F.binary_cross_entropy_with_logits(g, ember.ones_like(g))).backward()
    return step


def test_training_steps_run_their_cpu_bodies_on_device_arrays(monkeypatch):
    from ember.cuda import _device_assert
    monkeypatch.setattr(_device_assert, "check_range", lambda index, low, high, message: None)
    ember.manual_seed(0)
    watch = _Watch()
    for make in (_cnn, _unet, _transformer, _rnn):
        step = make()
        with watch:
            step()
    assert {"aten.max_pool2d_with_indices_backward.default", "aten.threshold_backward.default",
            "aten.upsample_bilinear2d_backward.default", "aten._rnn_layer_backward.default"} \
        <= watch.checked
    assert not watch.problems, sorted(watch.problems.items())


def test_host_tables_are_copied_to_the_device_once():
    """cpu/_util.like: a table a body makes on the host goes to the device on the first call
    and is found there on the next (a capture after a warm-up copies nothing)."""
    from ember._kernels.cpu import _util
    with device_arrays.installed():
        x = device_arrays.DeviceArray(np.zeros(3))
        table = np.arange(7, dtype=np.int64)
        device_arrays.events.clear()
        first = _util.like(x, table)
        assert device_arrays.events == [("h2d", "cupy.asarray")]
        device_arrays.events.clear()
        assert _util.like(x, np.arange(7, dtype=np.int64)) is first  # (an equal table)
        assert device_arrays.events == []
        assert _util.like(x, table.astype(np.int32)) is not first  # (another dtype)
    assert _util.like(np.zeros(3), table) is table  # beside a host array: the table itself
