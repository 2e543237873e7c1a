/* ember_caching_allocator: the common case of DeviceCachingAllocator.malloc and .free
 * (ember/cuda/_caching_allocator.py) in C.
 *
 * Every CUDA op's result is one malloc and, when it dies, one free. In Python the pair costs
 * about 4.6 us on the development machine (the best-fit search, the split and merge of blocks,
 * fourteen statistics, each a few attribute stores): more than the rest of a small op's
 * allocation. Through these functions the pair costs 1.4 us.
 *
 * The Python methods stay the definition. This module takes only the case that needs none of
 * the allocator's other machinery: nobody recording history or tracing, no CUDA graph capture
 * under way, no cross-stream events pending, no garbage collection threshold in force, no
 * expandable segments, no power-of-two rounding for the size, and a cached block that fits.
 * For every other call they return None (malloc) or False (free) before changing anything, and
 * the Python method runs.
 * Block, Stat, _SortedBlocks, BlockPool and _PoolStats are Python classes with __slots__; their
 * slots' byte offsets come to configure() once (read by ember_tensor_impl.slot_offset, as the
 * autograd recorder's do).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

/* Block.__slots__ (the order of the tables below) */
enum { B_DEVICE, B_STREAM, B_STREAM_USES, B_SIZE, B_REQUESTED_SIZE, B_POOL, B_PTR, B_ALLOCATED,
       B_MAPPED, B_PREV, B_NEXT, B_EVENT_COUNT, B_GC_COUNT_BASE, B_CONTEXT_WHEN_ALLOCATED,
       B_CONTEXT_WHEN_SEGMENT_ALLOCATED, B_EXPANDABLE_SEGMENT, B_NSLOTS };
static const char *block_slots[B_NSLOTS] = {
    "device", "stream", "stream_uses", "size", "requested_size", "pool", "ptr", "allocated",
    "mapped", "prev", "next", "event_count", "gc_count_base", "context_when_allocated",
    "context_when_segment_allocated", "expandable_segment"};

enum { S_CURRENT, S_PEAK, S_ALLOCATED, S_FREED, S_NSLOTS };
static const char *stat_slots[S_NSLOTS] = {"current", "peak", "allocated", "freed"};

/* _SortedBlocks and BlockPool slots */
enum { SB_BY_SIZE, SB_KEYS, SB_BLOCKS, SB_NSLOTS };
static const char *sorted_slots[SB_NSLOTS] = {"_by_size", "_keys", "_blocks"};
enum { P_BLOCKS, P_IS_SMALL, P_GET_FREE_BLOCKS_CALL_COUNT, P_NSLOTS };
static const char *pool_slots[P_NSLOTS] = {"blocks", "is_small", "get_free_blocks_call_count"};

/* _PoolStats slots: the (AGGREGATE, pool type) Stat pairs malloc and free move */
enum { H_ALLOCATION, H_ACTIVE, H_INACTIVE_SPLIT, H_ALLOCATED_BYTES, H_ACTIVE_BYTES,
       H_INACTIVE_SPLIT_BYTES, H_REQUESTED_BYTES, H_NSLOTS };
static const char *hot_slots[H_NSLOTS] = {"allocation", "active", "inactive_split",
                                          "allocated_bytes", "active_bytes",
                                          "inactive_split_bytes", "requested_bytes"};

#define K_MIN_BLOCK_SIZE 512LL
#define K_SMALL_SIZE (1LL << 20)

static struct {
    PyTypeObject *block_type; /* NULL until configure */
    Py_ssize_t block[B_NSLOTS], stat[S_NSLOTS], sorted[SB_NSLOTS], pool[P_NSLOTS],
        hot[H_NSLOTS];
    /* attribute names read from the allocator, its config and its stats */
    PyObject *s_busy, *s_record_context, *s_record_history, *s_trace_trackers,
        *s_captures_underway, *s_cuda_events, *s_deferred_events, *s_set_fraction,
        *s_small_blocks, *s_large_blocks, *s_active_blocks,
        *s_stats, *s_small_pool, *s_large_pool, *s_oversize_allocations,
        *s_expandable_segments, *s_gc_threshold, *s_divisions,
        *s_max_split_size, *s_max_non_split_rounding_size;
} S;

#define SLOT(o, table, i) (*(PyObject **)((char *)(o) + S.table[i]))

/* Store a new reference into an object slot, releasing the old value. */
static inline void set_slot(PyObject *o, Py_ssize_t offset, PyObject *value) {
    PyObject **p = (PyObject **)((char *)o + offset);
    PyObject *old = *p;
    *p = value;
    Py_XDECREF(old);
}
#define SET(o, table, i, v) set_slot((o), S.table[i], (v))

/* A slot's value as a C integer; -1 with an exception when it is not an int (or unset). */
static inline long long slot_ll(PyObject *o, Py_ssize_t offset, int *err) {
    PyObject *v = *(PyObject **)((char *)o + offset);
    if (v == NULL || !PyLong_CheckExact(v)) {
        *err = 1;
        return -1;
    }
    long long x = PyLong_AsLongLong(v);
    if (x == -1 && PyErr_Occurred()) {
        PyErr_Clear();
        *err = 1;
    }
    return x;
}

static inline int set_ll(PyObject *o, Py_ssize_t offset, long long x) {
    PyObject *v = PyLong_FromLongLong(x);
    if (v == NULL)
        return -1;
    set_slot(o, offset, v);
    return 0;
}

/* An attribute's truth value (-1 on an error). */
static int attr_true(PyObject *o, PyObject *name) {
    PyObject *v = PyObject_GetAttr(o, name);
    if (v == NULL)
        return -1;
    int r = PyObject_IsTrue(v);
    Py_DECREF(v);
    return r;
}

/* An attribute as an unsigned C integer (SIZE_MAX-sized settings); 0 with *err set on an
 * error. */
static unsigned long long attr_ull(PyObject *o, PyObject *name, int *err) {
    PyObject *v = PyObject_GetAttr(o, name);
    if (v == NULL) {
        *err = 1;
        return 0;
    }
    unsigned long long x = PyLong_AsUnsignedLongLong(v);
    Py_DECREF(v);
    if (x == (unsigned long long)-1 && PyErr_Occurred())
        *err = 1;
    return x;
}

/* Stat.increase (increase = 1) or Stat.decrease of one Stat. */
static int stat_move(PyObject *s, long long amount, int increase) {
    int err = 0;
    long long current = slot_ll(s, S.stat[S_CURRENT], &err);
    long long total = slot_ll(s, S.stat[increase ? S_ALLOCATED : S_FREED], &err);
    long long peak = slot_ll(s, S.stat[S_PEAK], &err);
    if (err)
        return PyErr_SetString(PyExc_TypeError, "a CUDA allocator statistic is not an int"), -1;
    current += increase ? amount : -amount;
    if (!increase && current < 0) {
        PyErr_SetString(PyExc_AssertionError,
                        "Negative tracked stat in CUDA allocator (likely logic error).");
        return -1;
    }
    if (set_ll(s, S.stat[S_CURRENT], current) < 0 ||
        set_ll(s, S.stat[increase ? S_ALLOCATED : S_FREED], total + amount) < 0 ||
        (current > peak && set_ll(s, S.stat[S_PEAK], current) < 0))
        return -1;
    return 0;
}

/* The same on both Stats of a (AGGREGATE, pool type) pair of a _PoolStats. */
static int stats_move(PyObject *hot, int which, long long amount, int increase) {
    PyObject *pair = SLOT(hot, hot, which);
    if (stat_move(PyTuple_GET_ITEM(pair, 0), amount, increase) < 0 ||
        stat_move(PyTuple_GET_ITEM(pair, 1), amount, increase) < 0)
        return -1;
    return 0;
}

/* stats.oversize_allocations moved by one. */
static int oversize_move(PyObject *alloc, int increase) {
    PyObject *stats = PyObject_GetAttr(alloc, S.s_stats);
    PyObject *over = stats ? PyObject_GetAttr(stats, S.s_oversize_allocations) : NULL;
    Py_XDECREF(stats);
    if (over == NULL)
        return -1;
    int r = stat_move(over, 1, increase);
    Py_DECREF(over);
    return r;
}

/* --- _SortedBlocks -------------------------------------------------------------------------- */

/* The first index whose key (stream, size, ptr) is not below (stream, size, ptr): bisect_left
 * over the set's keys, compared as the tuples of ints they are. -2 when a key is not such a
 * tuple (the caller declines the call). */
static Py_ssize_t lower_bound(PyObject *keys, long long stream, long long size, long long ptr) {
    Py_ssize_t lo = 0, hi = PyList_GET_SIZE(keys);
    while (lo < hi) {
        Py_ssize_t mid = lo + (hi - lo) / 2;
        PyObject *k = PyList_GET_ITEM(keys, mid);
        if (!PyTuple_CheckExact(k) || PyTuple_GET_SIZE(k) != 3)
            return -2;
        long long v[3];
        for (int j = 0; j < 3; j++) {
            PyObject *x = PyTuple_GET_ITEM(k, j);
            if (!PyLong_CheckExact(x))
                return -2;
            v[j] = PyLong_AsLongLong(x);
            if (v[j] == -1 && PyErr_Occurred()) {
                PyErr_Clear();
                return -2;
            }
        }
        int below = v[0] != stream ? v[0] < stream : v[1] != size ? v[1] < size : v[2] < ptr;
        if (below)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* The key tuple of a block in a by-size set. */
static PyObject *size_key(PyObject *b) {
    return PyTuple_Pack(3, SLOT(b, block, B_STREAM), SLOT(b, block, B_SIZE),
                        SLOT(b, block, B_PTR));
}

/* Where block b's key (stream, size, ptr) lies in a by-size set: its lower bound, with *equal
 * saying whether that key is there; -1 with an exception when a key is not ints. */
static Py_ssize_t key_position(PyObject *set, PyObject *b, int *equal) {
    int err = 0;
    long long stream = slot_ll(b, S.block[B_STREAM], &err);
    long long size = slot_ll(b, S.block[B_SIZE], &err);
    long long ptr = slot_ll(b, S.block[B_PTR], &err);
    if (err)
        return PyErr_SetString(PyExc_TypeError, "a CUDA block's key is not ints"), -1;
    PyObject *keys = SLOT(set, sorted, SB_KEYS);
    Py_ssize_t i = lower_bound(keys, stream, size, ptr);
    if (i == -2)
        return PyErr_SetString(PyExc_TypeError, "a CUDA block set's key is not ints"), -1;
    *equal = i < PyList_GET_SIZE(keys) && lower_bound(keys, stream, size, ptr + 1) != i;
    return i;
}

/* _SortedBlocks.add for a by-size set: 1 added, 0 already there, -1 error. */
static int sorted_add(PyObject *set, PyObject *b) {
    int equal;
    Py_ssize_t i = key_position(set, b, &equal);
    if (i < 0 || equal)
        return i < 0 ? -1 : 0;
    PyObject *k = size_key(b);
    if (k == NULL)
        return -1;
    int r = PyList_Insert(SLOT(set, sorted, SB_KEYS), i, k);
    Py_DECREF(k);
    if (r < 0 || PyList_Insert(SLOT(set, sorted, SB_BLOCKS), i, b) < 0)
        return -1;
    return 1;
}

/* _SortedBlocks.discard for a by-size set: 1 removed, 0 absent, -1 error. */
static int sorted_discard(PyObject *set, PyObject *b) {
    int equal;
    Py_ssize_t i = key_position(set, b, &equal);
    PyObject *blocks = SLOT(set, sorted, SB_BLOCKS);
    if (i < 0 || !equal || PyList_GET_ITEM(blocks, i) != b)
        return i < 0 ? -1 : 0;
    if (PyList_SetSlice(SLOT(set, sorted, SB_KEYS), i, i + 1, NULL) < 0 ||
        PyList_SetSlice(blocks, i, i + 1, NULL) < 0)
        return -1;
    return 1;
}

/* --- the allocator's state ------------------------------------------------------------------- */

/* 1 when the allocator is in the state this module handles (see the top), 0 when not, -1 on
 * an error. */
static int plain_state(PyObject *alloc, PyObject *cfg) {
    int busy = attr_true(alloc, S.s_busy);
    if (busy != 0)
        return busy < 0 ? -1 : 0;
    PyObject *names[] = {S.s_record_context, S.s_record_history, S.s_trace_trackers,
                         S.s_captures_underway, S.s_cuda_events, S.s_deferred_events};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        int r = attr_true(alloc, names[i]);
        if (r != 0)
            return r < 0 ? -1 : 0;
    }
    int r = attr_true(cfg, S.s_expandable_segments);
    if (r != 0)
        return r < 0 ? -1 : 0;
    /* with a memory fraction and a garbage collection threshold, each search ages the blocks */
    r = attr_true(alloc, S.s_set_fraction);
    if (r > 0) {
        PyObject *t = PyObject_GetAttr(cfg, S.s_gc_threshold);
        double threshold = t ? PyFloat_AsDouble(t) : -1.0;
        Py_XDECREF(t);
        if (threshold == -1.0 && PyErr_Occurred())
            return -1;
        r = threshold > 0.0;
    }
    return r < 0 ? -1 : !r;
}

/* The pools change only between begin_update and end_update, which run no Python code: no
 * cyclic garbage collection (a finalizer could free a tensor's block, or let another thread
 * run), and the blocks a change drops are released only after end_update. So no other thread
 * and no finalizer sees the pools half updated, without the lock the Python methods take; a
 * Python method under way (_busy, maybe waiting for the GIL) makes these functions decline. */
static int begin_update(void) { return PyGC_Disable(); }

static void end_update(int gc_was_enabled) {
    if (gc_was_enabled)
        PyGC_Enable();
}

/* The allocator's _PoolStats for a pool's type (a new reference). */
static PyObject *hot_stats(PyObject *alloc, PyObject *pool) {
    PyObject *stats = PyObject_GetAttr(alloc, S.s_stats);
    if (stats == NULL)
        return NULL;
    PyObject *hot = PyObject_GetAttr(
        stats, SLOT(pool, pool, P_IS_SMALL) == Py_True ? S.s_small_pool : S.s_large_pool);
    Py_DECREF(stats);
    return hot;
}

/* round_size without roundup_power2_divisions: -1 when the divisions apply (Python rounds). */
static long long rounded(PyObject *cfg, long long size) {
    if (size < K_MIN_BLOCK_SIZE)
        return K_MIN_BLOCK_SIZE;
    PyObject *divisions = PyObject_GetAttr(cfg, S.s_divisions);
    if (divisions == NULL) {
        PyErr_Clear();
        return -1;
    }
    long long result = -1;
    if (PyList_CheckExact(divisions) && PyList_GET_SIZE(divisions) > 0) {
        int log_size = 63 - __builtin_clzll((unsigned long long)size);
        Py_ssize_t index = log_size - 20 > 0 ? log_size - 20 : 0;
        if (index > PyList_GET_SIZE(divisions) - 1)
            index = PyList_GET_SIZE(divisions) - 1;
        long d = PyLong_AsLong(PyList_GET_ITEM(divisions, index));
        if (d == -1 && PyErr_Occurred())
            PyErr_Clear();
        else if (!(d > 1 && size > K_MIN_BLOCK_SIZE * d))
            result = K_MIN_BLOCK_SIZE * ((size + K_MIN_BLOCK_SIZE - 1) / K_MIN_BLOCK_SIZE);
    }
    Py_DECREF(divisions);
    return result;
}

/* --- malloc ---------------------------------------------------------------------------------- */

/* A Block as Block.__init__(device, stream, size, pool, ptr) makes it. */
static PyObject *new_block(PyObject *device, PyObject *stream, long long size, PyObject *pool,
                           PyObject *ptr) {
    PyObject *uses = PySet_New(NULL);
    PyObject *size_obj = PyLong_FromLongLong(size);
    PyObject *b = uses && size_obj ? S.block_type->tp_alloc(S.block_type, 0) : NULL;
    if (b == NULL) {
        Py_XDECREF(uses);
        Py_XDECREF(size_obj);
        return NULL;
    }
    SLOT(b, block, B_DEVICE) = Py_NewRef(device);
    SLOT(b, block, B_STREAM) = Py_NewRef(stream);
    SLOT(b, block, B_SIZE) = size_obj;
    SLOT(b, block, B_POOL) = Py_NewRef(pool);
    SLOT(b, block, B_PTR) = Py_NewRef(ptr);
    SLOT(b, block, B_STREAM_USES) = uses;
    SLOT(b, block, B_REQUESTED_SIZE) = PyLong_FromLong(0);
    SLOT(b, block, B_ALLOCATED) = Py_NewRef(Py_False);
    SLOT(b, block, B_MAPPED) = Py_NewRef(Py_True);
    SLOT(b, block, B_PREV) = Py_NewRef(Py_None);
    SLOT(b, block, B_NEXT) = Py_NewRef(Py_None);
    SLOT(b, block, B_EVENT_COUNT) = PyLong_FromLong(0);
    SLOT(b, block, B_GC_COUNT_BASE) = PyLong_FromLong(0);
    SLOT(b, block, B_CONTEXT_WHEN_ALLOCATED) = Py_NewRef(Py_None);
    SLOT(b, block, B_CONTEXT_WHEN_SEGMENT_ALLOCATED) = Py_NewRef(Py_None);
    SLOT(b, block, B_EXPANDABLE_SEGMENT) = Py_NewRef(Py_None);
    return b;
}

/* The allocation once the best-fit block is out of its pool: _alloc_found_block without a
 * context. Returns a new reference to the allocated block. */
static PyObject *alloc_found_block(PyObject *alloc, PyObject *pool, PyObject *found,
                                   long long size, long long orig_size, int split,
                                   unsigned long long max_split_size) {
    PyObject *hot = hot_stats(alloc, pool);
    if (hot == NULL)
        return NULL;
    int already_split = SLOT(found, block, B_PREV) != Py_None ||
                        SLOT(found, block, B_NEXT) != Py_None;
    PyObject *block;
    int err = 0;
    if (split) {
        PyObject *remaining = found;
        long long rptr = slot_ll(remaining, S.block[B_PTR], &err);
        long long rsize = slot_ll(remaining, S.block[B_SIZE], &err);
        if (err) {
            Py_DECREF(hot);
            return PyErr_Format(PyExc_TypeError, "a CUDA block's size is not an int");
        }
        block = new_block(SLOT(remaining, block, B_DEVICE), SLOT(remaining, block, B_STREAM),
                          size, pool, SLOT(remaining, block, B_PTR));
        if (block == NULL) {
            Py_DECREF(hot);
            return NULL;
        }
        /* expandable_segment is None on both (plain_state) */
        PyObject *prev = SLOT(remaining, block, B_PREV);
        SET(block, block, B_PREV, Py_NewRef(prev));
        if (prev != Py_None)
            SET(prev, block, B_NEXT, Py_NewRef(block));
        SET(block, block, B_NEXT, Py_NewRef(remaining));
        SET(remaining, block, B_PREV, Py_NewRef(block));
        if (set_ll(remaining, S.block[B_PTR], rptr + size) < 0 ||
            set_ll(remaining, S.block[B_SIZE], rsize - size) < 0)
            goto error;
        /* pool.insert_into_blocks(remaining) */
        SET(remaining, block, B_GC_COUNT_BASE,
            Py_NewRef(SLOT(pool, pool, P_GET_FREE_BLOCKS_CALL_COUNT)));
        if (sorted_add(SLOT(pool, pool, P_BLOCKS), remaining) < 0)
            goto error;
        if (already_split) {
            if (stats_move(hot, H_INACTIVE_SPLIT_BYTES, size, 0) < 0)
                goto error;
        } else if (stats_move(hot, H_INACTIVE_SPLIT_BYTES, rsize - size, 1) < 0 ||
                   stats_move(hot, H_INACTIVE_SPLIT, 1, 1) < 0)
            goto error;
    } else {
        block = Py_NewRef(found);
        long long whole = slot_ll(found, S.block[B_SIZE], &err); /* more than size */
        if (err) {
            PyErr_SetString(PyExc_TypeError, "a CUDA block's size is not an int");
            goto error;
        }
        if (already_split && (stats_move(hot, H_INACTIVE_SPLIT_BYTES, whole, 0) < 0 ||
                              stats_move(hot, H_INACTIVE_SPLIT, 1, 0) < 0))
            goto error;
    }
    long long bsize = slot_ll(block, S.block[B_SIZE], &err);
    if (err) {
        PyErr_SetString(PyExc_TypeError, "a CUDA block's size is not an int");
        goto error;
    }
    SET(block, block, B_ALLOCATED, Py_NewRef(Py_True));
    if (set_ll(block, S.block[B_REQUESTED_SIZE], orig_size) < 0)
        goto error;
    SET(block, block, B_CONTEXT_WHEN_ALLOCATED, Py_NewRef(Py_None));
    PyObject *active = PyObject_GetAttr(alloc, S.s_active_blocks);
    if (active == NULL)
        goto error;
    int r = PySet_Add(active, block);
    Py_DECREF(active);
    if (r < 0 || stats_move(hot, H_ALLOCATION, 1, 1) < 0 ||
        stats_move(hot, H_ALLOCATED_BYTES, bsize, 1) < 0 ||
        stats_move(hot, H_ACTIVE, 1, 1) < 0 || stats_move(hot, H_ACTIVE_BYTES, bsize, 1) < 0 ||
        stats_move(hot, H_REQUESTED_BYTES, orig_size, 1) < 0)
        goto error;
    if ((unsigned long long)bsize >= max_split_size && oversize_move(alloc, 1) < 0)
        goto error;
    Py_DECREF(hot);
    return block;
error:
    Py_DECREF(hot);
    Py_DECREF(block);
    return NULL;
}

/* malloc(allocator, orig_size, stream, cfg): the allocated Block, or None when the call is not
 * the common case (nothing was changed; the Python method runs). */
static PyObject *fast_malloc(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 4 || S.block_type == NULL)
        return PyErr_Format(PyExc_TypeError, "malloc(allocator, orig_size, stream, cfg)");
    PyObject *alloc = args[0], *size_obj = args[1], *stream = args[2], *cfg = args[3];
    if (!PyLong_CheckExact(size_obj) || !PyLong_CheckExact(stream))
        Py_RETURN_NONE;
    long long orig_size = PyLong_AsLongLong(size_obj);
    long long stream_v = PyLong_AsLongLong(stream);
    if ((orig_size == -1 || stream_v == -1) && PyErr_Occurred()) {
        PyErr_Clear();
        Py_RETURN_NONE;
    }
    int plain = plain_state(alloc, cfg);
    if (plain <= 0)
        return plain < 0 ? NULL : Py_NewRef(Py_None);
    long long size = rounded(cfg, orig_size);
    if (size < 0)
        Py_RETURN_NONE;
    int err = 0;
    unsigned long long max_split = attr_ull(cfg, S.s_max_split_size, &err);
    unsigned long long max_non_split = attr_ull(cfg, S.s_max_non_split_rounding_size, &err);
    if (err)
        return NULL;
    PyObject *pool = PyObject_GetAttr(alloc, size <= K_SMALL_SIZE ? S.s_small_blocks
                                                                  : S.s_large_blocks);
    if (pool == NULL)
        return NULL;
    /* _get_free_block: the best fit among this stream's blocks */
    PyObject *set = SLOT(pool, pool, P_BLOCKS);
    PyObject *keys = SLOT(set, sorted, SB_KEYS), *blocks = SLOT(set, sorted, SB_BLOCKS);
    Py_ssize_t i = lower_bound(keys, stream_v, size, 0);
    PyObject *b = i >= 0 && i < PyList_GET_SIZE(blocks) ? PyList_GET_ITEM(blocks, i) : NULL;
    long long bsize = b ? slot_ll(b, S.block[B_SIZE], &err) : 0;
    if (b == NULL || err || slot_ll(b, S.block[B_STREAM], &err) != stream_v || err ||
        SLOT(b, block, B_EXPANDABLE_SEGMENT) != Py_None ||
        ((unsigned long long)size < max_split && (unsigned long long)bsize >= max_split) ||
        ((unsigned long long)size >= max_split &&
         (unsigned long long)bsize >= (unsigned long long)size + max_non_split)) {
        Py_DECREF(pool);
        Py_RETURN_NONE;
    }
    Py_INCREF(b);
    int gc = begin_update();
    PyObject *block = NULL;
    if (PyList_SetSlice(keys, i, i + 1, NULL) == 0 &&
        PyList_SetSlice(blocks, i, i + 1, NULL) == 0) {
        long long remaining = bsize - size;
        int split = SLOT(pool, pool, P_IS_SMALL) == Py_True
                        ? remaining >= K_MIN_BLOCK_SIZE
                        : (unsigned long long)size < max_split && remaining > K_SMALL_SIZE;
        block = alloc_found_block(alloc, pool, b, size, orig_size, split, max_split);
    }
    end_update(gc);
    Py_DECREF(b);
    Py_DECREF(pool);
    return block;
}

/* --- free ------------------------------------------------------------------------------------ */

/* _try_merge_blocks(dst, src, pool) for blocks of ordinary segments: the bytes merged, 0 when
 * src cannot merge, -1 on an error. */
static long long try_merge(PyObject *pool, PyObject *dst, PyObject *src) {
    if (src == Py_None || SLOT(src, block, B_ALLOCATED) != Py_False ||
        SLOT(src, block, B_MAPPED) != SLOT(dst, block, B_MAPPED) ||
        PySet_GET_SIZE(SLOT(src, block, B_STREAM_USES)) != 0)
        return 0;
    int err = 0;
    if (slot_ll(src, S.block[B_EVENT_COUNT], &err) != 0 || err)
        return 0;
    long long src_size = slot_ll(src, S.block[B_SIZE], &err);
    long long dst_size = slot_ll(dst, S.block[B_SIZE], &err);
    if (err)
        return PyErr_SetString(PyExc_TypeError, "a CUDA block's size is not an int"), -1;
    if (sorted_discard(SLOT(pool, pool, P_BLOCKS), src) < 0)
        return -1;
    if (SLOT(dst, block, B_PREV) == src) { /* [src dst] */
        SET(dst, block, B_PTR, Py_NewRef(SLOT(src, block, B_PTR)));
        PyObject *prev = SLOT(src, block, B_PREV);
        SET(dst, block, B_PREV, Py_NewRef(prev));
        if (prev != Py_None)
            SET(prev, block, B_NEXT, Py_NewRef(dst));
        SET(dst, block, B_CONTEXT_WHEN_SEGMENT_ALLOCATED,
            Py_NewRef(SLOT(src, block, B_CONTEXT_WHEN_SEGMENT_ALLOCATED)));
    } else { /* [dst src] */
        PyObject *next = SLOT(src, block, B_NEXT);
        SET(dst, block, B_NEXT, Py_NewRef(next));
        if (next != Py_None)
            SET(next, block, B_PREV, Py_NewRef(dst));
    }
    if (set_ll(dst, S.block[B_SIZE], dst_size + src_size) < 0)
        return -1;
    return src_size;
}

/* free(allocator, block, cfg): True when the block was freed here, False when the call is not
 * the common case (nothing was changed; the Python method runs). */
static PyObject *fast_free(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 3 || S.block_type == NULL)
        return PyErr_Format(PyExc_TypeError, "free(allocator, block, cfg)");
    PyObject *alloc = args[0], *block = args[1], *cfg = args[2];
    if (!Py_IS_TYPE(block, S.block_type) || SLOT(block, block, B_ALLOCATED) != Py_True ||
        SLOT(block, block, B_EXPANDABLE_SEGMENT) != Py_None ||
        !PySet_CheckExact(SLOT(block, block, B_STREAM_USES)) ||
        PySet_GET_SIZE(SLOT(block, block, B_STREAM_USES)) != 0)
        Py_RETURN_FALSE;
    int plain = plain_state(alloc, cfg);
    if (plain <= 0)
        return plain < 0 ? NULL : Py_NewRef(Py_False);
    int err = 0;
    long long size = slot_ll(block, S.block[B_SIZE], &err);
    long long requested = slot_ll(block, S.block[B_REQUESTED_SIZE], &err);
    long long events = slot_ll(block, S.block[B_EVENT_COUNT], &err);
    unsigned long long max_split = attr_ull(cfg, S.s_max_split_size, &err);
    if (err || events != 0) {
        if (PyErr_Occurred())
            return NULL;
        Py_RETURN_FALSE;
    }
    PyObject *pool = SLOT(block, block, B_POOL);
    PyObject *hot = hot_stats(alloc, pool);
    if (hot == NULL)
        return NULL;
    Py_INCREF(block);
    Py_INCREF(pool);
    PyObject *neighbours[2] = {NULL, NULL}; /* held until end_update: a merged one may die */
    int ok = 0, gc = begin_update();
    /* free(): no longer allocated */
    SET(block, block, B_ALLOCATED, Py_NewRef(Py_False));
    if (stats_move(hot, H_ALLOCATION, 1, 0) < 0 || stats_move(hot, H_ALLOCATED_BYTES, size, 0) < 0)
        goto done;
    if ((unsigned long long)size >= max_split && oversize_move(alloc, 0) < 0)
        goto done;
    /* _free_block(block, None) */
    long long net_blocks = 0, net_size = 0;
    for (int side = 0; side < 2; side++) {
        PyObject *candidate = neighbours[side] =
            Py_NewRef(SLOT(block, block, side == 0 ? B_PREV : B_NEXT));
        long long subsumed = try_merge(pool, block, candidate);
        if (subsumed < 0)
            goto done;
        if (subsumed > 0) {
            net_blocks -= 1;
            net_size -= subsumed;
        }
    }
    PyObject *active = PyObject_GetAttr(alloc, S.s_active_blocks);
    if (active == NULL)
        goto done;
    int r = PySet_Discard(active, block);
    Py_DECREF(active);
    if (r < 0)
        goto done;
    SET(block, block, B_GC_COUNT_BASE, Py_NewRef(SLOT(pool, pool, P_GET_FREE_BLOCKS_CALL_COUNT)));
    r = sorted_add(SLOT(pool, pool, P_BLOCKS), block);
    if (r <= 0) {
        if (r == 0)
            PyErr_SetString(PyExc_AssertionError, "a freed CUDA block is already in its pool");
        goto done;
    }
    if (SLOT(block, block, B_PREV) != Py_None || SLOT(block, block, B_NEXT) != Py_None) {
        net_blocks += 1;
        net_size += slot_ll(block, S.block[B_SIZE], &err);
    }
    if ((net_blocks > 0 && stats_move(hot, H_INACTIVE_SPLIT, net_blocks, 1) < 0) ||
        (net_blocks < 0 && stats_move(hot, H_INACTIVE_SPLIT, -net_blocks, 0) < 0) ||
        (net_size > 0 && stats_move(hot, H_INACTIVE_SPLIT_BYTES, net_size, 1) < 0) ||
        (net_size < 0 && stats_move(hot, H_INACTIVE_SPLIT_BYTES, -net_size, 0) < 0) ||
        stats_move(hot, H_ACTIVE, 1, 0) < 0 || stats_move(hot, H_ACTIVE_BYTES, size, 0) < 0 ||
        stats_move(hot, H_REQUESTED_BYTES, requested, 0) < 0)
        goto done;
    ok = 1;
done:
    end_update(gc);
    Py_XDECREF(neighbours[0]);
    Py_XDECREF(neighbours[1]);
    Py_DECREF(hot);
    Py_DECREF(pool);
    Py_DECREF(block);
    if (!ok)
        return NULL;
    Py_RETURN_TRUE;
}

/* --- configuration --------------------------------------------------------------------------- */

/* out[i]: the byte offset of slot names[i], from ``table`` (slot name -> offset, as
 * ember_tensor_impl.slot_offset reads them from the member descriptors). */
static int offsets(PyObject *table, const char **names, int n, Py_ssize_t *out) {
    if (!PyDict_Check(table)) {
        PyErr_SetString(PyExc_TypeError, "configure: slot offsets must be a dict");
        return -1;
    }
    for (int i = 0; i < n; i++) {
        PyObject *v = PyDict_GetItemString(table, names[i]);
        if (v == NULL) {
            PyErr_Format(PyExc_TypeError, "configure: no slot offset for %s", names[i]);
            return -1;
        }
        out[i] = PyLong_AsSsize_t(v);
        if (out[i] == -1 && PyErr_Occurred())
            return -1;
    }
    return 0;
}

/* configure(Block, {slot: offset} of Block, Stat, _SortedBlocks, BlockPool, _PoolStats) */
static PyObject *configure(PyObject *self, PyObject *args) {
    PyTypeObject *block;
    PyObject *block_t, *stat_t, *sorted_t, *pool_t, *hot_t;
    if (!PyArg_ParseTuple(args, "O!OOOOO", &PyType_Type, &block, &block_t, &stat_t, &sorted_t,
                          &pool_t, &hot_t))
        return NULL;
    if (offsets(block_t, block_slots, B_NSLOTS, S.block) < 0 ||
        offsets(stat_t, stat_slots, S_NSLOTS, S.stat) < 0 ||
        offsets(sorted_t, sorted_slots, SB_NSLOTS, S.sorted) < 0 ||
        offsets(pool_t, pool_slots, P_NSLOTS, S.pool) < 0 ||
        offsets(hot_t, hot_slots, H_NSLOTS, S.hot) < 0)
        return NULL;
    Py_XSETREF(S.block_type, (PyTypeObject *)Py_NewRef(block));
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"configure", configure, METH_VARARGS,
     "configure(Block, and the {slot: offset} tables of Block, Stat, _SortedBlocks, BlockPool, "
     "_PoolStats)."},
    {"malloc", (PyCFunction)(void (*)(void))fast_malloc, METH_FASTCALL,
     "malloc(allocator, orig_size, stream, cfg): a Block, or None: the Python method decides."},
    {"free", (PyCFunction)(void (*)(void))fast_free, METH_FASTCALL,
     "free(allocator, block, cfg): True when freed, False: the Python method decides."},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "ember_caching_allocator",
                                    "The CUDA caching allocator's common case in C", -1, methods};

PyMODINIT_FUNC PyInit_ember_caching_allocator(void) {
#define NAME(field, text)                                                                      \
    if ((S.field = PyUnicode_InternFromString(text)) == NULL)                                  \
        return NULL;
    NAME(s_busy, "_busy")
    NAME(s_record_context, "record_context")
    NAME(s_record_history, "record_history")
    NAME(s_trace_trackers, "trace_trackers")
    NAME(s_captures_underway, "captures_underway")
    NAME(s_cuda_events, "cuda_events")
    NAME(s_deferred_events, "needs_events_deferred_until_no_capture")
    NAME(s_set_fraction, "set_fraction")
    NAME(s_small_blocks, "small_blocks")
    NAME(s_large_blocks, "large_blocks")
    NAME(s_active_blocks, "active_blocks")
    NAME(s_stats, "stats")
    NAME(s_small_pool, "small_pool")
    NAME(s_large_pool, "large_pool")
    NAME(s_oversize_allocations, "oversize_allocations")
    NAME(s_expandable_segments, "expandable_segments")
    NAME(s_gc_threshold, "garbage_collection_threshold")
    NAME(s_divisions, "roundup_power2_divisions")
    NAME(s_max_split_size, "max_split_size")
    NAME(s_max_non_split_rounding_size, "max_non_split_rounding_size")
#undef NAME
    return PyModule_Create(&module);
}
