/* ember_autograd_recorder: the generated straight-line autograd recorder of
 * ember/autograd/derivatives.py (_generate_recorder) in C, for ops of one output (views too).
 *
 * Recording the node of a small op cost more than the op: `a * b` of two one-element leaves took
 * 1.0 us without grad and 3.0 us with; PyTorch records in 0.65 us. The recorder's Python was
 * sixty lines of bytecode, a Python __init__ for the node and one per saved tensor, and the
 * leaves' AccumulateGrad nodes. Here the same reads and stores are made from C: the tensors',
 * SavedTensor's and AutogradMeta's slots directly (their byte offsets are read from the member
 * descriptors once, by ember_tensor_impl.slot_offset), the nodes' dictionary attributes through
 * the generic setattr; GeneratedNode.__init__, AccumulateGrad.__init__ and SavedTensor.__init__
 * are mirrored store by store for their common case (tests/test_autograd_recorder_c.py compares
 * the two field by field).
 *
 * The Python recorder stays the definition: a Recorder takes the calls its common case covers and
 * calls the Python for every other:
 *   - forward-AD levels are live, anomaly mode is on (the forward trace it keeps is Python's),
 *     arguments that are not a tuple of the op's: the whole Python recorder;
 *   - CUDA streams are recorded (CUDA_STREAMS nonempty): the node class's __init__ and
 *     graph.grad_accumulator;
 *   - a leaf without AutogradMeta: graph.grad_accumulator; a view with autograd metadata:
 *     graph.gradient_edge; a view output: graph.autograd_meta;
 *   - saved-tensor hooks, an inference tensor, an output while the Python key is on, anything
 *     that is not a Tensor: SavedTensor(...) or derivatives._save_value.
 * An object that is not an ember.Tensor instance is read and written through its attributes.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stddef.h>

#if PY_VERSION_HEX >= 0x030D0000 /* 3.13 made the optional-attribute lookup public */
#define lookup_attr PyObject_GetOptionalAttr
#else
#define lookup_attr _PyObject_LookupAttr
#endif

/* the Tensor slots recording reads or writes */
enum { T_SIZE, T_DTYPE, T_DEVICE, T_VC, T_REQUIRES_GRAD, T_GRAD_FN, T_OUTPUT_NR, T_AUTOGRAD,
       T_STRIDE, T_OFFSET, T_BASE, T_NSLOTS };
static const char *tensor_slot_names[T_NSLOTS] = {
    "_size", "_dtype", "_device", "_vc", "_requires_grad", "_grad_fn", "_output_nr", "_autograd",
    "_stride", "_offset", "_base_"};

/* AutogradMeta.__slots__ the recorder reads or writes */
enum { M_GRAD_ACCUMULATOR, M_VIEW_VERSION, M_NSLOTS };
static const char *meta_slot_names[M_NSLOTS] = {"grad_accumulator", "view_version"};

/* SavedTensor.__slots__ the constructor sets ("packed" stays unset without hooks) */
enum { S_DATA, S_VERSION, S_IS_OUTPUT, S_OUTPUT_NR, S_GRAD_FN_NAME, S_RELEASED, S_REQUIRES_GRAD,
       S_UNPACK_HOOK, S_NSLOTS };
static const char *saved_slot_names[S_NSLOTS] = {
    "data", "version", "is_output", "output_nr", "grad_fn_name", "released", "requires_grad",
    "unpack_hook"};

/* A threading.local read from C: its attributes live in a dictionary per thread, which
 * ``local.__dict__`` gives for the calling thread. It is kept with the id of the thread state it
 * belongs to (ids are never reused), so each read is one dictionary lookup, not the local's
 * getattr (which finds the dictionary first, about 35 ns). */
typedef struct {
    PyObject *local;
    uint64_t thread_id;
    PyObject *dict; /* the dictionary of thread thread_id, or NULL */
} Local;

static struct {
    PyTypeObject *tensor; /* NULL until configure(): every call goes to Python */
    Py_ssize_t t_off[T_NSLOTS];
    PyObject *t_name[T_NSLOTS]; /* the slot names as interned strings, for other objects */
    PyTypeObject *saved;
    Py_ssize_t s_off[S_NSLOTS];
    PyTypeObject *meta;          /* AutogradMeta */
    Py_ssize_t m_off[M_NSLOTS];
    PyTypeObject *acc_cls;       /* AccumulateGrad */
    Local tls_state;             /* _dispatch/tls.py's state: excluded, included */
    PyObject *autograd_bits;     /* AUTOGRAD_BITS (an int) */
    PyObject *python_key;        /* bit(K.Python) */
    PyObject *fw_visible;        /* forward_ad.visible (a list) */
    Local anomaly_state;         /* anomaly_mode._state: enabled */
    Local hooks_state;           /* graph._hooks: stack */
    PyObject *cuda_streams;      /* graph.CUDA_STREAMS (a list) */
    Local seq;                   /* graph._seq: next (an itertools.count) */
    PyObject *grad_accumulator, *gradient_edge, *save_value, *shallow, *autograd_meta;
    PyObject *no_edge;           /* (None, 0) */
    PyObject *zero;
    PyObject *empty;             /* () */
} G;

static PyObject *str_excluded, *str_included, *str_next, *str_stack, *str_enabled, *str_seq_nr,
    *str_saved, *str_next_edges, *str_edge_meta, *str_edge_slices, *str_is_list_arg,
    *str_out_meta, *str_variable, *str_dict, *str_is_floating_point, *str_is_complex,
    *str_redispatch, *str_keyset;

#define SLOT(obj, off) (*(PyObject **)((char *)(obj) + (off)))

/* Tensor slot i of t (a new reference), through the attribute for what is not a Tensor. */
static PyObject *tget(PyObject *t, int i) {
    if (PyObject_TypeCheck(t, G.tensor)) {
        PyObject *v = SLOT(t, G.t_off[i]);
        if (v != NULL)
            return Py_NewRef(v);
    }
    return PyObject_GetAttr(t, G.t_name[i]);
}

/* t.<slot i> = v (v borrowed). */
static int tset(PyObject *t, int i, PyObject *v) {
    if (PyObject_TypeCheck(t, G.tensor)) {
        Py_XSETREF(SLOT(t, G.t_off[i]), Py_NewRef(v));
        return 0;
    }
    return PyObject_SetAttr(t, G.t_name[i], v);
}

/* hasattr(v, "_keyset"): is v a tensor. */
static int is_tensor(PyObject *v) {
    if (PyObject_TypeCheck(v, G.tensor))
        return 1;
    PyObject *ks;
    int r = lookup_attr(v, str_keyset, &ks);
    Py_XDECREF(ks);
    return r;
}

/* The calling thread's dictionary of l (borrowed). */
static PyObject *local_dict(Local *l) {
    uint64_t id = PyThreadState_GetID(PyThreadState_Get());
    if (l->dict == NULL || l->thread_id != id) {
        PyObject *d = PyObject_GetAttr(l->local, str_dict);
        if (d == NULL)
            return NULL;
        Py_XSETREF(l->dict, d);
        l->thread_id = id;
    }
    return l->dict;
}

/* l.name (a new reference); an attribute the thread has not set is the class's */
static PyObject *local_get(Local *l, PyObject *name) {
    PyObject *d = local_dict(l);
    if (d == NULL)
        return NULL;
    PyObject *v = PyDict_GetItemWithError(d, name);
    if (v != NULL)
        return Py_NewRef(v);
    return PyErr_Occurred() ? NULL : PyObject_GetAttr(l->local, name);
}

/* l.name = v */
static int local_set(Local *l, PyObject *name, PyObject *v) {
    PyObject *d = local_dict(l);
    return d != NULL ? PyDict_SetItem(d, name, v) : -1;
}

static void local_configure(Local *l, PyObject *local) {
    Py_XSETREF(l->local, Py_NewRef(local));
    Py_CLEAR(l->dict);
}

/* getattr(obj, name) is true */
static int attr_true(PyObject *obj, PyObject *name) {
    PyObject *v = PyObject_GetAttr(obj, name);
    if (v == NULL)
        return -1;
    int r = PyObject_IsTrue(v);
    Py_DECREF(v);
    return r;
}

static Py_ssize_t list_len(Local *local, PyObject *name) {
    PyObject *v = local_get(local, name);
    if (v == NULL)
        return -1;
    Py_ssize_t n = PyObject_Length(v);
    Py_DECREF(v);
    return n;
}

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    PyObject *python;      /* the generated Python recorder */
    PyObject *rcache;      /* the op's redispatch cache: key set -> kernel */
    PyObject *resolve;     /* OperatorEntry.resolve */
    PyObject *below;       /* BELOW_AUTOGRAD (an int) */
    PyObject *node_cls;
    PyObject *diff_args;   /* tuple of argument indices */
    PyObject *slices;      /* node._edge_slices */
    PyObject *is_list_arg; /* node._is_list_arg */
    PyObject *saved_args;  /* tuple of (argument index, name, guard) */
    PyObject *derived;     /* tuple of (argument index, name, function of the tensor, slot
                            * index or -1, as_tuple): the value is the function's, or the slot
                            * (as a tuple where as_tuple) */
    PyObject *results;     /* tuple of (name, guard): the output saved under each name */
    PyObject *node_name;
    int diff_mask0;        /* the output is differentiable */
    int is_view;           /* the output is a view of an input: track_views */
    Py_ssize_t nargs;      /* 1 + the largest argument index above */
} Recorder;

/* k(*a) for k the op's kernel below the autograd layer, with the autograd keys excluded. */
static PyObject *call_below(Recorder *r, PyObject *ks, PyObject *a) {
    PyObject *ex = local_get(&G.tls_state, str_excluded);
    if (ex == NULL)
        return NULL;
    PyObject *ex2 = PyNumber_Or(ex, G.autograd_bits);
    if (ex2 == NULL || local_set(&G.tls_state, str_excluded, ex2) < 0) {
        Py_XDECREF(ex2);
        Py_DECREF(ex);
        return NULL;
    }
    Py_DECREF(ex2);
    PyObject *out = NULL, *k = NULL, *m = PyNumber_And(ks, r->below);
    if (m != NULL) {
        k = PyDict_GetItemWithError(r->rcache, m);
        if (k != NULL)
            Py_INCREF(k);
        else if (!PyErr_Occurred())
            k = PyObject_CallFunctionObjArgs(r->resolve, m, str_redispatch, NULL);
        Py_DECREF(m);
    }
    if (k != NULL) {
        out = PyObject_Vectorcall(k, &PyTuple_GET_ITEM(a, 0), PyTuple_GET_SIZE(a), NULL);
        Py_DECREF(k);
    }
    /* finally: the excluded set is restored, an exception kept */
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    int failed = local_set(&G.tls_state, str_excluded, ex);
    Py_DECREF(ex);
    if (failed < 0) {
        Py_XDECREF(type);
        Py_XDECREF(value);
        Py_XDECREF(tb);
        Py_CLEAR(out);
    } else {
        PyErr_Restore(type, value, tb);
    }
    return out;
}

/* A new node: GeneratedNode.__init__'s stores (_seq_nr, _saved), or the class called when CUDA
 * streams are recorded. */
static PyObject *new_node(Recorder *r) {
    if (PyList_GET_SIZE(G.cuda_streams) != 0)
        return PyObject_CallNoArgs(r->node_cls);
    PyTypeObject *cls = (PyTypeObject *)r->node_cls;
    PyObject *node = cls->tp_new(cls, G.empty, NULL);
    if (node == NULL)
        return NULL;
    PyObject *counter = local_get(&G.seq, str_next);
    PyObject *nr = counter != NULL ? PyIter_Next(counter) : NULL;
    Py_XDECREF(counter);
    PyObject *saved = nr != NULL ? PyDict_New() : NULL;
    if (saved == NULL || PyObject_SetAttr(node, str_seq_nr, nr) < 0 ||
        PyObject_SetAttr(node, str_saved, saved) < 0)
        Py_CLEAR(node);
    Py_XDECREF(nr);
    Py_XDECREF(saved);
    return node;
}

/* ((t._size, t._dtype, t._device),): a node's _out_meta for its one output t */
static PyObject *out_meta(PyObject *t) {
    PyObject *size = tget(t, T_SIZE);
    PyObject *dtype = size != NULL ? tget(t, T_DTYPE) : NULL;
    PyObject *device = dtype != NULL ? tget(t, T_DEVICE) : NULL;
    PyObject *one = device != NULL ? PyTuple_Pack(3, size, dtype, device) : NULL;
    PyObject *meta = one != NULL ? PyTuple_Pack(1, one) : NULL;
    Py_XDECREF(size);
    Py_XDECREF(dtype);
    Py_XDECREF(device);
    Py_XDECREF(one);
    return meta;
}

/* The AccumulateGrad of leaf t: graph.grad_accumulator's common cases, the live one or a new one
 * (AccumulateGrad.__init__'s stores) held weakly by t's AutogradMeta; the Python function when t
 * has no AutogradMeta yet or CUDA streams are recorded. */
static PyObject *accumulator(PyObject *t) {
    PyObject *m = PyObject_TypeCheck(t, G.tensor) ? SLOT(t, G.t_off[T_AUTOGRAD]) : NULL;
    if (m == NULL || !Py_IS_TYPE(m, G.meta))
        return PyObject_CallOneArg(G.grad_accumulator, t);
    PyObject **ref = &SLOT(m, G.m_off[M_GRAD_ACCUMULATOR]); /* a weakref or None */
    if (*ref != NULL && PyWeakref_CheckRef(*ref)) {
        PyObject *acc = PyWeakref_GetObject(*ref);
        if (acc != Py_None)
            return Py_NewRef(acc);
    } else if (*ref != Py_None) {
        return PyObject_CallOneArg(G.grad_accumulator, t);
    }
    if (PyList_GET_SIZE(G.cuda_streams) != 0)
        return PyObject_CallOneArg(G.grad_accumulator, t);
    PyObject *acc = G.acc_cls->tp_new(G.acc_cls, G.empty, NULL);
    if (acc == NULL)
        return NULL;
    PyObject *meta = out_meta(t), *weak = NULL;
    if (meta == NULL || PyObject_SetAttr(acc, str_variable, t) < 0 ||
        PyObject_SetAttr(acc, str_out_meta, meta) < 0 ||
        (weak = PyWeakref_NewRef(acc, NULL)) == NULL)
        Py_CLEAR(acc);
    else
        Py_XSETREF(*ref, weak);
    Py_XDECREF(meta);
    return acc;
}

/* The edge a gradient for input t flows into and the (size, dtype) it must have, or (None, 0)
 * and None when t needs no gradient: the generated recorder's inlined gradient_edge. */
static int edge_of(PyObject *t, PyObject **edge, PyObject **meta) {
    *edge = *meta = NULL;
    PyObject *rg;
    if (PyObject_TypeCheck(t, G.tensor) && SLOT(t, G.t_off[T_REQUIRES_GRAD]) != NULL) {
        rg = Py_NewRef(SLOT(t, G.t_off[T_REQUIRES_GRAD]));
    } else if (lookup_attr(t, G.t_name[T_REQUIRES_GRAD], &rg) < 0) {
        return -1;
    }
    int needs = rg != NULL && PyObject_IsTrue(rg);
    Py_XDECREF(rg);
    if (needs < 0)
        return -1;
    if (!needs) {
        *edge = Py_NewRef(G.no_edge);
        *meta = Py_NewRef(Py_None);
        return 0;
    }
    PyObject *fn = tget(t, T_GRAD_FN);
    if (fn == NULL)
        return -1;
    if (fn == Py_None) {
        PyObject *acc = accumulator(t);
        *edge = acc != NULL ? PyTuple_Pack(2, acc, G.zero) : NULL;
        Py_XDECREF(acc);
    } else {
        PyObject *autograd = tget(t, T_AUTOGRAD);
        if (autograd == Py_None) {
            PyObject *nr = tget(t, T_OUTPUT_NR);
            *edge = nr != NULL ? PyTuple_Pack(2, fn, nr) : NULL;
            Py_XDECREF(nr);
        } else if (autograd != NULL) {
            *edge = PyObject_CallOneArg(G.gradient_edge, t);
        }
        Py_XDECREF(autograd);
    }
    Py_DECREF(fn);
    if (*edge == NULL)
        return -1;
    PyObject *size = tget(t, T_SIZE), *dtype = size != NULL ? tget(t, T_DTYPE) : NULL;
    *meta = dtype != NULL ? PyTuple_Pack(2, size, dtype) : NULL;
    Py_XDECREF(size);
    Py_XDECREF(dtype);
    if (*meta == NULL) {
        Py_CLEAR(*edge);
        return -1;
    }
    return 0;
}

/* node._next, _edge_meta, _edge_slices, _is_list_arg; *edges = node._next (a new reference) */
static int set_edges(Recorder *r, PyObject *node, PyObject *a, PyObject **edges) {
    Py_ssize_t n = PyTuple_GET_SIZE(r->diff_args);
    PyObject *next = PyTuple_New(n), *metas = PyTuple_New(n);
    int rc = -1;
    *edges = NULL;
    if (next == NULL || metas == NULL)
        goto done;
    for (Py_ssize_t j = 0; j < n; j++) {
        Py_ssize_t i = PyLong_AsSsize_t(PyTuple_GET_ITEM(r->diff_args, j));
        PyObject *edge, *meta;
        if (edge_of(PyTuple_GET_ITEM(a, i), &edge, &meta) < 0)
            goto done;
        PyTuple_SET_ITEM(next, j, edge);
        PyTuple_SET_ITEM(metas, j, meta);
    }
    if (PyObject_SetAttr(node, str_next_edges, next) == 0 &&
        PyObject_SetAttr(node, str_edge_meta, metas) == 0 &&
        PyObject_SetAttr(node, str_edge_slices, r->slices) == 0 &&
        PyObject_SetAttr(node, str_is_list_arg, r->is_list_arg) == 0) {
        *edges = Py_NewRef(next);
        rc = 0;
    }
done:
    Py_XDECREF(next);
    Py_XDECREF(metas);
    return rc;
}

/* node._out_meta, and the output's history when it is differentiable (a floating or complex
 * dtype). */
static int set_history(Recorder *r, PyObject *node, PyObject *out) {
    int tensor = is_tensor(out);
    if (tensor <= 0) {
        if (tensor < 0)
            return -1;
        PyObject *meta = PyTuple_Pack(1, Py_None);
        int rc = meta != NULL ? PyObject_SetAttr(node, str_out_meta, meta) : -1;
        Py_XDECREF(meta);
        return rc;
    }
    PyObject *meta = out_meta(out), *dtype = NULL;
    int rc = -1;
    if (meta == NULL || PyObject_SetAttr(node, str_out_meta, meta) < 0 ||
        (dtype = tget(out, T_DTYPE)) == NULL)
        goto done;
    if (r->diff_mask0) {
        int diff = attr_true(dtype, str_is_floating_point);
        if (diff == 0)
            diff = attr_true(dtype, str_is_complex);
        if (diff < 0)
            goto done;
        if (diff && (tset(out, T_GRAD_FN, node) < 0 || tset(out, T_OUTPUT_NR, G.zero) < 0 ||
                     tset(out, T_REQUIRES_GRAD, Py_True) < 0))
            goto done;
    }
    rc = 0;
done:
    Py_XDECREF(dtype);
    Py_XDECREF(meta);
    return rc;
}

/* views.track_views for a view op's one output: a view whose history is this node keeps its
 * version counter's value (a later in-place write to the base regenerates its grad_fn). */
static int track_view(PyObject *node, PyObject *out) {
    PyObject *base = tget(out, T_BASE);
    PyObject *fn = base != NULL && base != Py_None ? tget(out, T_GRAD_FN) : NULL;
    int rc = base != NULL && (base == Py_None || fn != NULL) ? 0 : -1;
    if (fn == node) {
        PyObject *m = PyObject_CallOneArg(G.autograd_meta, out);
        PyObject *vc = m != NULL ? tget(out, T_VC) : NULL;
        PyObject *version = vc != NULL ? PySequence_GetItem(vc, 0) : NULL;
        if (version == NULL) {
            rc = -1;
        } else if (Py_IS_TYPE(m, G.meta)) {
            Py_XSETREF(SLOT(m, G.m_off[M_VIEW_VERSION]), version);
        } else {
            rc = PyObject_SetAttrString(m, "view_version", version);
            Py_DECREF(version);
        }
        Py_XDECREF(m);
        Py_XDECREF(vc);
    }
    Py_XDECREF(base);
    Py_XDECREF(fn);
    return rc;
}

/* Whether the Python key is on (included and not excluded): a saved output is then detached
 * through the dispatcher, so the mode sees it. */
static int python_key_on(void) {
    PyObject *inc = local_get(&G.tls_state, str_included);
    PyObject *exc = inc != NULL ? local_get(&G.tls_state, str_excluded) : NULL;
    PyObject *inv = exc != NULL ? PyNumber_Invert(exc) : NULL;
    PyObject *on = inv != NULL ? PyNumber_And(inc, inv) : NULL;
    PyObject *bit = on != NULL ? PyNumber_And(on, G.python_key) : NULL;
    int r = bit != NULL ? PyObject_IsTrue(bit) : -1;
    Py_XDECREF(inc);
    Py_XDECREF(exc);
    Py_XDECREF(inv);
    Py_XDECREF(on);
    Py_XDECREF(bit);
    return r;
}

/* SavedTensor(t, is_output, name): its constructor's stores for a Tensor with a version counter
 * while no saved-tensor hooks are active (and, for an output, the Python key is off); the class
 * itself otherwise. */
static PyObject *save_tensor(PyObject *t, int is_output, PyObject *name, Py_ssize_t hooks) {
    PyObject *vc = PyObject_TypeCheck(t, G.tensor) ? SLOT(t, G.t_off[T_VC]) : NULL;
    int slow = hooks != 0 || vc == NULL || !PyList_CheckExact(vc) || PyList_GET_SIZE(vc) < 1;
    for (int i = T_SIZE; i <= T_AUTOGRAD && !slow; i++)
        slow = SLOT(t, G.t_off[i]) == NULL;
    if (!slow && is_output) {
        slow = python_key_on();
        if (slow < 0)
            return NULL;
    }
    if (slow)
        return PyObject_CallFunctionObjArgs((PyObject *)G.saved, t,
                                            is_output ? Py_True : Py_False, name, NULL);
    PyObject *data = is_output ? PyObject_CallOneArg(G.shallow, t) : Py_NewRef(t);
    if (data == NULL)
        return NULL;
    PyObject *s = G.saved->tp_alloc(G.saved, 0);
    if (s == NULL) {
        Py_DECREF(data);
        return NULL;
    }
    SLOT(s, G.s_off[S_DATA]) = data;
    SLOT(s, G.s_off[S_VERSION]) = Py_NewRef(PyList_GET_ITEM(vc, 0));
    SLOT(s, G.s_off[S_IS_OUTPUT]) = Py_NewRef(is_output ? Py_True : Py_False);
    SLOT(s, G.s_off[S_OUTPUT_NR]) = Py_NewRef(SLOT(t, G.t_off[T_OUTPUT_NR]));
    SLOT(s, G.s_off[S_GRAD_FN_NAME]) = Py_NewRef(is_output ? name : Py_None);
    SLOT(s, G.s_off[S_RELEASED]) = Py_NewRef(Py_False);
    SLOT(s, G.s_off[S_REQUIRES_GRAD]) = Py_NewRef(SLOT(t, G.t_off[T_REQUIRES_GRAD]));
    SLOT(s, G.s_off[S_UNPACK_HOOK]) = Py_NewRef(Py_None);
    return s;
}

/* what a value saved under a name becomes: _save's rules, a Tensor in C */
static PyObject *save_one(PyObject *v, int is_output, PyObject *name, Py_ssize_t hooks) {
    int tensor = is_tensor(v);
    if (tensor < 0)
        return NULL;
    if (tensor)
        return save_tensor(v, is_output, name, hooks);
    return PyObject_CallFunctionObjArgs(G.save_value, v, is_output ? Py_True : Py_False,
                                        is_output ? name : Py_None, NULL);
}

/* Whether a value saved under guard (an edge offset, or None) is needed: its edge exists. */
static int guard_open(PyObject *guard, PyObject *edges) {
    if (guard == Py_None)
        return 1;
    PyObject *edge = PyTuple_GET_ITEM(edges, PyLong_AsSsize_t(guard));
    return PyTuple_GET_ITEM(edge, 0) != Py_None;
}

/* saved[name] = v, v a new reference (or NULL: an error already set) that it takes */
static int put(PyObject *saved, PyObject *name, PyObject *v) {
    int rc = v != NULL ? PyDict_SetItem(saved, name, v) : -1;
    Py_XDECREF(v);
    return rc;
}

/* node._saved: the saved arguments, derived values and results, in the Python's order; a value
 * under a guard only when its edge needs a gradient */
static int save(Recorder *r, PyObject *node, PyObject *a, PyObject *out, PyObject *edges) {
    Py_ssize_t hooks = list_len(&G.hooks_state, str_stack);
    if (hooks < 0)
        return -1;
    PyObject *saved = PyObject_GetAttr(node, str_saved);
    if (saved == NULL)
        return -1;
    int rc = -1;
    for (Py_ssize_t j = 0; j < PyTuple_GET_SIZE(r->saved_args); j++) {
        PyObject *item = PyTuple_GET_ITEM(r->saved_args, j);
        if (!guard_open(PyTuple_GET_ITEM(item, 2), edges))
            continue;
        Py_ssize_t i = PyLong_AsSsize_t(PyTuple_GET_ITEM(item, 0));
        PyObject *v = save_one(PyTuple_GET_ITEM(a, i), 0, Py_None, hooks);
        if (put(saved, PyTuple_GET_ITEM(item, 1), v) < 0)
            goto done;
    }
    for (Py_ssize_t j = 0; j < PyTuple_GET_SIZE(r->derived); j++) {
        PyObject *item = PyTuple_GET_ITEM(r->derived, j);
        PyObject *t = PyTuple_GET_ITEM(a, PyLong_AsSsize_t(PyTuple_GET_ITEM(item, 0)));
        int tensor = is_tensor(t);
        if (tensor < 0)
            goto done;
        PyObject *v;
        int slot = (int)PyLong_AsLong(PyTuple_GET_ITEM(item, 3));
        if (!tensor)
            v = Py_NewRef(Py_None);
        else if (slot >= 0 && PyObject_TypeCheck(t, G.tensor) && SLOT(t, G.t_off[slot]) != NULL)
            v = PyTuple_GET_ITEM(item, 4) == Py_True ? PySequence_Tuple(SLOT(t, G.t_off[slot]))
                                                     : Py_NewRef(SLOT(t, G.t_off[slot]));
        else
            v = PyObject_CallOneArg(PyTuple_GET_ITEM(item, 2), t);
        if (put(saved, PyTuple_GET_ITEM(item, 1), v) < 0)
            goto done;
    }
    for (Py_ssize_t j = 0; j < PyTuple_GET_SIZE(r->results); j++) {
        PyObject *item = PyTuple_GET_ITEM(r->results, j);
        if (!guard_open(PyTuple_GET_ITEM(item, 1), edges))
            continue;
        PyObject *v = save_one(out, 1, r->node_name, hooks);
        if (put(saved, PyTuple_GET_ITEM(item, 0), v) < 0)
            goto done;
    }
    rc = 0;
done:
    Py_DECREF(saved);
    return rc;
}

/* record(ks, a): run the op below autograd, record its node, return its output */
static PyObject *recorder_vectorcall(Recorder *r, PyObject *const *args, size_t nargsf,
                                     PyObject *kwnames) {
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    if (G.tensor == NULL || kwnames != NULL || nargs != 2 || !PyTuple_CheckExact(args[1]) ||
        PyTuple_GET_SIZE(args[1]) < r->nargs || PyList_GET_SIZE(G.fw_visible) != 0)
        return PyObject_Vectorcall(r->python, args, nargsf, kwnames);
    /* anomaly mode keeps the forward's stack trace: the frames are the Python recorder's */
    PyObject *enabled = local_get(&G.anomaly_state, str_enabled);
    int anomaly = enabled != NULL ? PyObject_IsTrue(enabled) : -1;
    Py_XDECREF(enabled);
    if (anomaly != 0)
        return anomaly < 0 ? NULL : PyObject_Vectorcall(r->python, args, nargsf, kwnames);
    PyObject *a = args[1];
    PyObject *out = call_below(r, args[0], a);
    if (out == NULL)
        return NULL;
    PyObject *node = new_node(r), *edges = NULL;
    if (node == NULL || set_edges(r, node, a, &edges) < 0)
        goto fail;
    /* saved after the history is set, as _reverse_recorder explains */
    if (set_history(r, node, out) < 0 || (r->is_view && track_view(node, out) < 0) ||
        save(r, node, a, out, edges) < 0)
        goto fail;
    Py_DECREF(edges);
    Py_DECREF(node);
    return out;
fail:
    Py_XDECREF(edges);
    Py_XDECREF(node);
    Py_DECREF(out);
    return NULL;
}

static void recorder_dealloc(Recorder *r) {
    Py_XDECREF(r->python);
    Py_XDECREF(r->rcache);
    Py_XDECREF(r->resolve);
    Py_XDECREF(r->below);
    Py_XDECREF(r->node_cls);
    Py_XDECREF(r->diff_args);
    Py_XDECREF(r->slices);
    Py_XDECREF(r->is_list_arg);
    Py_XDECREF(r->saved_args);
    Py_XDECREF(r->derived);
    Py_XDECREF(r->results);
    Py_XDECREF(r->node_name);
    Py_TYPE(r)->tp_free((PyObject *)r);
}

/* Whether every item of t is an index >= 0 (width 0) or a tuple of width items starting with
 * one; *nargs is raised to 1 + the largest. */
static int index_tuple_ok(PyObject *t, Py_ssize_t width, Py_ssize_t *nargs) {
    for (Py_ssize_t j = 0; j < PyTuple_GET_SIZE(t); j++) {
        PyObject *item = PyTuple_GET_ITEM(t, j);
        PyObject *index = width ? (PyTuple_Check(item) && PyTuple_GET_SIZE(item) == width
                                       ? PyTuple_GET_ITEM(item, 0) : NULL)
                                : item;
        Py_ssize_t i = index != NULL && PyLong_Check(index) ? PyLong_AsSsize_t(index) : -1;
        if (i < 0) {
            PyErr_Clear();
            return 0;
        }
        if (i + 1 > *nargs)
            *nargs = i + 1;
    }
    return 1;
}

/* The derived-value items (index, name, function, slot name or None, as_tuple) with the slot
 * named by its index in tensor_slot_names, -1 for None: a new tuple. */
static PyObject *derived_items(PyObject *derived) {
    Py_ssize_t n = PyTuple_GET_SIZE(derived);
    PyObject *out = PyTuple_New(n);
    for (Py_ssize_t j = 0; out != NULL && j < n; j++) {
        PyObject *item = PyTuple_GET_ITEM(derived, j), *slot = PyTuple_GET_ITEM(item, 3);
        int index = -1;
        for (int i = 0; i < T_NSLOTS && slot != Py_None && index < 0; i++)
            if (PyUnicode_Check(slot) &&
                PyUnicode_CompareWithASCIIString(slot, tensor_slot_names[i]) == 0)
                index = i;
        PyObject *index_obj = PyLong_FromLong(index);
        PyObject *as_tuple = PyObject_IsTrue(PyTuple_GET_ITEM(item, 4)) ? Py_True : Py_False;
        PyObject *copy = index_obj != NULL && (slot == Py_None || index >= 0)
            ? PyTuple_Pack(5, PyTuple_GET_ITEM(item, 0), PyTuple_GET_ITEM(item, 1),
                           PyTuple_GET_ITEM(item, 2), index_obj, as_tuple)
            : NULL;
        Py_XDECREF(index_obj);
        if (copy == NULL) {
            if (!PyErr_Occurred())
                PyErr_Format(PyExc_ValueError, "Recorder: %R is not a Tensor slot it reads", slot);
            Py_CLEAR(out);
            break;
        }
        PyTuple_SET_ITEM(out, j, copy);
    }
    return out;
}

/* Whether item[at] of each item of t is None or an edge offset below len(diff_args) (a tuple
 * of at + 1 items at least). */
static int guards_ok(PyObject *t, Py_ssize_t at, PyObject *diff_args) {
    for (Py_ssize_t j = 0; j < PyTuple_GET_SIZE(t); j++) {
        PyObject *item = PyTuple_GET_ITEM(t, j);
        if (!PyTuple_Check(item) || PyTuple_GET_SIZE(item) <= at)
            return 0;
        PyObject *g = PyTuple_GET_ITEM(item, at);
        if (g == Py_None)
            continue;
        Py_ssize_t k = PyLong_Check(g) ? PyLong_AsSsize_t(g) : -1;
        if (k < 0 || k >= PyTuple_GET_SIZE(diff_args)) {
            PyErr_Clear();
            return 0;
        }
    }
    return 1;
}

/* Recorder(python, rcache, resolve, below, node_cls, diff_args, slices, is_list_arg, saved_args,
 *          derived, results, node_name, diff_mask0, is_view): see
 *          derivatives._generate_recorder. */
static PyObject *recorder_new(PyTypeObject *type, PyObject *args, PyObject *kwds) {
    PyObject *python, *rcache, *resolve, *below, *node_cls, *diff_args, *slices, *is_list_arg;
    PyObject *saved_args, *derived, *results, *node_name;
    int diff_mask0, is_view;
    if (!PyArg_ParseTuple(args, "OO!OO!O!O!OOO!O!O!Upp", &python, &PyDict_Type, &rcache,
                          &resolve, &PyLong_Type, &below, &PyType_Type, &node_cls, &PyTuple_Type,
                          &diff_args, &slices, &is_list_arg, &PyTuple_Type, &saved_args,
                          &PyTuple_Type, &derived, &PyTuple_Type, &results, &node_name,
                          &diff_mask0, &is_view))
        return NULL;
    Py_ssize_t nargs = 0;
    if (!index_tuple_ok(diff_args, 0, &nargs) || !index_tuple_ok(saved_args, 3, &nargs) ||
        !index_tuple_ok(derived, 5, &nargs) || !guards_ok(saved_args, 2, diff_args) ||
        !guards_ok(results, 1, diff_args)) {
        PyErr_SetString(PyExc_ValueError, "Recorder: argument indices must be ints >= 0, "
                        "guards None or an edge offset");
        return NULL;
    }
    derived = derived_items(derived);
    if (derived == NULL)
        return NULL;
    Recorder *r = (Recorder *)type->tp_alloc(type, 0);
    if (r == NULL) {
        Py_DECREF(derived);
        return NULL;
    }
    r->vectorcall = (vectorcallfunc)recorder_vectorcall;
    r->python = Py_NewRef(python);
    r->rcache = Py_NewRef(rcache);
    r->resolve = Py_NewRef(resolve);
    r->below = Py_NewRef(below);
    r->node_cls = Py_NewRef(node_cls);
    r->diff_args = Py_NewRef(diff_args);
    r->slices = Py_NewRef(slices);
    r->is_list_arg = Py_NewRef(is_list_arg);
    r->saved_args = Py_NewRef(saved_args);
    r->derived = derived;
    r->results = Py_NewRef(results);
    r->node_name = Py_NewRef(node_name);
    r->diff_mask0 = diff_mask0;
    r->is_view = is_view;
    r->nargs = nargs;
    return (PyObject *)r;
}

static PyObject *recorder_get_python(Recorder *r, void *closure) {
    return Py_NewRef(r->python);
}

static PyGetSetDef recorder_getset[] = {
    {"python", (getter)recorder_get_python, NULL, "the Python recorder this one stands for", NULL},
    {NULL}};

static PyTypeObject RecorderType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "ember_autograd_recorder.Recorder",
    .tp_basicsize = sizeof(Recorder),
    .tp_dealloc = (destructor)recorder_dealloc,
    .tp_vectorcall_offset = offsetof(Recorder, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_doc = "record(ks, a): the straight-line autograd recorder of one op",
    .tp_new = recorder_new,
    .tp_getset = recorder_getset,
};

static int offsets(PyObject *dict, const char **names, int n, Py_ssize_t *out) {
    for (int i = 0; i < n; i++) {
        PyObject *v = PyDict_GetItemString(dict, names[i]);
        if (v == NULL) {
            PyErr_Format(PyExc_KeyError, "configure: no offset for slot %s", names[i]);
            return -1;
        }
        out[i] = PyLong_AsSsize_t(v);
        if (out[i] == -1 && PyErr_Occurred())
            return -1;
    }
    return 0;
}

/* configure(tensor_cls, tensor_offsets, saved_cls, saved_offsets, meta_cls, meta_offsets,
 *           accumulate_grad_cls,
 *           tls_state, autograd_bits, python_key, fw_visible, anomaly_state, hooks_state,
 *           cuda_streams, seq, grad_accumulator, gradient_edge, save_value, shallow,
 *           autograd_meta); the offsets are dicts of slot name -> byte offset. */
static PyObject *configure(PyObject *self, PyObject *args) {
    PyTypeObject *tensor, *saved, *meta, *acc_cls;
    PyObject *t_offsets, *s_offsets, *m_offsets, *tls_state, *autograd_bits, *python_key;
    PyObject *fw_visible, *anomaly_state, *hooks_state, *cuda_streams, *seq, *grad_accumulator;
    PyObject *gradient_edge, *save_value, *shallow, *autograd_meta;
    if (!PyArg_ParseTuple(args, "O!O!O!O!O!O!O!OO!O!O!OOO!OOOOOO", &PyType_Type, &tensor,
                          &PyDict_Type, &t_offsets, &PyType_Type, &saved, &PyDict_Type,
                          &s_offsets, &PyType_Type, &meta, &PyDict_Type, &m_offsets, &PyType_Type,
                          &acc_cls, &tls_state,
                          &PyLong_Type, &autograd_bits, &PyLong_Type, &python_key, &PyList_Type,
                          &fw_visible, &anomaly_state, &hooks_state, &PyList_Type, &cuda_streams,
                          &seq, &grad_accumulator, &gradient_edge, &save_value, &shallow,
                          &autograd_meta))
        return NULL;
    if (offsets(t_offsets, tensor_slot_names, T_NSLOTS, G.t_off) < 0 ||
        offsets(s_offsets, saved_slot_names, S_NSLOTS, G.s_off) < 0 ||
        offsets(m_offsets, meta_slot_names, M_NSLOTS, G.m_off) < 0)
        return NULL;
    for (int i = 0; i < T_NSLOTS; i++) {
        Py_XSETREF(G.t_name[i], PyUnicode_InternFromString(tensor_slot_names[i]));
        if (G.t_name[i] == NULL)
            return NULL;
    }
    Py_XSETREF(G.tensor, (PyTypeObject *)Py_NewRef(tensor));
    Py_XSETREF(G.saved, (PyTypeObject *)Py_NewRef(saved));
    Py_XSETREF(G.meta, (PyTypeObject *)Py_NewRef(meta));
    Py_XSETREF(G.acc_cls, (PyTypeObject *)Py_NewRef(acc_cls));
    local_configure(&G.tls_state, tls_state);
    Py_XSETREF(G.autograd_bits, Py_NewRef(autograd_bits));
    Py_XSETREF(G.python_key, Py_NewRef(python_key));
    Py_XSETREF(G.fw_visible, Py_NewRef(fw_visible));
    local_configure(&G.anomaly_state, anomaly_state);
    local_configure(&G.hooks_state, hooks_state);
    Py_XSETREF(G.cuda_streams, Py_NewRef(cuda_streams));
    local_configure(&G.seq, seq);
    Py_XSETREF(G.grad_accumulator, Py_NewRef(grad_accumulator));
    Py_XSETREF(G.gradient_edge, Py_NewRef(gradient_edge));
    Py_XSETREF(G.save_value, Py_NewRef(save_value));
    Py_XSETREF(G.shallow, Py_NewRef(shallow));
    Py_XSETREF(G.autograd_meta, Py_NewRef(autograd_meta));
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"configure", configure, METH_VARARGS, "Set the classes, slot offsets, thread-local states "
     "and Python functions the recorders use (derivatives.py calls it once)."},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "ember_autograd_recorder",
                                    "The straight-line autograd recorder in C", -1, methods};

#define INTERN(var, text)                                                                       \
    if ((var = PyUnicode_InternFromString(text)) == NULL)                                       \
        return NULL;

PyMODINIT_FUNC PyInit_ember_autograd_recorder(void) {
    INTERN(str_excluded, "excluded");
    INTERN(str_included, "included");
    INTERN(str_next, "next");
    INTERN(str_stack, "stack");
    INTERN(str_enabled, "enabled");
    INTERN(str_seq_nr, "_seq_nr");
    INTERN(str_saved, "_saved");
    INTERN(str_next_edges, "_next");
    INTERN(str_edge_meta, "_edge_meta");
    INTERN(str_edge_slices, "_edge_slices");
    INTERN(str_is_list_arg, "_is_list_arg");
    INTERN(str_out_meta, "_out_meta");
    INTERN(str_variable, "variable");
    INTERN(str_dict, "__dict__");
    INTERN(str_is_floating_point, "is_floating_point");
    INTERN(str_is_complex, "is_complex");
    INTERN(str_redispatch, "redispatch");
    INTERN(str_keyset, "_keyset");
    G.zero = PyLong_FromLong(0);
    G.no_edge = PyTuple_Pack(2, Py_None, G.zero);
    G.empty = PyTuple_New(0);
    if (G.no_edge == NULL || G.empty == NULL || PyType_Ready(&RecorderType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&module);
    if (m == NULL)
        return NULL;
    Py_INCREF(&RecorderType);
    if (PyModule_AddObject(m, "Recorder", (PyObject *)&RecorderType) < 0) {
        Py_DECREF(&RecorderType);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
