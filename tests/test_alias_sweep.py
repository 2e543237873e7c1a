"""Aliasing (view or copy) of every op against PyTorch: PyTorch's OpInfo database and the Tensor
methods whose aliasing programs rely on.

A program that writes into an op's result (or into its input afterwards) computes something
else when ember copies where PyTorch views, or the reverse. For every resolvable CPU entry of
``op_db`` (the machinery of tests/test_op_db.py), and for its in-place variant, the first
float32 samples (plus the first with a non-contiguous and the first with an expanded input,
where the entry has them, else the first sample made non-contiguous) are run in both libraries
on inputs of the same geometry and the same storage sharing (a view input is a view of its base
in both), and for each output tensor and each input:

* whether it shares memory with the input (overlapping storage bytes), is the input itself,
  ``_is_view()``, and whether ``_base`` is that input (or its base);
* an aliasing output's sizes, strides and storage offset;
* a write: ``add_(1)`` on each aliasing output under ``no_grad``, after which each input has
  changed in the same places and had its version counter bumped as often in both (PyTorch's
  refusal of a write into overlapping memory is ember's too).

The Tensor methods and functions not in op_db (``contiguous``, ``to``, ``reshape``, indexing,
``numpy()``, ``set_``...) get the same checks from a table of cases. What still differs is
listed in EXPECTED with a reason (strict xfails: a fix deletes its line). A summary line gives
the counts.
"""
import itertools

import numpy as np
import pytest

import ember
from helpers import report_line

torch = pytest.importorskip("torch")

import test_op_db as opdb  # noqa: E402
from test_op_db import _tensors  # noqa: E402

SAMPLES = 2      # first float32 samples per entry, beside the non-contiguous/expanded ones
SCANNED = 40     # samples looked through for a non-contiguous or an expanded input

# "<entry id>", "<entry id>:inplace" or "method:<case>" -> why ember still differs
EXPECTED = {}


# ---------------------------------------------------------------------------------------------
# Inputs of the same geometry and storage sharing in both libraries.

class Inputs:
    """PyTorch tensors converted to ember ones: the same sizes, strides, storage offsets, bytes,
    shared storages, and view-ness (a PyTorch view is an ember view of the converted base)."""

    def __init__(self):
        self.storages = {}   # (data_ptr, nbytes) -> ember UntypedStorage
        self.tensors = {}    # id(PyTorch tensor) -> (PyTorch tensor, ember tensor)

    def tensor(self, t):
        hit = self.tensors.get(id(t))
        if hit is not None:
            return hit[1]
        dt = getattr(ember, str(t.dtype).split(".")[1])
        if t._base is not None:
            base = self.tensor(t._base)
            if base.dtype != dt:
                base = base.view(dt)
            e = base.as_strided(tuple(t.shape), tuple(t.stride()), t.storage_offset())
        else:
            e = ember.empty(0, dtype=dt).set_(self.storage(t), t.storage_offset(),
                                               tuple(t.shape), tuple(t.stride()))
        self.tensors[id(t)] = (t, e)
        return e

    def storage(self, t):
        st = t.untyped_storage()
        key = (st.data_ptr(), st.nbytes())
        if key not in self.storages:
            raw = torch.empty(0, dtype=torch.uint8).set_(st, 0, (st.nbytes(),), (1,))
            # (a storage of ember's allocator, resizable as PyTorch's is: out= may grow it)
            e = ember.empty(st.nbytes(), dtype=ember.uint8)
            e.copy_(ember.from_numpy(raw.clone().numpy()))  # (numpy() pins the storage's size)
            self.storages[key] = e.untyped_storage()
        return self.storages[key]

    def convert(self, x):
        if isinstance(x, torch.Tensor):
            return self.tensor(x)
        if isinstance(x, list):
            return [self.convert(v) for v in x]
        if isinstance(x, tuple):
            return tuple(self.convert(v) for v in x)
        if isinstance(x, dict):
            return {k: self.convert(v) for k, v in x.items()}
        return opdb._to_ember(x, {})

    def pairs(self):
        """(PyTorch tensor, ember tensor) of every input (bases included)."""
        return list(self.tensors.values())


def _span(t):
    """The bytes a strided tensor's storage occupies, as (start, end) addresses (None if none)."""
    if t.layout != (torch.strided if isinstance(t, torch.Tensor) else ember.strided):
        return None
    st = t.untyped_storage()
    return (st.data_ptr(), st.data_ptr() + st.nbytes()) if st.nbytes() else None


def _shares(a, b):
    sa, sb = _span(a), _span(b)
    return sa is not None and sb is not None and sa[0] < sb[1] and sb[0] < sa[1]


def _np(x):
    return opdb._as_numpy(x)


# ---------------------------------------------------------------------------------------------
# The comparison.

def alias_mismatches(inputs, t_out, e_out, values=True):
    """What differs between PyTorch's outputs ``t_out`` and ember's ``e_out`` of one call on the
    inputs of ``inputs``, in aliasing; then writes into the aliasing outputs and compares the
    inputs. Returns a list of descriptions."""
    pairs = inputs.pairs()
    t_res, e_res = _tensors(t_out), _tensors(e_out)
    if len(t_res) != len(e_res):
        return [f"{len(e_res)} output tensors, PyTorch {len(t_res)}"]
    by_id = {id(t): e for t, e in pairs}
    problems = []
    writes = []
    for k, (t, e) in enumerate(zip(t_res, e_res)):
        where = f"output {k}"
        if not isinstance(e, ember.Tensor):
            problems.append(f"{where}: {type(e).__name__}, PyTorch a Tensor")
            continue
        if t._is_view() != e._is_view():
            problems.append(f"{where}: _is_view() {e._is_view()}, PyTorch {t._is_view()}")
        if t._base is not None and id(t._base) in by_id:
            if e._base is not by_id[id(t._base)]:
                problems.append(f"{where}: _base is not the input PyTorch's is")
        elif e._base is not None and any(e._base is x for _, x in pairs):
            problems.append(f"{where}: _base is an input, PyTorch's is not")
        aliasing = False
        for i, (ti, ei) in enumerate(pairs):
            if (t is ti) != (e is ei):
                problems.append(f"{where}: `is` input {i}: {e is ei}, PyTorch {t is ti}")
            ts, es = _shares(t, ti), _shares(e, ei)
            if ts != es:
                problems.append(f"{where}: shares memory with input {i}: {es}, PyTorch {ts}")
            aliasing |= ts
        if aliasing:
            geometry = (tuple(t.shape), t.stride(), t.storage_offset())
            got = (tuple(e.shape), e.stride(), e.storage_offset())
            if got != geometry:
                problems.append(f"{where}: (size, stride, offset) {got}, PyTorch {geometry}")
            writes.append((t, e))
    if problems:
        return problems
    return _write_mismatches(pairs, writes, values)


def _write_mismatches(pairs, writes, values):
    """Add 1 in place to each aliasing output in both libraries; the inputs must then agree."""
    before = [(ti._version, ei._version, _np(ti).copy(), _np(ei).copy()) for ti, ei in pairs]
    problems = []
    for k, (t, e) in enumerate(writes):
        # an element reached through several of an output's indices (unfold's windows) is
        # added to once per index by ATen's loop, once by NumPy's: PyTorch leaves in-place
        # writes into such memory undefined, so only where and whether they land is compared
        values = values and torch._debug_has_internal_overlap(t) == 0
        try:
            with torch.no_grad():
                t.add_(1)
            t_exc = None
        except Exception as exc:  # noqa: BLE001  (ember must refuse the same write)
            t_exc = exc
        try:
            with ember.no_grad():
                e.add_(1)
            e_exc = None
        except Exception as exc:  # noqa: BLE001
            e_exc = exc
        if (t_exc is None) != (e_exc is None) or \
                t_exc is not None and type(t_exc).__name__ != type(e_exc).__name__:
            problems.append(f"writing output {k}: ember {e_exc!r}, PyTorch {t_exc!r}")
    for i, ((ti, ei), (tv, ev, ta, ea)) in enumerate(zip(pairs, before)):
        if ti._version - tv != ei._version - ev:
            problems.append(f"input {i}: version bumped by {ei._version - ev} after the writes, "
                            f"PyTorch by {ti._version - tv}")
        t_changed = not np.array_equal(_np(ti), ta, equal_nan=True)
        e_changed = not np.array_equal(_np(ei), ea, equal_nan=True)
        if t_changed != e_changed:
            problems.append(f"input {i}: changed by the writes: {e_changed}, PyTorch {t_changed}")
        elif values and t_changed and not np.allclose(_np(ei) - ea, _np(ti) - ta, rtol=0,
                                                       atol=1e-2, equal_nan=True):
            # (the writes' increments, which count the aliasing outputs reaching each
            # element, apart from the rounding of the op's own values)
            problems.append(f"input {i}: the writes changed other elements than PyTorch's")
    return problems


# ---------------------------------------------------------------------------------------------
# op_db.

def _odd(t):
    """'noncontiguous' or 'expanded' for such a tensor, else None."""
    if t.layout != torch.strided:
        return None
    if any(st == 0 and n > 1 for n, st in zip(t.shape, t.stride())):
        return "expanded"
    if not t.is_contiguous():
        return "noncontiguous"
    return None


def _describe(s):
    """A sample's tensors as size/stride, for messages."""
    return ", ".join(f"{tuple(t.shape)}/{t.stride()}" for t in _tensors([s.input, s.args, s.kwargs]))


def samples(op):
    """The first SAMPLES float32 samples, plus the first with a non-contiguous and the first
    with an expanded tensor among the first SCANNED, or else the first sample made
    non-contiguous (PyTorch's ``SampleInput.noncontiguous()``: each tensor a strided view of a
    larger one, as PyTorch's own test_noncontiguous_samples makes them)."""
    if torch.float32 not in op.supported_dtypes("cpu"):
        return []
    torch.manual_seed(0)
    chosen, kinds = [], set()
    # (the database's generator itself: op.sample_inputs wraps it in a tracker that walks the
    # interpreter stack and reseeds at every sample, most of this file's time)
    generated = op.sample_inputs_func(op, "cpu", torch.float32, False)
    for n, s in enumerate(itertools.islice(generated, SCANNED)):
        odd = {_odd(t) for t in _tensors([s.input, s.args, s.kwargs])} - {None}
        if n < SAMPLES or odd - kinds:
            chosen.append(s)
            kinds |= odd
    strided = all(t.layout == torch.strided for t in _tensors([chosen[0].input, chosen[0].args,
                                                               chosen[0].kwargs])) if chosen else False
    if strided and "noncontiguous" not in kinds:
        strided = chosen[0].noncontiguous()
        if any(_odd(t) for t in _tensors([strided.input, strided.args, strided.kwargs])):
            chosen.append(strided)
    return chosen


_STATS = {"entries": 0, "compared": 0, "inplace": 0, "samples": 0, "methods": 0}


@pytest.fixture(scope="module", autouse=True)
def summary(request):
    yield
    s = _STATS
    report_line(request, f"alias sweep: {s['compared']}/{s['entries']} op_db entries compared "
                         f"({s['inplace']} in-place variants) on {s['samples']} samples, "
                         f"{s['methods']} Tensor-method cases, "
                         f"{len(EXPECTED)} expected failures listed")


def _xfail(key):
    return [pytest.mark.xfail(strict=True, reason=EXPECTED[key])] if key in EXPECTED else []


def op_mismatches(op, inplace=False):
    """Aliasing differences of ``op``'s samples, or of its in-place variant's (None and why
    when there is nothing to compare)."""
    t_fn = op.inplace_variant if inplace else op.op
    if t_fn is None:
        return None, "no in-place variant"
    try:
        fn = opdb.twin(t_fn)
    except opdb.Unresolved as exc:
        return None, str(exc)
    chosen = samples(op)
    if not chosen:
        return None, "no float32 samples"
    random = opdb._random(op)
    problems = []
    for s in chosen:
        inputs = Inputs()  # (before PyTorch's call, which may write its input)
        args = inputs.convert([s.input, s.args, s.kwargs])
        try:
            t_out = t_fn(s.input, *s.args, **s.kwargs)
        except Exception:  # noqa: BLE001  (PyTorch refuses the sample: nothing to compare)
            continue
        try:
            e_out = fn(args[0], *args[1], **args[2])
        except Exception as exc:  # noqa: BLE001
            problems.append(f"[{_describe(s)}] ember raised {exc!r}"[:300])
            continue
        _STATS["samples"] += 1
        problems += [f"[{_describe(s)}] {p}"[:400]
                     for p in alias_mismatches(inputs, t_out, e_out, values=not random)]
    return problems, None


@pytest.mark.parametrize("op", [pytest.param(op, id=opdb.entry_id(op),
                                             marks=_xfail(opdb.entry_id(op)))
                                for op in opdb.ENTRIES])
def test_op_db_aliasing(op):
    _STATS["entries"] += 1
    problems, why = op_mismatches(op)
    if problems is None:
        pytest.skip(why)
    _STATS["compared"] += 1
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("op", [pytest.param(op, id=opdb.entry_id(op),
                                             marks=_xfail(opdb.entry_id(op) + ":inplace"))
                                for op in opdb.ENTRIES if op.inplace_variant is not None])
def test_op_db_inplace_aliasing(op):
    """The in-place variant returns its input itself (and aliases nothing else)."""
    problems, why = op_mismatches(op, inplace=True)
    if problems is None:
        pytest.skip(why)
    _STATS["inplace"] += 1
    assert not problems, "\n".join(problems)


# ---------------------------------------------------------------------------------------------
# Tensor methods and functions not in op_db whose aliasing programs rely on.

def _contig(L):
    return L.arange(24.0).reshape(2, 3, 4).clone()


def _transposed(L):
    return L.arange(24.0).reshape(4, 3, 2).clone().transpose(0, 2)


def _expanded(L):
    return L.arange(4.0).clone().expand(3, 4)


def _matrix(L):
    return L.arange(12.0).reshape(3, 4).clone()


def _vector(L):
    return L.arange(5.0).clone()


def _scalar(L):
    return L.tensor(3.0)


def _complex(L):
    return L.arange(12.0).reshape(3, 4).clone().to(L.complex64).mul(1 + 2j)


def _nchw(L):
    return L.arange(24.0).reshape(1, 2, 3, 4).clone()


# id -> (inputs, fn(lib, *inputs)); the inputs are made by PyTorch and converted
METHODS = {
    # conversions that return self when nothing changes
    "contiguous": ([_contig], lambda L, x: x.contiguous()),
    "contiguous_transposed": ([_transposed], lambda L, x: x.contiguous()),
    "contiguous_expanded": ([_expanded], lambda L, x: x.contiguous()),
    "contiguous_channels_last": ([_nchw], lambda L, x: x.contiguous(
        memory_format=L.channels_last)),
    "to_same_dtype": ([_contig], lambda L, x: x.to(L.float32)),
    "to_same_device": ([_contig], lambda L, x: x.to("cpu")),
    "to_same_tensor": ([_contig, _vector], lambda L, x, y: x.to(y)),
    "to_copy_false": ([_transposed], lambda L, x: x.to(L.float32, copy=False)),
    "to_copy_true": ([_contig], lambda L, x: x.to(L.float32, copy=True)),
    "to_copy_true_transposed": ([_transposed], lambda L, x: x.to(L.float32, copy=True)),
    "to_other_dtype": ([_contig], lambda L, x: x.to(L.float64)),
    "to_memory_format_same": ([_nchw], lambda L, x: x.to(memory_format=L.contiguous_format)),
    "to_channels_last": ([_nchw], lambda L, x: x.to(memory_format=L.channels_last)),
    "cpu": ([_contig], lambda L, x: x.cpu()),
    "float_same": ([_contig], lambda L, x: x.float()),
    "double": ([_contig], lambda L, x: x.double()),
    "type_same": ([_contig], lambda L, x: x.type(L.float32)),
    "type_string_same": ([_contig], lambda L, x: x.type("torch.FloatTensor")),
    "type_as_same": ([_contig, _vector], lambda L, x, y: x.type_as(y)),
    "type_as_other": ([_contig, _vector], lambda L, x, y: x.type_as(y.double())),
    "as_tensor": ([_transposed], lambda L, x: L.as_tensor(x)),
    "as_tensor_same_dtype": ([_contig], lambda L, x: L.as_tensor(x, dtype=L.float32)),
    "asarray": ([_contig], lambda L, x: L.asarray(x)),
    "asarray_copy": ([_contig], lambda L, x: L.asarray(x, copy=True)),
    "resolve_conj_real": ([_contig], lambda L, x: x.resolve_conj()),
    "resolve_neg_real": ([_contig], lambda L, x: x.resolve_neg()),
    "conj_real": ([_contig], lambda L, x: x.conj()),
    "clone": ([_contig], lambda L, x: x.clone()),
    "clone_transposed": ([_transposed], lambda L, x: x.clone()),
    "clone_contiguous_format": ([_transposed], lambda L, x: x.clone(
        memory_format=L.contiguous_format)),
    "detach": ([_contig], lambda L, x: x.detach()),
    "detach_transposed": ([_transposed], lambda L, x: x.detach()),
    "data": ([_contig], lambda L, x: x.data),
    "data_transposed": ([_transposed], lambda L, x: x.data),
    "numpy_round_trip": ([_contig], lambda L, x: L.from_numpy(x.numpy())),
    "numpy_round_trip_transposed": ([_transposed], lambda L, x: L.from_numpy(x.numpy())),
    "numpy_force_round_trip": ([_transposed], lambda L, x: L.from_numpy(x.numpy(force=True))),
    "to_dense": ([_contig], lambda L, x: x.to_dense()),
    "parameter": ([_contig], lambda L, x: L.nn.Parameter(x)),
    "parameter_data": ([_contig], lambda L, x: L.nn.Parameter(x).data),
    "share_memory_": ([_contig], lambda L, x: x.share_memory_()),
    "clone_expanded": ([_expanded], lambda L, x: x.clone()),
    "sum_to_size_same": ([_contig], lambda L, x: x.sum_to_size(2, 3, 4)),
    "sum_to_size": ([_contig], lambda L, x: x.sum_to_size(1, 3, 1)),
    # shape views and their copies
    "reshape": ([_contig], lambda L, x: x.reshape(6, 4)),
    "reshape_same": ([_contig], lambda L, x: x.reshape(2, 3, 4)),
    "reshape_transposed": ([_transposed], lambda L, x: x.reshape(6, 4)),
    "reshape_transposed_viewable": ([_transposed], lambda L, x: x.reshape(2, 3, 2, 2)),
    "reshape_expanded": ([_expanded], lambda L, x: x.reshape(12)),
    "reshape_as": ([_contig, _matrix], lambda L, x, y: x[0].t().reshape_as(y)),
    "view": ([_contig], lambda L, x: x.view(4, 6)),
    "view_transposed": ([_transposed], lambda L, x: x.view(2, 3, 2, 2)),
    "view_as": ([_contig, _matrix], lambda L, x, y: x[0].view_as(y)),
    "view_scalar": ([_scalar], lambda L, x: x.view(-1)),
    "flatten": ([_contig], lambda L, x: x.flatten()),
    "flatten_transposed": ([_transposed], lambda L, x: x.flatten()),
    "flatten_vector": ([_vector], lambda L, x: x.flatten()),
    "flatten_scalar": ([_scalar], lambda L, x: x.flatten()),
    "flatten_same_dim": ([_contig], lambda L, x: x.flatten(1, 1)),
    "ravel": ([_contig], lambda L, x: x.ravel()),
    "ravel_transposed": ([_transposed], lambda L, x: x.ravel()),
    "unflatten": ([_contig], lambda L, x: x.unflatten(2, (2, 2))),
    "unflatten_transposed": ([_transposed], lambda L, x: x.unflatten(2, (2, 2))),
    "expand_as": ([_vector, _contig], lambda L, x, y: x[:4].expand_as(y)),
    "expand": ([_vector], lambda L, x: x.expand(2, 5)),
    "expand_same": ([_vector], lambda L, x: x.expand(5)),
    "broadcast_to": ([_vector], lambda L, x: L.broadcast_to(x, (3, 5))),
    "as_strided": ([_contig], lambda L, x: x.as_strided((3, 3), (4, 1), 2)),
    "as_strided_transposed": ([_transposed], lambda L, x: x.as_strided((2, 2), (1, 6))),
    "unfold": ([_vector], lambda L, x: x.unfold(0, 2, 2)),
    "unfold_overlapping": ([_vector], lambda L, x: x.unfold(0, 3, 1)),
    "chunk": ([_contig], lambda L, x: x.chunk(2, 2)),
    "chunk_uneven": ([_vector], lambda L, x: x.chunk(2)),
    "split": ([_contig], lambda L, x: x.split(2, 2)),
    "split_sizes": ([_transposed], lambda L, x: x.split([1, 2], 1)),
    "split_whole": ([_vector], lambda L, x: x.split(5)),
    "tensor_split": ([_contig], lambda L, x: x.tensor_split(3, 2)),
    "unbind": ([_transposed], lambda L, x: x.unbind(1)),
    "squeeze": ([_nchw], lambda L, x: x.squeeze()),
    "squeeze_noop": ([_contig], lambda L, x: x.squeeze(1)),
    "squeeze_scalar": ([_scalar], lambda L, x: x.squeeze()),
    "unsqueeze": ([_transposed], lambda L, x: x.unsqueeze(1)),
    "T": ([_matrix], lambda L, x: x.T),
    "T_vector": ([_vector], lambda L, x: x.T),
    "mT": ([_contig], lambda L, x: x.mT),
    "H": ([_matrix], lambda L, x: x.H),
    "mH": ([_contig], lambda L, x: x.mH),
    "t": ([_matrix], lambda L, x: x.t()),
    "t_vector": ([_vector], lambda L, x: x.t()),
    "conj_complex": ([_complex], lambda L, x: x.conj()),
    "H_complex": ([_complex], lambda L, x: x.H),
    "mH_complex": ([_complex], lambda L, x: x.mH),
    "adjoint_complex": ([_complex], lambda L, x: x.adjoint()),
    "conj_physical_complex": ([_complex], lambda L, x: x.conj_physical()),
    "resolve_conj_complex": ([_complex], lambda L, x: x.resolve_conj()),
    "real": ([_complex], lambda L, x: x.real),
    "imag": ([_complex], lambda L, x: x.imag),
    "real_of_real": ([_contig], lambda L, x: x.real),
    "real_function_of_real": ([_contig], lambda L, x: L.real(x)),
    "view_as_real": ([_complex], lambda L, x: L.view_as_real(x)),
    "view_as_complex": ([_contig], lambda L, x: L.view_as_complex(x.reshape(12, 2))),
    "view_dtype_same_size": ([_contig], lambda L, x: x.view(L.int32)),
    "view_dtype_smaller": ([_contig], lambda L, x: x.view(L.float16)),
    "view_dtype_larger": ([_contig], lambda L, x: x.view(L.float64)),
    "view_dtype_same": ([_contig], lambda L, x: x.view(L.float32)),
    "narrow": ([_transposed], lambda L, x: x.narrow(1, 1, 2)),
    "narrow_whole": ([_contig], lambda L, x: x.narrow(0, 0, 2)),
    "movedim": ([_contig], lambda L, x: x.movedim(0, 2)),
    "movedim_same": ([_contig], lambda L, x: x.movedim(1, 1)),
    "moveaxis": ([_contig], lambda L, x: x.moveaxis((0, 1), (1, 0))),
    "permute_identity": ([_contig], lambda L, x: x.permute(0, 1, 2)),
    "transpose_same_dim": ([_contig], lambda L, x: x.transpose(1, 1)),
    "select": ([_transposed], lambda L, x: x.select(1, 2)),
    "select_negative": ([_contig], lambda L, x: x.select(-1, -1)),
    "diagonal": ([_matrix], lambda L, x: x.diagonal(1)),
    "atleast_2d": ([_matrix], lambda L, x: L.atleast_2d(x)),
    "atleast_3d_vector": ([_vector], lambda L, x: L.atleast_3d(x)),
    "diag_of_matrix": ([_matrix], lambda L, x: L.diag(x)),
    "broadcast_tensors": ([_vector, _matrix], lambda L, x, y: L.broadcast_tensors(
        x[:4], y)),
    "meshgrid": ([_vector, _matrix], lambda L, x, y: L.meshgrid(x, y[0], indexing="ij")),
    "squeeze_dims": ([_nchw], lambda L, x: x.squeeze((0, 1))),
    "atleast_1d_scalar": ([_scalar], lambda L, x: L.atleast_1d(x)),
    "swapaxes_same": ([_contig], lambda L, x: x.swapaxes(1, 1)),
    "view_chain": ([_contig], lambda L, x: x.view(6, 4).t().view(2, 2, 6)),
    "repeat": ([_vector], lambda L, x: x.repeat(1)),
    "tile_ones": ([_matrix], lambda L, x: x.tile((1, 1))),
    # indexing: basic (views) and advanced (copies)
    "index_int": ([_contig], lambda L, x: x[1]),
    "index_slice": ([_contig], lambda L, x: x[:, 1:3]),
    "index_step": ([_transposed], lambda L, x: x[::2, :, 1::2]),
    "index_negative_int": ([_contig], lambda L, x: x[-1, -1]),
    "index_none": ([_contig], lambda L, x: x[None]),
    "index_ellipsis": ([_contig], lambda L, x: x[...]),
    "index_ellipsis_int": ([_contig], lambda L, x: x[..., 1]),
    "index_mixed": ([_transposed], lambda L, x: x[None, 1:, ..., None, 0]),
    "index_empty_tuple": ([_contig], lambda L, x: x[()]),
    "index_scalar_tuple": ([_scalar], lambda L, x: x[()]),
    "index_scalar_none": ([_scalar], lambda L, x: x[None]),
    "index_full_slice": ([_contig], lambda L, x: x[:]),
    "index_chained": ([_transposed], lambda L, x: x[1][2][1:]),
    "index_int_and_tensor": ([_contig], lambda L, x: x[0, L.tensor([0, 2])]),
    "index_bool_list": ([_contig], lambda L, x: x[[True, False]]),
    "index_empty_slice": ([_contig], lambda L, x: x[2:]),
    "index_true": ([_contig], lambda L, x: x[True]),
    "index_false": ([_contig], lambda L, x: x[False]),
    "index_tensor": ([_contig], lambda L, x: x[L.tensor([0, 1])]),
    "index_list": ([_contig], lambda L, x: x[[1, 0]]),
    "index_bool_mask": ([_contig], lambda L, x: x[x > 5]),
    "index_bool_tensor_scalar": ([_contig], lambda L, x: x[L.tensor(True)]),
    "index_int_tensor_scalar": ([_contig], lambda L, x: x[L.tensor(1)]),
    "index_slice_and_tensor": ([_contig], lambda L, x: x[:, L.tensor([2, 0])]),
    # in-place methods and out= return the tensor they write
    "add_": ([_contig], lambda L, x: x.add_(1)),
    "mul_transposed": ([_transposed], lambda L, x: x.mul_(2)),
    "zero_": ([_contig], lambda L, x: x.zero_()),
    "fill_": ([_contig], lambda L, x: x.fill_(2)),
    "copy_": ([_contig, _transposed], lambda L, x, y: x.copy_(y.reshape(2, 3, 4))),
    "clamp_": ([_contig], lambda L, x: x.clamp_(0, 5)),
    "t_": ([_matrix], lambda L, x: x.t_()),
    "transpose_": ([_contig], lambda L, x: x.transpose_(0, 1)),
    "unsqueeze_": ([_contig], lambda L, x: x.unsqueeze_(0)),
    "squeeze_": ([_nchw], lambda L, x: x.squeeze_(0)),
    "as_strided_": ([_contig], lambda L, x: x.as_strided_((2, 2), (2, 1))),
    "resize_": ([_contig], lambda L, x: x.resize_(4, 6)),
    "set_": ([_contig, _matrix], lambda L, x, y: x.set_(y)),
    "detach_": ([_contig], lambda L, x: x.detach_()),
    "requires_grad_": ([_contig], lambda L, x: x.requires_grad_(False)),
    "add_out": ([_contig, _matrix], lambda L, x, y: L.add(x[0], 1, out=y[:, :4])),
    "sum_out": ([_contig, _vector], lambda L, x, y: L.sum(x, 0, out=y)),
}


def method_cases():
    return [pytest.param(name, id=name, marks=_xfail(f"method:{name}")) for name in METHODS]


@pytest.mark.parametrize("name", method_cases())
def test_method_aliasing(name):
    makers, fn = METHODS[name]
    t_inputs = [make(torch) for make in makers]
    inputs = Inputs()
    e_inputs = inputs.convert(t_inputs)
    t_out = fn(torch, *t_inputs)
    e_out = fn(ember, *e_inputs)
    _STATS["methods"] += 1
    problems = alias_mismatches(inputs, t_out, e_out)
    assert not problems, "\n".join(problems)


# ---------------------------------------------------------------------------------------------
# set_ onto a tensor or a new storage (beside the method cases above): errors and geometry.

SET_CASES = {
    "tensor": lambda L: L.zeros(3).set_(L.arange(6.0)),
    "tensor_itself": lambda L: (lambda x: x.set_(x))(L.zeros(3)),
    "tensor_view": lambda L: L.zeros(3).set_(L.arange(12.0).view(3, 4)[1:].t()),
    "tensor_offset": lambda L: L.zeros(3).set_(L.arange(6.0)[2:], 1, (2,), (1,)),
    "tensor_offset_default_stride": lambda L: L.zeros(3).set_(L.arange(6.0), 0, (2, 2)),
    "tensor_grows_storage": lambda L: L.zeros(3).set_(L.arange(2.0), 0, (2, 3)),
    "empty": lambda L: L.zeros(3).set_(),
    "other_dtype": lambda L: L.zeros(3).set_(L.arange(3)),
    "offset_other_dtype": lambda L: L.zeros(3).set_(L.arange(3), 0, (2,)),
    "noncontiguous_source": lambda L: L.zeros(3).set_(L.arange(6.0).view(2, 3).t(), 0, (2,)),
    "other_device": lambda L: L.zeros(3).set_(L.zeros(3, device="meta")),
    "leaf_requiring_grad": lambda L: L.zeros(3, requires_grad=True).set_(L.arange(3.0)),
}


@pytest.mark.parametrize("name", list(SET_CASES))
def test_set_(name):
    """set_'s Tensor-source and no-source overloads as PyTorch's: the geometry, storage and
    version they leave, or the error (type and message)."""
    results = []
    for L in (torch, ember):
        try:
            r = SET_CASES[name](L)
        except Exception as exc:  # noqa: BLE001  (compared with PyTorch's)
            results.append((type(exc).__name__, str(exc)))
            continue
        # (a grown storage's new bytes are uninitialized in both)
        values = _np(r).reshape(-1)[:2 if name == "tensor_grows_storage" else None].tolist()
        results.append((tuple(r.shape), r.stride(), r.storage_offset(), r._version, r._is_view(),
                        r.untyped_storage().nbytes(), values))
    assert results[1] == results[0]
