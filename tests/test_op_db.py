"""PyTorch's own OpInfo database as ember's test oracle (issue 18, item 1).

Every CPU entry of ``torch.testing._internal.common_methods_invocations.op_db`` is driven
through ember: PyTorch's sample inputs are converted to ember tensors (sizes, strides, storage
offsets and shared storages kept) and the op's ember twin is called on them.

* forward: float32, float64 and up to three of the integer/bool dtypes the entry supports, the
  first few samples of each, compared with PyTorch's results (values, dtypes, shapes; random ops
  by dtype and shape only);
* gradient: the first float64 samples, ``autograd.grad`` of the outputs (after the sample's
  ``output_process_fn_grad``) weighted by fixed random cotangents, compared with PyTorch's;
* error_inputs: each must raise the exception type PyTorch raises (where PyTorch itself does
  not raise, the database's input is wrong and ember must compute PyTorch's result instead).

The ember twin of an entry's callable is found by where the PyTorch callable lives
(``torch.nn.functional.relu`` -> ``ember.nn.functional.relu``); a lambda or helper defined in
the database is rebuilt with ``torch`` bound to ember. What still fails is listed in
``op_db_expected.py`` with a reason each; those tests are strict xfails, so a fix must also
delete its line, and the list only shrinks. A summary line gives the counts.
"""
import dataclasses
import functools
import itertools
import types

import numpy as np
import pytest

import ember
from helpers import report_line

torch = pytest.importorskip("torch")
cmi = pytest.importorskip("torch.testing._internal.common_methods_invocations")

from op_db_expected import EXPECTED  # noqa: E402

FORWARD_SAMPLES = 2    # per dtype
GRADIENT_SAMPLES = 2   # float64 samples differentiated
INT_DTYPES = 2         # integer/bool dtypes tried per entry, beyond float32/float64
_TOL = {torch.float16: (1e-3, 1e-3), torch.bfloat16: (1.6e-2, 1e-2), torch.float32: (1e-5, 1e-5),
        torch.complex64: (1e-5, 1e-5)}
_INT_ORDER = [torch.int64, torch.int32, torch.bool, torch.uint8, torch.int16, torch.int8]

ENTRIES = [op for op in cmi.op_db if op.supported_dtypes("cpu")]


def entry_id(op):
    return op.name + (f".{op.variant_test_name}" if op.variant_test_name else "")


# ---------------------------------------------------------------------------------------------
# Finding ember's twin of a PyTorch callable.

_TORCH_HOMES = ["torch", "torch.nn.functional", "torch.linalg", "torch.fft", "torch.special",
                "torch.functional", "torch.masked", "torch.signal.windows", "torch._C._nn",
                "torch._C._linalg", "torch._C._fft", "torch._C._special", "torch.Tensor",
                "torch._refs"]


@functools.lru_cache(maxsize=None)
def _index():
    """id(PyTorch callable) -> (ember module path, attribute name)."""
    import importlib
    out = {}
    for home in reversed(_TORCH_HOMES):  # earlier homes win
        try:
            mod = importlib.import_module(home) if home != "torch.Tensor" else torch.Tensor
        except ImportError:
            continue
        for name in dir(mod):
            try:
                obj = getattr(mod, name)
            except Exception:  # noqa: BLE001  (lazy attributes may fail to load)
                continue
            if callable(obj):
                out[id(obj)] = ("ember" + home[len("torch"):], name)
    return out


class Unresolved(Exception):
    """The entry's callable has no ember twin."""


def _ember_home(path):
    import importlib
    if path == "ember.Tensor":
        return ember.Tensor
    if path == "ember._refs":
        raise Unresolved("torch._refs has no ember twin")
    try:
        return importlib.import_module(path)
    except ImportError:
        raise Unresolved(f"no module {path}") from None


def twin(fn):
    """ember's version of the PyTorch callable ``fn``."""
    if isinstance(fn, torch._ops.OpOverloadPacket):
        return _getattr(ember.ops.aten, fn._qualified_op_name.split("::")[1], "ember.ops.aten")
    if isinstance(fn, torch._ops.OpOverload):
        packet = _getattr(ember.ops.aten, fn._schema.name.split("::")[1], "ember.ops.aten")
        return _getattr(packet, fn._overloadname, f"ember.ops.aten.{fn._schema.name}")
    hit = _index().get(id(fn))
    if hit is not None:
        path, name = hit
        return _getattr(_ember_home(path), name, path)
    if isinstance(fn, types.FunctionType):
        return _rebound(fn)
    if isinstance(fn, (types.MethodDescriptorType, types.WrapperDescriptorType)):
        return _getattr(ember.Tensor, fn.__name__, "ember.Tensor")
    if isinstance(fn, torch.nn.Module):
        return _module_twin(fn, {})
    raise Unresolved(f"no ember twin for {fn!r}")


_MODULE_INTERNALS = frozenset(vars(torch.nn.Module()))  # the hook dicts, _parameters, training...


def _module_twin(module, cache):
    """ember's instance of a torch module passed as a value (PairwiseDistance() as a distance
    function, the TransformerEncoderLayer a TransformerEncoder clones): the same class with the
    same attributes, parameters, buffers and submodules, built without calling its constructor
    (whose arguments are not known)."""
    cls = _convert_value(type(module))
    twin_module = cls.__new__(cls)
    ember.nn.Module.__init__(twin_module)
    twin_module.training = module.training
    for name, value in vars(module).items():
        if name not in _MODULE_INTERNALS:
            setattr(twin_module, name, _to_ember(value, cache))
    for name, p in module._parameters.items():
        twin_module.register_parameter(name, None if p is None else ember.nn.Parameter(
            _to_ember(p, cache, requires_grad=False), requires_grad=p.requires_grad))
    for name, b in module._buffers.items():
        twin_module.register_buffer(name, None if b is None else _to_ember(b, cache),
                                    persistent=name not in module._non_persistent_buffers_set)
    for name, m in module._modules.items():
        twin_module.add_module(name, None if m is None else _module_twin(m, cache))
    return twin_module


def _getattr(obj, name, where):
    try:
        return getattr(obj, name)
    except AttributeError:
        raise Unresolved(f"{where}.{name} is missing") from None


def _convert_value(v):
    """A value captured by a database lambda (a torch function, module, dtype, device), as ember's."""
    if v is torch:
        return ember
    if isinstance(v, torch.dtype):
        return getattr(ember, str(v).split(".")[1])
    if isinstance(v, torch.device):
        return ember.device(str(v))
    if isinstance(v, types.ModuleType) and v.__name__.startswith("torch"):
        return _ember_home("ember" + v.__name__[len("torch"):])
    if isinstance(v, type) and issubclass(v, torch.nn.Module):
        return _getattr(_ember_home("ember" + v.__module__[len("torch"):]), v.__name__,
                        v.__module__)
    if isinstance(v, torch.nn.Module):
        return _module_twin(v, {})
    if isinstance(v, cmi.OpInfo):  # the database's own description, read for its attributes
        return v
    if callable(v) and not isinstance(v, type) and \
            (getattr(v, "__module__", None) or "").startswith("torch"):
        return twin(v)
    return v


def _names(code):
    """Global names used by a code object and the functions nested in it."""
    names = set(code.co_names)
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            names |= _names(c)
    return names


def _rebound(fn):
    """A database lambda or helper with its globals, closure and defaults seen through ember."""
    glb = dict(fn.__globals__)
    for name in _names(fn.__code__):
        if name in glb:
            v = glb[name]
            if v is torch or isinstance(v, types.ModuleType) and v.__name__.startswith("torch"):
                glb[name] = _convert_value(v)
            elif name == "wrapper_set_seed":
                glb[name] = _wrapper_set_seed
    closure = None
    if fn.__closure__:
        closure = tuple(types.CellType(_convert_value(c.cell_contents)) for c in fn.__closure__)
    defaults = tuple(_convert_value(d) for d in fn.__defaults__) if fn.__defaults__ else None
    new = types.FunctionType(fn.__code__, glb, fn.__name__, defaults, closure)
    new.__kwdefaults__ = fn.__kwdefaults__
    return new


def _wrapper_set_seed(op, *args, **kwargs):
    ember.manual_seed(42)
    return op(*args, **kwargs)


# ---------------------------------------------------------------------------------------------
# Converting samples and results.

def _to_ember(x, cache, requires_grad=None):
    if isinstance(x, torch.Tensor):
        # the same PyTorch tensor passed twice (cat((x, y), out=x)) is one ember tensor
        memo = (id(x), requires_grad)
        if memo not in cache:
            cache[memo] = _tensor_to_ember(x, cache, requires_grad)
        return cache[memo]
    return _value_to_ember(x, cache)


def _tensor_to_ember(x, cache, requires_grad):
    t = x.detach().resolve_conj().resolve_neg()
    st = t.untyped_storage()
    key = (st.data_ptr(), st.nbytes())
    if key not in cache:
        # the storage's bytes through a uint8 view (bytes(storage) iterates byte by byte)
        raw = torch.empty(0, dtype=torch.uint8).set_(st, 0, (st.nbytes(),), (1,)).numpy().copy()
        cache[key] = ember.from_numpy(raw)
    base = cache[key]
    dt = getattr(ember, str(t.dtype).split(".")[1])
    flat = base.view(dt) if base.numel() % dt.itemsize == 0 and base.numel() else \
        ember.empty(0, dtype=dt)
    e = flat.as_strided(tuple(t.shape), tuple(t.stride()), t.storage_offset()) if t.numel() \
        else ember.empty_strided(tuple(t.shape), tuple(t.stride()), dtype=dt)
    if (x.requires_grad if requires_grad is None else requires_grad) and \
            (dt.is_floating_point or dt.is_complex):
        e = e.detach().requires_grad_(True)
    return e


def _value_to_ember(x, cache):
    if isinstance(x, torch.dtype):
        return getattr(ember, str(x).split(".")[1])
    if isinstance(x, torch.device):
        return ember.device(str(x))
    if isinstance(x, (torch.memory_format, torch.layout)):
        return getattr(ember, str(x).split(".")[1])
    if isinstance(x, torch.Size):
        return ember.Size(x)
    if dataclasses.is_dataclass(x) and not isinstance(x, type) and \
            type(x).__module__.startswith("torch."):  # an options object: ember's twin class
        cls = _getattr(_ember_home("ember" + type(x).__module__[len("torch"):]),
                       type(x).__name__, type(x).__module__)
        return cls(**{f.name: _to_ember(getattr(x, f.name), cache)
                      for f in dataclasses.fields(x)})
    if isinstance(x, list):
        return [_to_ember(v, cache) for v in x]
    if isinstance(x, tuple):
        return tuple(_to_ember(v, cache) for v in x)
    if isinstance(x, dict):
        return {k: _to_ember(v, cache) for k, v in x.items()}
    if callable(x) and not isinstance(x, type):
        return twin(x)
    return x


def _leaves(x):
    """Tensors and numbers of a result, in order."""
    if isinstance(x, (torch.Tensor, ember.Tensor)):
        return [x]
    if isinstance(x, (list, tuple)):
        return [leaf for v in x for leaf in _leaves(v)]
    if isinstance(x, (bool, int, float, complex)):
        return [x]
    return []


def _tensors(x):
    """The tensors of a result (or of arguments: lists, tuples and dicts), in order."""
    if isinstance(x, (torch.Tensor, ember.Tensor)):
        return [x]
    if isinstance(x, (list, tuple)):
        return [t for v in x for t in _tensors(v)]
    if isinstance(x, dict):
        return [t for v in x.values() for t in _tensors(v)]
    return []


def _as_numpy(x):
    if isinstance(x, (torch.Tensor, ember.Tensor)) and x.is_sparse:  # (layouts compared apart)
        x = x.to_dense()
    if isinstance(x, torch.Tensor):
        if x._is_zerotensor():  # PyTorch's lazily-zero gradient
            return np.zeros(tuple(x.shape))
        x = x.detach().resolve_conj().resolve_neg()
        if x.dtype == torch.bfloat16:
            x = x.float()
        elif x.dtype == torch.complex32:  # (no .numpy(); complex64 holds it exactly)
            x = x.cfloat()
        return x.cpu().numpy()
    if isinstance(x, ember.Tensor):
        x = x.detach().resolve_conj().resolve_neg()
        if x.dtype == ember.bfloat16:
            x = x.float()
        elif x.dtype == ember.complex32:
            x = x.cfloat()
        return x.numpy()
    return np.asarray(x)


def _compare(got, expected, values=True):
    g, e = _leaves(got), _leaves(expected)
    assert len(g) == len(e), f"{len(g)} results, PyTorch has {len(e)}"
    for a, b in zip(g, e):
        if isinstance(b, torch.Tensor):
            assert isinstance(a, ember.Tensor), f"got {type(a).__name__}, PyTorch a Tensor"
            assert str(a.dtype).split(".")[1] == str(b.dtype).split(".")[1], \
                f"dtype {a.dtype}, PyTorch {b.dtype}"
            assert tuple(a.shape) == tuple(b.shape), f"shape {tuple(a.shape)}, PyTorch {tuple(b.shape)}"
            assert a.is_sparse == b.is_sparse, f"layout {a.layout}, PyTorch {b.layout}"
            rtol, atol = _TOL.get(b.dtype, (1e-7, 1e-7))
        else:
            rtol, atol = 1e-7, 1e-7
        if values:
            np.testing.assert_allclose(_as_numpy(a), _as_numpy(b), rtol=rtol, atol=atol,
                                       equal_nan=True)


def _call(fn, sample, cache):
    args = _to_ember(sample.args, cache)
    kwargs = _to_ember(sample.kwargs, cache)
    inp = _to_ember(sample.input, cache)
    return fn(inp, *args, **kwargs)


def _random(op):
    return getattr(op, "nondeterministic_seeded", False) or \
        any(s in op.name for s in ("rand", "dropout", "normal", "bernoulli", "multinomial",
                                   "uniform", "exponential", "cauchy", "geometric", "log_normal",
                                   "poisson", "empty"))


def _dtypes(op):
    supported = op.supported_dtypes("cpu")
    floats = [d for d in (torch.float32, torch.float64) if d in supported]
    ints = [d for d in _INT_ORDER if d in supported][:INT_DTYPES]
    return floats + ints


# ---------------------------------------------------------------------------------------------
# The tests.

_STATS = {"entries": len(ENTRIES), "resolved": set(), "forward": set(), "gradient": set(),
          "errors": set(), "error_entries": set(), "gradient_entries": set()}


@pytest.fixture(scope="module", autouse=True)
def summary(request):
    yield
    s = _STATS
    line = (f"op_db: {s['entries']} CPU entries, {len(s['resolved'])} resolved, "
            f"{len(s['forward'])} forward-all-pass, {len(s['gradient'])}/"
            f"{len(s['gradient_entries'])} gradient-all-pass, {len(s['errors'])}/"
            f"{len(s['error_entries'])} error-input types matching, "
            f"{len(EXPECTED)} expected failures listed")
    report_line(request, line)


def xfail_params(items, ident, key):
    """pytest params of ``items``, a strict xfail where ``key(item)`` is listed in EXPECTED."""
    return [pytest.param(x, id=ident(x), marks=[pytest.mark.xfail(strict=True,
                                                                  reason=EXPECTED[key(x)])]
                         if key(x) in EXPECTED else []) for x in items]


def _params(kind):
    return xfail_params(ENTRIES, entry_id, lambda op: f"{entry_id(op)}:{kind}")


def _resolve(op):
    fn = twin(op.op)
    _STATS["resolved"].add(entry_id(op))
    return fn


@pytest.mark.parametrize("op", _params("forward"))
def test_forward(op):
    fn = _resolve(op)
    values = not _random(op)
    for dtype in _dtypes(op):
        torch.manual_seed(0)
        samples = itertools.islice(op.sample_inputs("cpu", dtype, requires_grad=False),
                                   FORWARD_SAMPLES)
        for sample in samples:
            torch.manual_seed(0)
            ember.manual_seed(0)
            expected = op(sample.input, *sample.args, **sample.kwargs)
            got = _call(fn, sample, {})
            _compare(got, expected, values)
    _STATS["forward"].add(entry_id(op))


def _differentiable(x):
    return [t for t in _leaves(x) if isinstance(t, (torch.Tensor, ember.Tensor))
            and t.requires_grad and (t.dtype.is_floating_point or t.dtype.is_complex)]


@pytest.mark.parametrize("op", _params("gradient"))
def test_gradient(op):
    if not op.supports_autograd or torch.float64 not in op.supported_dtypes("cpu") or _random(op):
        pytest.skip("PyTorch does not differentiate this entry in float64")
    _STATS["gradient_entries"].add(entry_id(op))
    fn = _resolve(op)
    torch.manual_seed(0)
    samples = itertools.islice(op.sample_inputs("cpu", torch.float64, requires_grad=True),
                               GRADIENT_SAMPLES)
    rng = np.random.default_rng(0)
    for sample in samples:
        t_inputs = _differentiable([sample.input, list(sample.args), list(sample.kwargs.values())])
        # the database's output_process_fn_grad says what is differentiated (|eigenvectors|,
        # defined up to sign/phase, for linalg.eig/eigh), as PyTorch's gradient tests use it
        process = sample.output_process_fn_grad
        t_out = _differentiable(process(op(sample.input, *sample.args, **sample.kwargs)))
        if not t_inputs or not t_out:
            continue
        cache = {}
        e_in = _to_ember(sample.input, cache)
        e_args = _to_ember(sample.args, cache)
        e_kwargs = _to_ember(sample.kwargs, cache)
        e_inputs = _differentiable([e_in, list(e_args), list(e_kwargs.values())])
        e_out = _differentiable(twin(process)(fn(e_in, *e_args, **e_kwargs)))
        assert len(e_inputs) == len(t_inputs)
        assert len(e_out) == len(t_out), f"{len(e_out)} differentiable outputs, PyTorch {len(t_out)}"
        cot = [rng.standard_normal(tuple(o.shape)) for o in t_out]
        t_grads = torch.autograd.grad(t_out, t_inputs,
                                      [torch.tensor(c, dtype=o.dtype) for c, o in zip(cot, t_out)],
                                      allow_unused=True)
        e_grads = ember.autograd.grad(e_out, e_inputs,
                                      [ember.tensor(c, dtype=o.dtype) for c, o in zip(cot, e_out)],
                                      allow_unused=True)
        for a, b in zip(e_grads, t_grads):
            if b is None:
                assert a is None or not _as_numpy(a).any()
                continue
            assert a is not None, "no gradient where PyTorch has one"
            np.testing.assert_allclose(_as_numpy(a), _as_numpy(b), rtol=1e-6, atol=1e-6,
                                       equal_nan=True)
    _STATS["gradient"].add(entry_id(op))


def _error_inputs(op):
    if op.error_inputs_func is None:
        return []
    return list(op.error_inputs("cpu"))


@pytest.mark.parametrize("op", _params("errors"))
def test_error_inputs(op):
    errors = _error_inputs(op)
    if not errors:
        pytest.skip("the entry has no error inputs")
    _STATS["error_entries"].add(entry_id(op))
    fn = _resolve(op)
    for ei in errors:
        s = ei.sample_input
        try:
            expected = op.op(s.input, *s.args, **s.kwargs)
        except Exception:  # noqa: BLE001  (the usual case: PyTorch raises as the entry says)
            expected = NotImplemented
        if expected is NotImplemented:  # (a reflected operator's NotImplemented is a TypeError)
            with pytest.raises(ei.error_type):
                _call(fn, s, {})
        else:
            # PyTorch itself does not raise (its own test_errors is an expectedFailure for the
            # entry, e.g. clamp_min's "rhs python scalar" input it does accept): ember must not
            # either, and must compute what PyTorch computes
            _compare(_call(fn, s, {}), expected)
    _STATS["errors"].add(entry_id(op))
