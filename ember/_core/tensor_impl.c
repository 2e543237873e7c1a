/* ember_tensor_impl: the hot TensorImpl functions of ember/_core/tensor_impl.py in C.
 *
 * Every op's result goes through wrap_array (a kernel's fresh NumPy array adopted as a tensor) and
 * every view through _alias. In Python each costs about 0.3 us, a quarter of a small op's time:
 * fifteen slot stores, the array's dtype, shape and flags read through attribute lookups, a
 * thread-local read. Here the same fields are stored straight into the instance. data_ptr, which a
 * compiled graph's wrapper calls for every kernel argument, costs 1 us in Python (NumPy builds
 * the __array_interface__ dict to answer it) and 50 ns here.
 *
 * The Python functions stay the definition. This module takes only the common case (a plain
 * C-contiguous ndarray of a known dtype on the CPU, nobody watching allocations; a base that is
 * an ember.Tensor) and hands every other call to the Python function it was configured with, so
 * a rule is never written twice. The Tensor class is a Python class with __slots__; the slots'
 * byte offsets are read from their member descriptors once, in configure().
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#include <numpy/arrayobject.h>

/* Tensor.__slots__ in the order of the tables below (__weakref__ and _fw_grad are never set
 * by a constructor: an unset _fw_grad reads as absent, as in the Python code; _quantizer is set
 * on quantized tensors only, whose views the Python _alias makes). */
enum { STORAGE, SIZE, STRIDE, OFFSET, DTYPE, DEVICE, KEYSET, VC, BASE, NP, REQUIRES_GRAD, GRAD,
       GRAD_FN, OUTPUT_NR, AUTOGRAD, QUANTIZER, NSLOTS };
static const char *slot_names[NSLOTS] = {
    "_storage_", "_size", "_stride", "_offset", "_dtype", "_device", "_keyset", "_vc", "_base_",
    "_np", "_requires_grad", "_grad", "_grad_fn", "_output_nr", "_autograd", "_quantizer"};

#define NUM_TYPES 64 /* NumPy's builtin type numbers are below this */

static struct {
    PyTypeObject *tensor;        /* ember.Tensor (NULL until configure) */
    Py_ssize_t offset[NSLOTS];   /* byte offset of each slot in a Tensor instance */
    PyObject *dtypes[NUM_TYPES]; /* NumPy type number -> ember dtype, or NULL: the slow path */
    PyObject *cpu;               /* ember.device("cpu") */
    PyObject *keyset;            /* a CPU tensor's dispatch key set (an int) */
    PyObject *inference_keyset;  /* ... made under inference_mode */
    int keyset_has_vc;           /* whether each has ADInplaceOrView: a version counter */
    int inference_keyset_has_vc;
    PyObject *alloc_observers;   /* the memory profiler's list: nonempty -> the slow path */
    PyObject *tls_state;         /* ember/_dispatch/tls.py's thread-local ``state`` */
    PyObject *wrap_array_py;     /* the Python functions: every other case */
    PyObject *alias_py;
    PyObject *make_tensor_py;
    PyObject *data_ptr_py;
    Py_ssize_t itemsize[NUM_TYPES]; /* of S.dtypes[i] (data_ptr finds a dtype among them) */
    PyObject *str_inference;
    PyObject *str_storage;
    PyObject *str_buf;
} S;

#define SLOT(t, i) (*(PyObject **)((char *)(t) + S.offset[i]))

/* A Tensor with every constructor slot NULL; the caller stores a new reference in each. */
static PyObject *alloc_tensor(void) { return S.tensor->tp_alloc(S.tensor, 0); }

/* The autograd defaults a fresh tensor starts with (make_tensor's last six stores). */
static void set_autograd_defaults(PyObject *t) {
    SLOT(t, BASE) = Py_NewRef(Py_None);
    SLOT(t, REQUIRES_GRAD) = Py_NewRef(Py_False);
    SLOT(t, GRAD) = Py_NewRef(Py_None);
    SLOT(t, GRAD_FN) = Py_NewRef(Py_None);
    SLOT(t, OUTPUT_NR) = PyLong_FromLong(0); /* a cached small int: cannot fail */
    SLOT(t, AUTOGRAD) = Py_NewRef(Py_None);
}

static PyObject *new_version_counter(void) {
    PyObject *vc = PyList_New(1);
    if (vc != NULL)
        PyList_SET_ITEM(vc, 0, PyLong_FromLong(0));
    return vc;
}

/* A new CPU tensor of these fields (borrowed references), with the key set and version counter
 * of the thread's inference mode and the autograd defaults: make_tensor's stores. */
static PyObject *new_cpu_tensor(PyObject *storage, PyObject *size, PyObject *stride,
                                PyObject *offset, PyObject *dtype, PyObject *np) {
    PyObject *inference = PyObject_GetAttr(S.tls_state, S.str_inference);
    if (inference == NULL)
        return NULL;
    int in_inference = PyObject_IsTrue(inference);
    Py_DECREF(inference);
    if (in_inference < 0)
        return NULL;
    PyObject *vc = NULL;
    if (in_inference ? S.inference_keyset_has_vc : S.keyset_has_vc) {
        vc = new_version_counter();
        if (vc == NULL)
            return NULL;
    }
    PyObject *t = alloc_tensor();
    if (t == NULL) {
        Py_XDECREF(vc);
        return NULL;
    }
    SLOT(t, STORAGE) = Py_NewRef(storage);
    SLOT(t, SIZE) = Py_NewRef(size);
    SLOT(t, STRIDE) = Py_NewRef(stride);
    SLOT(t, OFFSET) = Py_NewRef(offset);
    SLOT(t, DTYPE) = Py_NewRef(dtype);
    SLOT(t, DEVICE) = Py_NewRef(S.cpu);
    SLOT(t, KEYSET) = Py_NewRef(in_inference ? S.inference_keyset : S.keyset);
    SLOT(t, VC) = vc != NULL ? vc : Py_NewRef(Py_None);
    SLOT(t, NP) = Py_NewRef(np);
    set_autograd_defaults(t);
    return t;
}

/* wrap_array(a, device=CPU): see tensor_impl.wrap_array. */
static PyObject *wrap_array(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
                            PyObject *kwnames) {
    if (kwnames != NULL || S.tensor == NULL || nargs < 1 || nargs > 2 ||
        !PyArray_CheckExact(args[0]) || (nargs == 2 && args[1] != S.cpu) ||
        PyList_GET_SIZE(S.alloc_observers) != 0)
        goto python;
    PyArrayObject *a = (PyArrayObject *)args[0];
    int num = PyArray_TYPE(a);
    if (num < 0 || num >= NUM_TYPES || S.dtypes[num] == NULL || !PyArray_IS_C_CONTIGUOUS(a))
        goto python;

    int nd = PyArray_NDIM(a);
    npy_intp *dims = PyArray_DIMS(a);
    PyObject *size = PyTuple_New(nd), *stride = PyTuple_New(nd), *t = NULL;
    if (size == NULL || stride == NULL)
        goto done;
    npy_intp step = 1; /* strides of a contiguous tensor: a dimension of 0 counts as 1 */
    for (int i = nd - 1; i >= 0; i--) {
        PyObject *n = PyLong_FromSsize_t(dims[i]), *s = PyLong_FromSsize_t(step);
        if (n == NULL || s == NULL) {
            Py_XDECREF(n);
            Py_XDECREF(s);
            goto done;
        }
        PyTuple_SET_ITEM(size, i, n);
        PyTuple_SET_ITEM(stride, i, s);
        step *= dims[i] > 1 ? dims[i] : 1;
    }
    PyObject *zero = PyLong_FromLong(0); /* a cached small int: cannot fail */
    /* the array is the storage too: the UntypedStorage is built from it when asked for */
    t = new_cpu_tensor(args[0], size, stride, zero, S.dtypes[num], args[0]);
    Py_DECREF(zero);
done:
    Py_XDECREF(size);
    Py_XDECREF(stride);
    return t;
python:
    return PyObject_Vectorcall(S.wrap_array_py, args, nargs, kwnames);
}

/* make_tensor(storage, size, stride, offset, dtype, device, cls=None): see
 * tensor_impl.make_tensor. The common case: a plain Tensor on the CPU. */
static PyObject *make_tensor(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
                             PyObject *kwnames) {
    if (kwnames != NULL || S.tensor == NULL || nargs < 6 || nargs > 7 || args[5] != S.cpu ||
        (nargs == 7 && args[6] != Py_None))
        return PyObject_Vectorcall(S.make_tensor_py, args, nargs, kwnames);
    return new_cpu_tensor(args[0], args[1], args[2], args[3], args[4], Py_None);
}

/* _alias(base, size, stride, offset, dtype=None): see tensor_impl._alias. */
static PyObject *alias(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
                       PyObject *kwnames) {
    if (kwnames != NULL || S.tensor == NULL || nargs < 4 || nargs > 5 ||
        !PyObject_TypeCheck(args[0], S.tensor))
        goto python;
    PyObject *base = args[0];
    for (int i = STORAGE; i <= BASE; i++)
        if (SLOT(base, i) == NULL)
            goto python;
    if (SLOT(base, QUANTIZER) != NULL) /* a quantized tensor: its view keeps the quantizer */
        goto python;
    /* A result's storage is still its kernel's array: Tensor._storage (a property) makes it an
     * UntypedStorage, once, for the base and all its views. */
    PyObject *storage = PyArray_CheckExact(SLOT(base, STORAGE))
                            ? PyObject_GetAttr(base, S.str_storage)
                            : Py_NewRef(SLOT(base, STORAGE));
    if (storage == NULL)
        return NULL;
    PyObject *dtype = nargs == 5 && args[4] != Py_None ? args[4] : SLOT(base, DTYPE);
    PyObject *root = SLOT(base, BASE) != Py_None ? SLOT(base, BASE) : base;
    PyObject *t = alloc_tensor();
    if (t == NULL) {
        Py_DECREF(storage);
        return NULL;
    }
    SLOT(t, STORAGE) = storage;
    SLOT(t, SIZE) = Py_NewRef(args[1]);
    SLOT(t, STRIDE) = Py_NewRef(args[2]);
    SLOT(t, OFFSET) = Py_NewRef(args[3]);
    SLOT(t, DTYPE) = Py_NewRef(dtype);
    SLOT(t, DEVICE) = Py_NewRef(SLOT(base, DEVICE));
    SLOT(t, KEYSET) = Py_NewRef(SLOT(base, KEYSET)); /* with the conjugate and negative bits */
    SLOT(t, VC) = Py_NewRef(SLOT(base, VC));
    SLOT(t, NP) = Py_NewRef(Py_None);
    set_autograd_defaults(t);
    Py_SETREF(SLOT(t, BASE), Py_NewRef(root));
    return t;
python:
    return PyObject_Vectorcall(S.alias_py, args, nargs, kwnames);
}

/* data_ptr(t): see tensor_impl.data_ptr. The common case: a CPU tensor whose storage is still
 * its kernel's array, or an UntypedStorage over a NumPy array, with int sizes and offset. */
static PyObject *data_ptr(PyObject *self, PyObject *t) {
    if (S.tensor == NULL || !Py_IS_TYPE(t, S.tensor))
        goto python;
    PyObject *size = SLOT(t, SIZE), *storage = SLOT(t, STORAGE), *offset = SLOT(t, OFFSET);
    PyObject *dtype = SLOT(t, DTYPE);
    if (size == NULL || storage == NULL || offset == NULL || dtype == NULL ||
        !PyTuple_CheckExact(size) || !PyLong_CheckExact(offset))
        goto python;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(size); i++) {
        PyObject *n = PyTuple_GET_ITEM(size, i);
        if (!PyLong_CheckExact(n))
            goto python;
        Py_ssize_t extent = PyLong_AsSsize_t(n);
        if (extent == -1 && PyErr_Occurred()) {
            PyErr_Clear();
            goto python;
        }
        if (extent == 0)
            return PyLong_FromLong(0); /* an empty tensor has no data pointer */
    }
    Py_ssize_t itemsize = 0;
    for (int i = 0; i < NUM_TYPES && itemsize == 0; i++)
        if (S.dtypes[i] == dtype)
            itemsize = S.itemsize[i];
    Py_ssize_t off = PyLong_AsSsize_t(offset);
    if (itemsize == 0 || (off == -1 && PyErr_Occurred())) {
        PyErr_Clear();
        goto python;
    }
    char *p;
    if (PyArray_CheckExact(storage)) {
        p = PyArray_BYTES((PyArrayObject *)storage);
    } else {
        PyObject *buf = PyObject_GetAttr(storage, S.str_buf);
        if (buf == NULL) {
            PyErr_Clear();
            goto python;
        }
        int plain = PyArray_CheckExact(buf);
        p = plain ? PyArray_BYTES((PyArrayObject *)buf) : NULL;
        Py_DECREF(buf);
        if (!plain)
            goto python;
    }
    return PyLong_FromVoidPtr(p == NULL ? NULL : p + off * itemsize);
python:
    if (S.data_ptr_py == NULL)
        return PyErr_Format(PyExc_RuntimeError, "ember_tensor_impl is not configured");
    return PyObject_CallOneArg(S.data_ptr_py, t);
}

static int slot_offset(PyTypeObject *cls, const char *name, Py_ssize_t *offset) {
    PyObject *descr = PyDict_GetItemString(cls->tp_dict, name);
    if (descr == NULL || !Py_IS_TYPE(descr, &PyMemberDescr_Type)) {
        PyErr_Format(PyExc_TypeError, "%s.%s is not a slot", cls->tp_name, name);
        return -1;
    }
    PyMemberDef *member = ((PyMemberDescrObject *)descr)->d_member;
    if (member->type != T_OBJECT_EX) {
        PyErr_Format(PyExc_TypeError, "%s.%s is not an object slot", cls->tp_name, name);
        return -1;
    }
    *offset = member->offset;
    return 0;
}

/* slot_offset(cls, name): the byte offset of an object slot of a __slots__ class (the autograd
 * recorder in C reads Tensor's and SavedTensor's slots at the offsets this gives it). */
static PyObject *slot_offset_py(PyObject *self, PyObject *args) {
    PyTypeObject *cls;
    const char *name;
    Py_ssize_t offset;
    if (!PyArg_ParseTuple(args, "O!s", &PyType_Type, &cls, &name) ||
        slot_offset(cls, name, &offset) < 0)
        return NULL;
    return PyLong_FromSsize_t(offset);
}

static void clear_state(void) {
    Py_CLEAR(S.tensor);
    for (int i = 0; i < NUM_TYPES; i++)
        Py_CLEAR(S.dtypes[i]);
    Py_CLEAR(S.cpu);
    Py_CLEAR(S.keyset);
    Py_CLEAR(S.inference_keyset);
    Py_CLEAR(S.alloc_observers);
    Py_CLEAR(S.tls_state);
    Py_CLEAR(S.wrap_array_py);
    Py_CLEAR(S.alias_py);
    Py_CLEAR(S.make_tensor_py);
    Py_CLEAR(S.data_ptr_py);
}

/* configure(tensor_class, dtypes_by_num, cpu, keyset, inference_keyset, vc_bit, alloc_observers,
 *           tls_state, wrap_array_py, alias_py, make_tensor_py, data_ptr_py) */
static PyObject *configure(PyObject *self, PyObject *args) {
    PyTypeObject *cls;
    PyObject *dtypes, *cpu, *keyset, *inference_keyset, *observers, *tls_state, *wrap_py, *alias_py;
    PyObject *make_tensor_py, *data_ptr_py;
    unsigned long long vc_bit;
    if (!PyArg_ParseTuple(args, "O!O!OO!O!KO!OOOOO", &PyType_Type, &cls, &PyDict_Type, &dtypes,
                          &cpu, &PyLong_Type, &keyset, &PyLong_Type, &inference_keyset, &vc_bit,
                          &PyList_Type, &observers, &tls_state, &wrap_py, &alias_py,
                          &make_tensor_py, &data_ptr_py))
        return NULL;
    Py_ssize_t offset[NSLOTS];
    for (int i = 0; i < NSLOTS; i++)
        if (slot_offset(cls, slot_names[i], &offset[i]) < 0)
            return NULL;
    unsigned long long ks = PyLong_AsUnsignedLongLong(keyset);
    unsigned long long iks = PyLong_AsUnsignedLongLong(inference_keyset);
    if (PyErr_Occurred())
        return NULL;
    clear_state();
    memcpy(S.offset, offset, sizeof offset);
    PyObject *key, *value;
    Py_ssize_t pos = 0;
    while (PyDict_Next(dtypes, &pos, &key, &value)) {
        long num = PyLong_AsLong(key);
        if (num == -1 && PyErr_Occurred())
            return NULL;
        if (num >= 0 && num < NUM_TYPES) {
            PyObject *itemsize = PyObject_GetAttrString(value, "itemsize");
            if (itemsize == NULL)
                return NULL;
            S.itemsize[num] = PyLong_AsSsize_t(itemsize);
            Py_DECREF(itemsize);
            if (S.itemsize[num] == -1 && PyErr_Occurred())
                return NULL;
            S.dtypes[num] = Py_NewRef(value);
        }
    }
    S.tensor = (PyTypeObject *)Py_NewRef(cls);
    S.cpu = Py_NewRef(cpu);
    S.keyset = Py_NewRef(keyset);
    S.inference_keyset = Py_NewRef(inference_keyset);
    S.keyset_has_vc = (ks & vc_bit) != 0;
    S.inference_keyset_has_vc = (iks & vc_bit) != 0;
    S.alloc_observers = Py_NewRef(observers);
    S.tls_state = Py_NewRef(tls_state);
    S.wrap_array_py = Py_NewRef(wrap_py);
    S.alias_py = Py_NewRef(alias_py);
    S.make_tensor_py = Py_NewRef(make_tensor_py);
    S.data_ptr_py = Py_NewRef(data_ptr_py);
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"configure", configure, METH_VARARGS, "Set the Tensor class and the constants the "
     "constructors need (tensor_impl.py calls it once Tensor is defined)."},
    {"wrap_array", (PyCFunction)(void (*)(void))wrap_array, METH_FASTCALL | METH_KEYWORDS,
     "wrap_array(a, device=CPU): a kernel's fresh array adopted as a new tensor."},
    {"_alias", (PyCFunction)(void (*)(void))alias, METH_FASTCALL | METH_KEYWORDS,
     "_alias(base, size, stride, offset, dtype=None): a view of base's storage."},
    {"make_tensor", (PyCFunction)(void (*)(void))make_tensor, METH_FASTCALL | METH_KEYWORDS,
     "make_tensor(storage, size, stride, offset, dtype, device, cls=None): a new tensor."},
    {"slot_offset", slot_offset_py, METH_VARARGS,
     "slot_offset(cls, name): the byte offset of the object slot ``name`` of ``cls``."},
    {"data_ptr", data_ptr, METH_O, "data_ptr(t): the address of t's first element (0 if empty)."},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "ember_tensor_impl",
                                    "TensorImpl constructors and data_ptr in C", -1, methods};

PyMODINIT_FUNC PyInit_ember_tensor_impl(void) {
    import_array();
    S.str_inference = PyUnicode_InternFromString("inference");
    S.str_storage = PyUnicode_InternFromString("_storage");
    S.str_buf = PyUnicode_InternFromString("_buf");
    if (S.str_inference == NULL || S.str_storage == NULL || S.str_buf == NULL)
        return NULL;
    return PyModule_Create(&module);
}
