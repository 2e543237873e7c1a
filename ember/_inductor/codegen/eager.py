"""Size-generic C kernels for eager CPU ops (in the spirit of PyTorch's jiterator, on the CPU).

Inductor's graph kernels (``cpp.py``) bake the graph's sizes into their loops. An eager kernel
takes its sizes at run time instead, so one build serves every tensor of an op, dtype and
*layout class*. The C expressions are written by the same ``ops`` handler (``CppOverrides``)
under the same prelude (libmvec's vector math, IEEE NaN/inf kept), and the modules are built
and cached, in this process and on disk, by ``codecache.CppCodeCache``.

A kernel is described by a spec: an ``inner_fn`` calling ``ops`` (``ops.load(name, None)`` reads
an operand's element; ``ops.load`` of an earlier pass's accumulator reads its value) plus one
layout letter per operand:

``v``  contiguous, with the result's size: element ``i`` (row kernels: ``row * cols + j``)
``s``  a single element broadcast over the result (a 0-dim tensor, a Python number)
``r``  row kernels only: one element per row (layer_norm's mean and rstd, read or written)
``c``  row kernels only: one element per column (layer_norm's weight)

Pointwise kernels split the element range into one chunk per thread; row kernels (softmax,
layer_norm backward) split the rows; column kernels (sums over the rows, one per column:
layer_norm's weight and bias gradients) split the columns. A row kernel may sum over the rows
too, in its last pass (``RowSpec.column_sums``: layer_norm backward's three gradients in one
pass over the operands, as PyTorch's kernel): fixed chunks of rows sum into partials of their
own, added in chunk order, so the sums do not depend on the thread count. All stay on the
calling thread below PyTorch's grain size (``at::internal::GRAIN_SIZE``, 32768 elements per
task) and when called with ``nthreads`` 1, in which case the OpenMP runtime is not entered at
all (a forked child must not: see ``ember/_kernels/cpu/generated.py``).
"""
import dataclasses

from .. import codecache
from ..virtualized import ops, set_ops_handler
from .cpp import CSEVar, CTYPES, REDUCTIONS, STORAGE_CTYPES, CppOverrides, constant_code, \
    load_code, prelude, store_code

__all__ = ["GRAIN_SIZE", "PointwiseSpec", "RowSpec", "ColumnSpec", "Reduce", "Store",
           "load_module"]

GRAIN_SIZE = 32768  # PyTorch's at::internal::GRAIN_SIZE


@dataclasses.dataclass(frozen=True)
class PointwiseSpec:
    """``out[i] = inner_fn(*operands)`` over ``n`` elements. ``name`` is a C identifier naming the
    op and its fixed parameters (``gelu_backward_tanh``); ``aten`` the ops it computes, for the
    kernel's comment; ``dtypes`` the operands' element types, the result's last."""
    name: str
    aten: str
    inner_fn: object
    dtypes: tuple
    layouts: tuple  # one layout string per kernel in the module, e.g. ("vv", "vs", "sv")


@dataclasses.dataclass(frozen=True)
class Reduce:
    """A pass of a row kernel accumulating ``inner_fn()`` over the row into ``acc`` (one of
    ``cpp.REDUCTIONS``' types); later passes read the result as ``ops.load(acc, None)``. With
    ``store``, each element's value is also stored to that output (of layout ``v``), which later
    passes read as ``ops.load(store, None)`` instead of computing it again (softmax's exp)."""
    acc: str
    reduction_type: str
    inner_fn: object
    store: str = None


@dataclasses.dataclass(frozen=True)
class Store:
    """A pass of a row kernel storing ``inner_fn()`` to ``output``: every element of the row
    (an output of layout ``v``) or once per row (layout ``r``, from the accumulators; later
    passes read the value as ``ops.load(output, None)``)."""
    output: str
    inner_fn: object


@dataclasses.dataclass(frozen=True)
class RowSpec:
    """A kernel over ``rows`` rows of ``cols`` contiguous elements: ``passes`` run in order over
    each row, each a tuple of :class:`Reduce` (loops fused into one), a :class:`Store`, or an
    ``inner_fn`` whose value is stored to ``out``. ``ops.load("cols", None)`` is the row length
    as a value of the computation dtype."""
    name: str
    aten: str
    operands: tuple  # (name, layout) of each input, in the C function's argument order
    passes: tuple
    dtype: object    # the computation and result dtype
    outputs: tuple = (("out", "v"),)  # (name, layout "v" or "r"), before the inputs
    # (output, inner_fn) sums over the rows, one per column, computed in the last pass's loop
    # (layer_norm backward's weight and bias gradients beside its input gradient): outputs of
    # layout "c" after ``outputs``. Each fixed chunk of rows sums into a partial row of its own
    # and the partials are added in chunk order, so the result does not depend on the threads.
    column_sums: tuple = ()


@dataclasses.dataclass(frozen=True)
class ColumnSpec:
    """Sums over the rows of ``rows`` x ``cols`` operands, one per column: each of ``sums`` is
    ``(output, inner_fn)``, ``output[j]`` the sum over the rows of ``inner_fn()`` at column
    ``j`` (layer_norm's weight and bias gradients). The threads split the columns and each sums
    its columns' rows in order, so no partial sums are combined and the result does not depend
    on the thread count."""
    name: str
    aten: str
    operands: tuple  # (name, layout "v", "r", "c" or "s") of each input, in argument order
    sums: tuple
    dtype: object


class _Body:
    """The ``kernel`` ``CppOverrides`` writes into: the C lines of one loop, with identical
    expressions computed once, and the values visible to it (accumulators, run-time sizes)."""

    def __init__(self, refs, values):
        self.refs = refs        # operand name -> (C element reference, dtype)
        self.values = values    # name -> CSEVar readable through ops.load
        self.lines = []
        self.masks = []         # (CppOverrides.masked's guard stack; the eager specs never mask)
        self._cse = {}
        self._tmp = 0

    def cse(self, expr, dtype):
        hit = self._cse.get(expr)
        if hit is not None:
            return hit
        var = CSEVar(f"tmp{self._tmp}", dtype)
        self._tmp += 1
        self.lines.append(f"{CTYPES[dtype]} {var} = {expr};")
        self._cse[expr] = var
        return var

    def load(self, name, index):
        value = self.values.get(name)
        if value is not None:
            return value
        ref, dtype = self.refs[name]
        return self.cse(load_code(ref, dtype), dtype)


def _run(body, inner_fn):
    with set_ops_handler(CppOverrides(body)):
        return inner_fn()


def _ref(name, layout, element):
    return f"{name}[0]" if layout == "s" else f"{name}[{element}]"


def _params(names_dtypes, outputs):
    params = [f"{STORAGE_CTYPES[dt]}* {name}" for name, dt in outputs]
    params += [f"const {STORAGE_CTYPES[dt]}* {name}" for name, dt in names_dtypes]
    return ", ".join(params)


def _chunks(extent, work, call, range_args):
    """The C of a driver splitting ``extent`` (elements or rows) into one chunk per thread when
    ``work`` elements make it worth it (PyTorch's at::parallel_for rule), serially otherwise."""
    return [
        f"    int64_t tasks = ({work}) / {GRAIN_SIZE};",
        "    if (tasks > nthreads) tasks = nthreads;",
        "    if (tasks > 1) {",
        f"        int64_t step = ({extent} + tasks - 1) / tasks;",
        "        #pragma omp parallel for num_threads((int)tasks)",
        "        for (int64_t t = 0; t < tasks; t++) {",
        f"            int64_t begin = t * step, end = begin + step < {extent} ? begin + step "
        f": {extent};",
        f"            if (begin < end) {call}({range_args}, begin, end);",
        "        }",
        "    } else {",
        f"        {call}({range_args}, 0, {extent});",
        "    }",
    ]


def _pointwise_source(spec, layout):
    dtypes, out_dtype = spec.dtypes[:-1], spec.dtypes[-1]
    names = [f"in{k}" for k in range(len(dtypes))]
    refs = {n: (_ref(n, lay, "i"), dt) for n, lay, dt in zip(names, layout, dtypes)}
    body = _Body(refs, {})
    value = _run(body, lambda: spec.inner_fn(*[_load(n) for n in names]))
    fname = f"{spec.name}_{out_dtype.name}_{layout}"
    params = _params(list(zip(names, dtypes)), [("out", out_dtype)])
    args = ", ".join(["out", *names])
    return fname, "\n".join([
        f"/* {fname}: {spec.aten} on {_describe(layout)} */",
        f"static void {fname}_range({params}, int64_t begin, "
        "int64_t end)",
        "{",
        "    #pragma omp simd",
        "    for (int64_t i = begin; i < end; i++) {",
        *[f"        {ln}" for ln in body.lines],
        f"        out[i] = {store_code(value, value.dtype)};",
        "    }",
        "}",
        "",
        f"static void {fname}({params}, int64_t n, "
        "int64_t nthreads)",
        "{",
        *_chunks("n", "n", f"{fname}_range", args),
        "}",
    ])


def _load(name):
    return ops.load(name, None)


def _describe(layout):
    kinds = {"v": "contiguous", "s": "a broadcast scalar", "r": "one per row",
             "c": "one per column"}
    return ", ".join(f"in{k} {kinds[c]}" for k, c in enumerate(layout))


# Rows per chunk of a row kernel with column sums: at least this many, and at most
# COLUMN_SUM_CHUNKS chunks (their partial sums are a scratch buffer of chunks x sums x cols).
COLUMN_SUM_ROWS = 32
COLUMN_SUM_CHUNKS = 64


def _row_source(spec):
    dt = spec.dtype
    ct = CTYPES[dt]
    names = [n for n, _ in spec.operands]
    outs = [(n, dt) for n, _ in spec.outputs]
    sums = spec.column_sums
    range_outs = outs + ([("partial", dt)] if sums else [])
    out_layouts = dict(spec.outputs)
    refs = {n: ({"v": f"{n}[row * cols + j]", "s": f"{n}[0]", "r": f"{n}[row]",
                 "c": f"{n}[j]"}[lay], dt) for n, lay in spec.operands}
    # an output a reduction pass stores is read back by the passes after it
    refs.update({red.store: (f"{red.store}[row * cols + j]", dt) for step in spec.passes
                 if isinstance(step, tuple) for red in step if red.store})
    values = {"cols": CSEVar("cols_value", dt)}
    fname = f"{spec.name}_{dt.name}"
    lines = [f"/* {fname}: {spec.aten}, row by row; "
             f"{', '.join(f'{n} {lay}' for n, lay in spec.operands)} */",
             f"static void {fname}_range({_params([(n, dt) for n in names], range_outs)}, "
             "int64_t cols, int64_t begin, int64_t end)",
             "{",
             f"    {ct} cols_value = ({ct})cols;"]
    if sums:
        lines.append(f"    memset(partial, 0, sizeof({ct}) * {len(sums)} * cols);")
    lines.append("    for (int64_t row = begin; row < end; row++) {")
    ind = "        "
    for n_pass, step in enumerate(spec.passes):
        if callable(step):
            step = Store("out", step)
        if isinstance(step, Store):
            body = _Body(refs, values)
            value = _run(body, step.inner_fn)
            name = step.output
            updates = []
            if sums:
                assert n_pass == len(spec.passes) - 1 and out_layouts[name] == "v", \
                    "column sums go in a last pass over the whole row"
                updates = [f"partial[{k} * cols + j] += {_run(body, fn)};"
                           for k, (_, fn) in enumerate(sums)]
            if out_layouts[name] == "r":
                # once per row, in a block of its own (each body numbers its locals from 0)
                lines += [f"{ind}{ct} {name}_value;", f"{ind}{{",
                          *[f"{ind}    {ln}" for ln in body.lines],
                          f"{ind}    {name}_value = {value};", f"{ind}}}",
                          f"{ind}{name}[row] = {store_code(f'{name}_value', dt)};"]
                values[name] = CSEVar(f"{name}_value", dt)
                continue
            lines += [f"{ind}#pragma omp simd", f"{ind}for (int64_t j = 0; j < cols; j++) {{",
                      *[f"{ind}    {ln}" for ln in body.lines],
                      f"{ind}    {name}[row * cols + j] = {store_code(value, value.dtype)};",
                      *[f"{ind}    {ln}" for ln in updates],
                      f"{ind}}}"]
            continue
        # the reductions of one pass share a loop, and its common subexpressions
        clauses, updates, after = [], [], []
        body = _Body(refs, values)
        for red in step:
            v = _run(body, red.inner_fn)
            init, update, omp_op = REDUCTIONS[red.reduction_type]
            lines.append(f"{ind}{ct} {red.acc} = {constant_code(init, dt)};")
            clauses.append(f"reduction({omp_op}:{red.acc})")
            if red.reduction_type in ("max", "min"):
                # the vectorisable compare-select skips NaN; a flag restores torch's propagation
                lines.append(f"{ind}int {red.acc}_nan = 0;")
                clauses.append(f"reduction(|:{red.acc}_nan)")
                updates.append(f"{red.acc}_nan |= {v} != {v};")
                after.append(f"{ind}if ({red.acc}_nan) {red.acc} = NAN;")
            updates.append(f"{red.acc} = {update.format(acc=red.acc, v=v)};")
            if red.store:
                updates.append(f"{red.store}[row * cols + j] = {store_code(v, v.dtype)};")
        # visible to the passes after this one only
        values.update({red.acc: CSEVar(red.acc, dt) for red in step})
        lines += [f"{ind}#pragma omp simd {' '.join(clauses)}",
                  f"{ind}for (int64_t j = 0; j < cols; j++) {{",
                  *[f"{ind}    {ln}" for ln in body.lines + updates], f"{ind}}}", *after]
    if "cols_value" not in "\n".join(lines[4:]):
        del lines[3]  # no pass reads the row length as a value
    lines += ["    }", "}", ""]
    if not sums:
        lines += [f"static void {fname}({_params([(n, dt) for n in names], outs)}, "
                  "int64_t rows, int64_t cols, int64_t nthreads)",
                  "{",
                  *_chunks("rows", "rows * cols", f"{fname}_range",
                           ", ".join([n for n, _ in outs] + names + ["cols"])),
                  "}"]
        return fname, "\n".join(lines)
    n_sums = len(sums)
    args = ", ".join([n for n, _ in outs] + [f"partial + c * {n_sums} * cols"] + names +
                     ["cols", "c * chunk", "c * chunk + chunk < rows ? c * chunk + chunk : rows"])
    params = _params([(n, dt) for n in names], outs + [(n, dt) for n, _ in sums])
    lines += [
        f"static void {fname}({params}, int64_t rows, int64_t cols, int64_t nthreads)",
        "{",
        "    /* chunks of rows fixed by the sizes alone, each summing into partials of its own */",
        f"    int64_t chunk = (rows + {COLUMN_SUM_CHUNKS - 1}) / {COLUMN_SUM_CHUNKS};",
        f"    if (chunk < {COLUMN_SUM_ROWS}) chunk = {COLUMN_SUM_ROWS};",
        "    int64_t chunks = (rows + chunk - 1) / chunk;",
        f"    {ct}* partial = malloc(sizeof({ct}) * {n_sums} * cols * (chunks ? chunks : 1));",
        "    if (partial == NULL) { ember_kernel_oom = 1; return; }",
        f"    int64_t tasks = (rows * cols) / {GRAIN_SIZE};",
        "    if (tasks > nthreads) tasks = nthreads;",
        "    if (tasks > chunks) tasks = chunks;",
        "    if (tasks > 1) {",
        "        #pragma omp parallel for num_threads((int)tasks) schedule(static)",
        f"        for (int64_t c = 0; c < chunks; c++) {fname}_range({args});",
        "    } else {",
        f"        for (int64_t c = 0; c < chunks; c++) {fname}_range({args});",
        "    }",
        "    /* the chunks' partial sums, added in chunk order */",
        *[f"    for (int64_t j = 0; j < cols; j++) {n}[j] = {constant_code(0, dt)};"
          for n, _ in sums],
        "    for (int64_t c = 0; c < chunks; c++) {",
        *[ln for k, (n, _) in enumerate(sums) for ln in (
            "        #pragma omp simd",
            f"        for (int64_t j = 0; j < cols; j++) "
            f"{n}[j] += partial[(c * {n_sums} + {k}) * cols + j];")],
        "    }",
        "    free(partial);",
        "}"]
    return fname, "\n".join(lines)


def _column_source(spec):
    dt = spec.dtype
    names = [n for n, _ in spec.operands]
    outs = [(n, dt) for n, _ in spec.sums]
    refs = {n: ({"v": f"{n}[row * cols + j]", "s": f"{n}[0]", "r": f"{n}[row]",
                 "c": f"{n}[j]"}[lay], dt) for n, lay in spec.operands}
    body = _Body(refs, {})
    values = [_run(body, fn) for _, fn in spec.sums]
    fname = f"{spec.name}_{dt.name}"
    params = _params([(n, dt) for n in names], outs)
    zero = constant_code(0, dt)
    return fname, "\n".join([
        f"/* {fname}: {spec.aten}, column sums over the rows; "
        f"{', '.join(f'{n} {lay}' for n, lay in spec.operands)} */",
        f"static void {fname}_range({params}, int64_t rows, int64_t cols, int64_t begin, "
        "int64_t end)",
        "{",
        "    for (int64_t j = begin; j < end; j++) {",
        *[f"        {n}[j] = {zero};" for n, _ in outs],
        "    }",
        "    for (int64_t row = 0; row < rows; row++) {",
        "        #pragma omp simd",
        "        for (int64_t j = begin; j < end; j++) {",
        *[f"            {ln}" for ln in body.lines],
        *[f"            {n}[j] += {v};" for (n, _), v in zip(outs, values)],
        "        }",
        "    }",
        "}",
        "",
        f"static void {fname}({params}, int64_t rows, int64_t cols, int64_t nthreads)",
        "{",
        *_chunks("cols", "rows * cols", f"{fname}_range",
                 ", ".join([n for n, _ in outs] + names + ["rows", "cols"])),
        "}",
    ])


def _entry(fname, outputs, operands, sizes):
    """The METH_FASTCALL entry point of ``fname``: ``(*outputs, *operands, *sizes, nthreads)``,
    the arrays passed as objects with the buffer protocol (NumPy arrays), each checked to hold
    the elements the sizes promise, so a wrong call raises instead of reading past a buffer;
    ``outputs`` and ``operands`` are layout letters."""
    n_out = len(outputs)
    n_arrays = n_out + len(operands)
    total = "n" if sizes == ("n",) else "rows * cols"
    need = {"v": total, "s": "1", "r": "rows", "c": "cols"}
    checks = [f"needs[{k}] = {need[lay]};" for k, lay in enumerate(outputs + operands)]
    call_args = ", ".join([f"({'' if k < n_out else 'const '}void*)views[{k}].buf"
                           for k in range(n_arrays)] + list(sizes) + ["nthreads"])
    size_decls = [f"    int64_t {s} = PyLong_AsLongLong(args[{n_arrays + k}]);"
                  for k, s in enumerate(sizes)]
    return "\n".join([
        f"static PyObject* py_{fname}(PyObject* self, PyObject* const* args, Py_ssize_t nargs)",
        "{",
        f"    if (nargs != {n_arrays + len(sizes) + 1}) {{",
        f'        PyErr_SetString(PyExc_TypeError, "{fname}: wrong number of arguments");',
        "        return NULL;",
        "    }",
        *size_decls,
        f"    int64_t nthreads = PyLong_AsLongLong(args[{n_arrays + len(sizes)}]);",
        "    if (PyErr_Occurred()) return NULL;",
        f"    Py_buffer views[{n_arrays}];",
        f"    int64_t needs[{n_arrays}];",
        *[f"    {c}" for c in checks],
        "    int got = 0;",
        f"    for (; got < {n_arrays}; got++) {{",
        f"        int flags = got < {n_out} ? PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS "
        ": PyBUF_C_CONTIGUOUS;",
        "        if (PyObject_GetBuffer(args[got], &views[got], flags) < 0) break;",
        "        if (views[got].len < needs[got] * views[got].itemsize) {",
        "            PyBuffer_Release(&views[got]);",
        f'            PyErr_SetString(PyExc_ValueError, "{fname}: an operand is too small");',
        "            break;",
        "        }",
        "    }",
        f"    if (got == {n_arrays}) {{",
        "        Py_BEGIN_ALLOW_THREADS",
        f"        {fname}({call_args});",
        "        Py_END_ALLOW_THREADS",
        "    }",
        "    for (int k = 0; k < got; k++) PyBuffer_Release(&views[k]);",
        f"    if (got != {n_arrays}) return NULL;",
        "    if (ember_kernel_oom) { ember_kernel_oom = 0; return PyErr_NoMemory(); }",
        "    Py_RETURN_NONE;",
        "}",
    ])


def source(spec):
    """The C translation unit of ``spec``'s module and its name: every layout of a pointwise
    spec, or the row kernel, each with its entry point."""
    vector_math = codecache.compiler_features().get("mvec", False)
    parts, methods = [prelude(vector_math)], []
    if isinstance(spec, PointwiseSpec):
        module = f"eager_{spec.name}_{spec.dtypes[-1].name}"
        kernels = [(*_pointwise_source(spec, lay), "v", lay, ("n",)) for lay in spec.layouts]
    elif isinstance(spec, ColumnSpec):
        module = f"eager_{spec.name}_{spec.dtype.name}"
        kernels = [(*_column_source(spec), "c" * len(spec.sums),
                    "".join(lay for _, lay in spec.operands), ("rows", "cols"))]
    else:
        module = f"eager_{spec.name}_{spec.dtype.name}"
        kernels = [(*_row_source(spec), "".join(lay for _, lay in spec.outputs)
                    + "c" * len(spec.column_sums),
                    "".join(lay for _, lay in spec.operands), ("rows", "cols"))]
    for fname, src, outputs, layout, sizes in kernels:
        parts += [src, _entry(fname, outputs, layout, sizes)]
        methods.append(f'    {{"{fname}", (PyCFunction)(void(*)(void))py_{fname}, '
                       "METH_FASTCALL, NULL},")
    parts.append("\n".join([
        "static PyMethodDef methods[] = {", *methods, "    {NULL, NULL, 0, NULL}", "};",
        f'static struct PyModuleDef module = {{PyModuleDef_HEAD_INIT, "{module}", NULL, -1, '
        "methods};",
        f"PyMODINIT_FUNC PyInit_{module}(void) {{ return PyModule_Create(&module); }}",
    ]))
    return module, "\n\n".join(parts) + "\n"


def load_module(spec):
    """The built module of ``spec`` (from this process's cache, the disk cache, or the compiler):
    one function per layout, named ``<name>_<dtype>_<layout>`` (row kernels: ``<name>_<dtype>``).
    Raises ``InvalidCxxCompiler`` without a compiler, ``CppCompileError`` if the build fails."""
    module, text = source(spec)
    return codecache.CppCodeCache.load(text, module)
