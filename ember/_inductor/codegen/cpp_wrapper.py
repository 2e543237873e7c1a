"""The wrapper of a compiled graph written in C (PyTorch's
``torch._inductor.codegen.cpp_wrapper_cpu``), for ``config.cpp_wrapper`` (``mode="reduce-overhead"``
on the CPU): a graph is one C call.

:class:`CppWrapperCodeGen` walks the schedule as the Python wrapper does (it is a subclass: the
Python text is still produced, and each C block carries the Python line it replaces as a
comment) and writes a ``call`` function into the graph's extension module. ``call`` does what
the Python ``call(args)`` does, in the same order: it unpacks and clears the argument list,
allocates buffers, calls the kernels' C functions directly, calls the eager fallbacks, bounds
checks and views through Python callables with ``PyObject_Vectorcall``, drops each buffer after
its last use (the Python wrapper's ``del`` lines: ``WrapperCodeGen.dead_after``) and returns the
output tuple. Any Python error jumps to one exit that releases every reference the call holds
(slots of one array, so that a graph of thousands of buffers still compiles in seconds).

The Python values the C code needs (the ops it calls, sizes, dtypes, keyword names) are
*constants*: Python expressions evaluated once in the Python wrapper's namespace and handed to
the module's ``bind(constants)``, which returns the graph's ``call`` (a C function whose ``self``
is the constants tuple, so graphs sharing one module each keep their own).

Allocation and data pointers are where the Python wrapper spends its time on small graphs:
``ember.empty_strided`` goes through the dispatcher (~20 us), ``Tensor.data_ptr()`` through two
properties and NumPy's ``__array_interface__`` dict (~4 us). The C wrapper allocates with
``runtime.empty_strided_cpu`` (the CPU allocator and the tensor constructor, ~3 us) and reads a
data pointer with the buffer protocol on the tensor's NumPy storage (``ember_data_ptr``, in C);
figures in benchmarks/NOTES.md.
"""
import re

from .. import ir
from .wrapper import WrapperCodeGen, alloc_nbytes, op_expr

__all__ = ["CppWrapperCodeGen"]

# Shared by every C wrapper: data pointers, runtime lists and tuples, multi-output items.
C_HELPERS = r"""
/* ---- helpers of the C wrapper (ember/_inductor/codegen/cpp_wrapper.py) ---- */
/* A wrapper is a run of calls into Python, which the optimizer cannot speed up; GCC's -O3 on
   a wrapper of a few thousand calls (a GPT's backward) takes minutes, -O1 seconds. */
#if defined(__GNUC__) && !defined(__clang__)
#define EMBER_WRAPPER_OPT __attribute__((optimize("O1")))
#else
#define EMBER_WRAPPER_OPT
#endif
static PyObject *ember_str_storage, *ember_str_buf, *ember_str_offset, *ember_str_data_ptr;

static inline int ember_intern_names(void)
{
    if (ember_str_storage) return 0;
    ember_str_storage = PyUnicode_InternFromString("_storage_");
    ember_str_buf = PyUnicode_InternFromString("_buf");
    ember_str_offset = PyUnicode_InternFromString("_offset");
    ember_str_data_ptr = PyUnicode_InternFromString("data_ptr");
    return (ember_str_storage && ember_str_buf && ember_str_offset && ember_str_data_ptr) ? 0 : -1;
}

/* The buffer of a storage: the NumPy array itself (a kernel's fresh result, adopted lazily)
   or an UntypedStorage's _buf; NULL without an error when it has none to lend. */
static inline PyObject *ember_storage_buffer(PyObject *t)
{
    PyObject *s = PyObject_GetAttr(t, ember_str_storage);
    if (s == NULL || PyObject_CheckBuffer(s)) return s;
    PyObject *b = PyObject_GetAttr(s, ember_str_buf);
    Py_DECREF(s);
    if (b != NULL && PyObject_CheckBuffer(b)) return b;
    Py_XDECREF(b);
    return NULL;
}

/* Tensor.data_ptr() (element 0 of the view) without its Python calls; storages that lend no
   buffer (another device's) answer through data_ptr() itself. */
static inline int ember_data_ptr(PyObject *t, Py_ssize_t itemsize, void **out)
{
    PyObject *s = ember_storage_buffer(t);
    if (s != NULL) {
        Py_buffer view;
        int failed = PyObject_GetBuffer(s, &view, PyBUF_STRIDES);
        Py_DECREF(s);
        if (failed) return -1;
        char *base = view.buf;
        PyBuffer_Release(&view);
        PyObject *off = PyObject_GetAttr(t, ember_str_offset);
        if (off == NULL) return -1;
        Py_ssize_t k = PyLong_AsSsize_t(off);
        Py_DECREF(off);
        if (k == -1 && PyErr_Occurred()) return -1;
        *out = base + k * itemsize;
        return 0;
    }
    PyErr_Clear();
    PyObject *p = PyObject_CallMethodNoArgs(t, ember_str_data_ptr);
    if (p == NULL) return -1;
    *out = PyLong_AsVoidPtr(p);
    Py_DECREF(p);
    return PyErr_Occurred() ? -1 : 0;
}

/* A new list (or tuple) of n items, for arguments holding buffers: the [buf1] of an index */
static inline PyObject *ember_pack(int is_list, Py_ssize_t n, PyObject *const *items)
{
    PyObject *r = is_list ? PyList_New(n) : PyTuple_New(n);
    if (r == NULL) return NULL;
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_INCREF(items[i]);
        if (is_list) PyList_SET_ITEM(r, i, items[i]);
        else PyTuple_SET_ITEM(r, i, items[i]);
    }
    return r;
}

/* obj[path[0]][path[1]]...: one result of a multi-output fallback */
static inline PyObject *ember_item(PyObject *obj, Py_ssize_t depth, const Py_ssize_t *path)
{
    Py_INCREF(obj);
    for (Py_ssize_t i = 0; i < depth && obj != NULL; i++) {
        PyObject *next = PySequence_GetItem(obj, path[i]);
        Py_DECREF(obj);
        obj = next;
    }
    return obj;
}

/* f(*args) for its side effects (a bounds check): 0, or -1 with the exception set */
static inline int ember_check(PyObject *f, PyObject *const *args, size_t n, PyObject *kwnames)
{
    PyObject *r = PyObject_Vectorcall(f, args, n, kwnames);
    Py_XDECREF(r);
    return r == NULL ? -1 : 0;
}
"""


def _c_comment(text):
    return text.replace("*/", "* /")


# names a graph's buffers may not take as C locals: C's keywords and call()'s own names
_C_RESERVED = frozenset("""auto break case char const continue default do double else enum extern
float for goto if inline int long register restrict return short signed sizeof static struct
switch typedef union unsigned void volatile while bool true false self args fargs nfargs result
out p C""".split())


def c_local(name):
    """The C local holding buffer ``name``: its own name (``buf3``, ``primals_1``) unless that
    is taken (a placeholder called ``args`` or ``t0``)."""
    return f"v_{name}" if name in _C_RESERVED or re.fullmatch(r"t\d+", name) else name


class CppWrapperCodeGen(WrapperCodeGen):
    """The Python wrapper's generator, writing a C block beside each line it emits; after
    :meth:`generate`, ``c_wrapper`` is ``(C source, method table lines)`` for ``module_source``
    and :meth:`constant_values` gives the tuple ``bind`` takes."""

    def __init__(self, graph, scheduler):
        super().__init__(graph, scheduler)
        self.blocks = []        # C text for each entry of self.lines
        self.c_constants = {}   # Python expression -> index in the constants tuple
        self.c_wrapper = None

    def emit(self, code, uses=(), defines=None):
        super().emit(code, uses, defines)
        self.blocks.append(None)

    # -- constants and argument values ----------------------------------------------------
    def const(self, expr):
        """``C(k)``: the constant evaluating the Python expression ``expr``."""
        k = self.c_constants.setdefault(expr, len(self.c_constants))
        return f"C({k})"

    def value(self, a, temps):
        """A C expression for the Python value of argument ``a`` (a borrowed reference);
        values built at run time (views, lists holding buffers) become temporaries appended
        to ``temps`` as ``(name, expression)``."""
        if isinstance(a, ir.ReinterpretView):
            lay = a.layout
            items = [self.value(a.data, temps), self.const(repr(tuple(lay.size))),
                     self.const(repr(tuple(lay.stride))), self.const(repr(lay.offset))]
            return self._temp(temps, f"PyObject_Vectorcall({self.const('reinterpret_tensor')}, "
                                     f"(PyObject *const[]){{{', '.join(items)}}}, 4, NULL)")
        if isinstance(a, ir.Buffer):
            return self.ref(a.name)
        if isinstance(a, (list, tuple)) and self._names(a):
            items = [self.value(x, temps) for x in a]
            return self._temp(temps, f"ember_pack({int(isinstance(a, list))}, {len(items)}, "
                                     f"(PyObject *const[]){{{', '.join(items)}}})")
        return self.const(self.arg(a))

    def ref(self, name):
        """The C expression of buffer ``name``: its local, or for a tensor the graph holds
        (``_tensor_constantN``) the constant bound to that name."""
        return self.const(name) if name in self.graph.constants else c_local(name)

    @staticmethod
    def _temp(temps, expr):
        name = f"t{len(temps)}"
        temps.append((name, expr))
        return name

    def _set_block(self, target, expr, temps):
        """The C block computing ``target = expr`` (a new reference, NULL on error) after the
        temporaries ``expr`` reads; the temporaries are released whatever happens."""
        lines = ["{"]
        prev = None
        for name, texpr in temps:
            lines.append(f"    PyObject *{name} = {f'{prev} ? {texpr} : NULL' if prev else texpr};")
            prev = name
        lines.append(f"    {target} = {f'{prev} ? {expr} : NULL' if prev else expr};")
        lines += [f"    Py_XDECREF({name});" for name, _ in temps]
        lines += [f"    if ({target} == NULL) goto fail;", "}"]
        return lines

    # -- the blocks ----------------------------------------------------------------------------
    def codegen_alloc(self, name, lay):
        super().codegen_alloc(name, lay)
        args = [self.const(repr(tuple(lay.size))), self.const(repr(tuple(lay.stride))),
                self.const(self.arg(lay.dtype)), self.const(repr(alloc_nbytes(lay)))]
        v = c_local(name)
        self.blocks[-1] = [
            f"{v} = PyObject_Vectorcall({self.const('empty_strided_cpu')}, "
            f"(PyObject *const[]){{{', '.join(args)}}}, 4, NULL);",
            f"if ({v} == NULL) goto fail;"]

    def codegen_kernel_call(self, kname, args):
        super().codegen_kernel_call(kname, args)
        ctypes = self.kernels[-1][3]
        n = len(args)
        if n == 0:
            self.blocks[-1] = [f"{kname}();"]
            return
        checks = " ||\n            ".join(
            f"ember_data_ptr({self.ref(a)}, {self.graph.dtype_of(a).itemsize}, &p[{i}]) < 0"
            for i, a in enumerate(args))
        casts = ", ".join(f"({t}*)p[{i}]" for i, t in enumerate(ctypes))
        self.blocks[-1] = [
            "{",
            f"    void *p[{n}];",
            f"    if ({checks})",
            "        goto fail;",
            "    Py_BEGIN_ALLOW_THREADS",
            f"    {kname}({casts});",
            "    Py_END_ALLOW_THREADS",
            "    if (ember_kernel_oom) { ember_kernel_oom = 0; PyErr_NoMemory(); goto fail; }",
            "}"]

    def codegen_fallback(self, buf):
        super().codegen_fallback(buf)
        temps = []
        pos = [self.value(a, temps) for a in buf.args]
        kw = [self.value(v, temps) for v in buf.kwargs.values()]
        op = self.const(op_expr(buf.op))
        kwnames = self.const(repr(tuple(buf.kwargs))) if kw else "NULL"
        argv = ", ".join(pos + kw) or "NULL"
        call = (f"PyObject_Vectorcall({op}, (PyObject *const[]){{{argv}}}, {len(pos)}, {kwnames})"
                if pos or kw else f"PyObject_CallNoArgs({op})")
        self.blocks[-1] = self._set_block(c_local(buf.name), call, temps)

    def codegen_multi_output(self, buf):
        super().codegen_multi_output(buf)
        path = ", ".join(map(str, buf.index))
        v = c_local(buf.name)
        self.blocks[-1] = [
            f"{v} = ember_item({self.ref(buf.parent.name)}, {len(buf.index)}, "
            f"(const Py_ssize_t[]){{{path}}});",
            f"if ({v} == NULL) goto fail;"]

    def codegen_bounds_checks(self, name):
        first = len(self.lines)
        super().codegen_bounds_checks(name)
        for i, (size, op, dim, wrap) in zip(range(first, len(self.lines)),
                                            self.graph.bounds_checks.get(name, ())):
            args = [self.ref(name), self.const(repr(size)), self.const(repr(op)),
                    self.const(repr(dim))] + ([self.const("True")] if wrap else [])
            kwnames = self.const("('wrap',)") if wrap else "NULL"
            self.blocks[i] = [f"if (ember_check({self.const('check_bounds')}, "
                              f"(PyObject *const[]){{{', '.join(args)}}}, 4, {kwnames}) < 0)",
                              "    goto fail;"]

    # -- the function ---------------------------------------------------------------------------
    def generate(self):
        py_src = super().generate()
        return_line = py_src.rstrip().splitlines()[-1].strip()
        self.c_wrapper = (self._c_source(return_line), [
            '    {"bind", (PyCFunction)bind, METH_O, '
            '"bind(constants): the graph\'s call(args) using these constants"},'])
        return py_src

    def constant_values(self, namespace):
        """The constants tuple for ``bind``: each expression evaluated in ``namespace`` (the
        Python wrapper's), with the C wrapper's own helpers added."""
        from .. import runtime
        env = dict(namespace, empty_strided_cpu=runtime.empty_strided_cpu)
        return tuple(eval(expr, env) for expr in self.c_constants)  # noqa: S307 (our own text)

    def _c_source(self, return_line):
        g = self.graph
        inputs = list(g.graph_input_names)
        defined = [d for _, _, d in self.lines if d]
        local_names = [c_local(n) for n in inputs + [d for d in defined if d not in inputs]]
        # the graph's outputs and the tensors it holds are never dropped
        keep = self._names(list(g.graph_outputs)) | set(g.constants)
        body = []
        n_in = len(inputs)
        unpack = ", ".join(inputs) + ("," if n_in == 1 else "")
        body.append(f"/* {unpack + ' = args; ' if inputs else ''}args.clear() */")
        body += [f"if (PyList_GET_SIZE(args) != {n_in}) {{",
                 f'    PyErr_Format(PyExc_ValueError, "expected {n_in} inputs, got %zd", '
                 "PyList_GET_SIZE(args));",
                 "    return NULL;", "}"]
        for i, name in enumerate(inputs):
            body.append(f"{c_local(name)} = Py_NewRef(PyList_GET_ITEM(args, {i}));")
        body += ["if (PyList_SetSlice(args, 0, PY_SSIZE_T_MAX, NULL) < 0)", "    goto fail;"]
        for (code, _, _), block, dead in zip(self.lines, self.blocks, self.dead_after(keep)):
            body.append("")
            body.append(f"/* {_c_comment(code)} */")
            body += block
            if dead:
                body.append(f"/* del {', '.join(dead)} */")
                body += [f"Py_CLEAR({c_local(n)});" for n in dead]
        outs = list(g.graph_outputs)
        body += ["", f"/* {_c_comment(return_line)} */",
                 f"result = PyTuple_New({len(outs)});",
                 "if (result == NULL)", "    goto fail;"]
        built = False  # an output made at run time (a view) goes through `out`
        for i, o in enumerate(outs):
            temps = []
            v = self.value(o, temps)
            if temps:
                built = True
                body += self._set_block("out", f"Py_NewRef({v})", temps)
                v = "out"
            else:
                v = f"Py_NewRef({v})"
            body.append(f"PyTuple_SET_ITEM(result, {i}, {v});")
        n_refs = len(local_names)
        body += ["goto done;", "", "@fail:", "Py_CLEAR(result);", "@done:",
                 f"for (Py_ssize_t i = 0; i < {n_refs}; i++)", "    Py_XDECREF(ref[i]);",
                 "return result;"]
        # The references live in one array, each name a macro for its slot: the exit releases
        # them in a loop, where a local each (thousands in a big graph, every one live on each
        # path to the exit) takes the C compiler minutes.
        decls = [f"PyObject *ref[{max(n_refs, 1)}] = {{NULL}};"]
        if built:
            decls.append("PyObject *out;")
        slots = [f"#define {n} ref[{k}]" for k, n in enumerate(local_names)]
        n_const = len(self.c_constants)
        comment = [f"/* constant {k}: {_c_comment(expr)} */"
                   for expr, k in self.c_constants.items()]
        head = [
            f"/* ---- the wrapper of graph {g.name} in C (cpp_wrapper): call(args) ---- */",
            "/* C(k): the k-th constant, a Python value computed once when the graph loads */",
            "#define C(k) PyTuple_GET_ITEM(self, k)",
            *comment,
            "/* the call's references: slots of ref[] */",
            *slots,
            "EMBER_WRAPPER_OPT",
            "static PyObject *call(PyObject *self, PyObject *const *fargs, Py_ssize_t nfargs)",
            "{",
            "    PyObject *result = NULL;",
        ]
        head += ["    " + d for d in decls]
        head += ["    if (nfargs != 1 || !PyList_Check(fargs[0])) {",
                 '        PyErr_SetString(PyExc_TypeError, "call(args) takes the list of the '
                 'graph\'s inputs");',
                 "        return NULL;", "    }",
                 "    PyObject *args = fargs[0];"]
        # labels ("@" marks them) sit at the function's margin
        fn = head + [ln[1:] if ln.startswith("@") else "    " + ln if ln else "" for ln in body]
        fn += ["}", "#undef C"] + [f"#undef {n}" for n in local_names]
        bind = [
            "",
            "static PyMethodDef call_def = {\"call\", (PyCFunction)(void(*)(void))call, "
            "METH_FASTCALL, NULL};",
            "",
            "/* the graph's call(args), its constants bound as its self */",
            "static PyObject *bind(PyObject *module, PyObject *constants)",
            "{",
            "    if (!PyTuple_CheckExact(constants) || "
            f"PyTuple_GET_SIZE(constants) != {n_const}) {{",
            f'        PyErr_SetString(PyExc_TypeError, "bind() takes a tuple of {n_const} '
            'constants");',
            "        return NULL;", "    }",
            "    if (ember_intern_names() < 0)", "        return NULL;",
            "    return PyCFunction_New(&call_def, constants);",
            "}",
        ]
        return "\n".join([C_HELPERS.strip(), "", *fn, *bind]) + "\n"

