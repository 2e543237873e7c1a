"""OpenBLAS's parallel products on the OpenMP thread pool of the generated kernels: one pool.

PyTorch runs its BLAS and its kernels on one OpenMP pool. ember's products go through NumPy's
OpenBLAS, which keeps a pool of its own pthreads, while the generated C kernels (eager and
compiled) run on libgomp's. Two pools on the same cores fight: a thread of one spins or yields
for a while after its work, on the core the other pool's next region needs, and a region waits
for its slowest thread. Measured on 2 cores (GPT step of ``benchmarks/gpt.py``, ember alone):
37 ms with the products on one thread, 83 ms with them on OpenBLAS's two, 28 ms with them on
libgomp's two.

OpenBLAS (0.3.27 and later) lets its caller run the jobs of a parallel call:
``openblas_set_threads_callback_function`` takes a function that receives the jobs and must run
``dojob(i, job i, data)`` for each, all before it returns. Ours runs them as one OpenMP loop, one
job per thread; the jobs of a GEMM wait for each other, so where OpenMP cannot give that many
threads (a call from inside a parallel region) each job gets a new thread. OpenBLAS's per-thread
buffers are indexed by job, so two parallel products must not run at once: a mutex orders them
(OpenBLAS's own server queues them too). A process forked from this one gives the calls back to
OpenBLAS's own pool, since libgomp's does not survive ``fork``.

:func:`install` is called by ``codecache`` right after it first loads a module (built with
OpenMP where the compiler has it): before that there is no second pool to fight with.
"""
import ctypes
import logging
import threading

log = logging.getLogger(__name__)

MODULE = "ember_openblas_threads"

SOURCE = r"""
/* OpenBLAS's thread callback (openblas_set_threads_callback_function): run the jobs of one
 * parallel BLAS call on the OpenMP pool. See ember/_inductor/blas_threads.py. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <omp.h>
#include <pthread.h>
#include <stddef.h>

typedef void (*dojob_fn)(int thread_num, void *jobdata, int dojob_data);
typedef void (*threads_callback)(int sync, dojob_fn dojob, int numjobs, size_t jobdata_elsize,
                                 void *jobdata, int dojob_data);
typedef void (*set_callback_fn)(threads_callback callback);

static pthread_mutex_t order = PTHREAD_MUTEX_INITIALIZER;
static set_callback_fn set_callback = NULL;
static long long parallel_calls = 0;

struct job { dojob_fn dojob; int i; void *data; int dojob_data; };

static void *run_one(void *arg) {
    struct job *j = (struct job *)arg;
    j->dojob(j->i, j->data, j->dojob_data);
    return NULL;
}

/* The jobs of a parallel GEMM wait for each other's packed panels: they must all run at
 * once. Where OpenMP cannot give a team of numjobs threads (a call from inside a parallel
 * region, a thread limit, dynamic teams), each job gets a thread of its own. */
static void run_on_new_threads(dojob_fn dojob, int numjobs, size_t elsize, char *jobs,
                               int dojob_data) {
    pthread_t threads[numjobs];
    struct job args[numjobs];
    int started[numjobs];
    for (int i = 1; i < numjobs; i++) {
        args[i] = (struct job){dojob, i, jobs + i * elsize, dojob_data};
        started[i] = pthread_create(&threads[i], NULL, run_one, &args[i]) == 0;
        if (!started[i])
            run_one(&args[i]);  /* no thread to be had: this job's partners are running */
    }
    dojob(0, jobs, dojob_data);
    for (int i = 1; i < numjobs; i++)
        if (started[i])
            pthread_join(threads[i], NULL);
}

static void run_jobs(int sync, dojob_fn dojob, int numjobs, size_t jobdata_elsize, void *jobdata,
                     int dojob_data) {
    (void)sync;  /* always synchronous: every job has finished when this returns */
    char *jobs = (char *)jobdata;
    /* OpenBLAS indexes its per-thread buffers by job: one parallel call at a time */
    pthread_mutex_lock(&order);
    if (numjobs < 2) {
        for (int i = 0; i < numjobs; i++)
            dojob(i, jobs + i * jobdata_elsize, dojob_data);
    } else if (omp_in_parallel() || omp_get_dynamic() || omp_get_thread_limit() < numjobs) {
        run_on_new_threads(dojob, numjobs, jobdata_elsize, jobs, dojob_data);
    } else {
        parallel_calls++;
        #pragma omp parallel for num_threads(numjobs) schedule(static, 1)
        for (int i = 0; i < numjobs; i++)
            dojob(i, jobs + i * jobdata_elsize, dojob_data);
    }
    pthread_mutex_unlock(&order);
}

/* libgomp's pool does not survive fork: a forked child gives the calls back to OpenBLAS's own
 * pool, which OpenBLAS starts again there. */
static void after_fork_in_child(void) {
    pthread_mutex_init(&order, NULL);  /* a thread of the parent may have held it */
    if (set_callback)
        set_callback(NULL);
}

static PyObject *install(PyObject *self, PyObject *setter_address) {
    void *address = PyLong_AsVoidPtr(setter_address);
    if (address == NULL)
        return PyErr_Occurred() ? NULL : PyErr_Format(PyExc_ValueError, "null setter");
    set_callback = (set_callback_fn)address;
    set_callback(run_jobs);
    Py_RETURN_NONE;
}

static PyObject *callback_address(PyObject *self, PyObject *unused) {
    return PyLong_FromVoidPtr((void *)run_jobs);
}

static PyObject *parallel_call_count(PyObject *self, PyObject *unused) {
    return PyLong_FromLongLong(parallel_calls);
}

static PyMethodDef methods[] = {
    {"install", install, METH_O, "hand OpenBLAS's parallel calls to run_jobs, given the "
                                 "address of openblas_set_threads_callback_function"},
    {"callback_address", callback_address, METH_NOARGS, "the address of run_jobs"},
    {"parallel_call_count", parallel_call_count, METH_NOARGS,
     "parallel BLAS calls run on the OpenMP pool so far"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "ember_openblas_threads", NULL, -1,
                                    methods};

PyMODINIT_FUNC PyInit_ember_openblas_threads(void) {
    pthread_atfork(NULL, NULL, after_fork_in_child);
    return PyModule_Create(&module);
}
"""

_lock = threading.Lock()
_state = {"tried": False, "module": None}


def install():
    """Hand OpenBLAS's parallel calls to the OpenMP pool, once per process. Returns the loaded
    callback module, or None where OpenBLAS has no callback hook (an older or another BLAS), the
    compiler has no OpenMP, or the build failed (then OpenBLAS keeps its own pool)."""
    if _state["tried"]:  # (also when the build below loads the callback's own module)
        return _state["module"]
    with _lock:
        if _state["tried"]:
            return _state["module"]
        _state["tried"] = True
        from ember._core import blas
        from ember._inductor import codecache
        from ember._inductor.exc import CppCompileError, InvalidCxxCompiler
        setter = blas.openblas_function("set_threads_callback_function")
        if setter is None:
            log.info("OpenBLAS has no thread callback: it keeps its own thread pool")
            return None
        try:
            if not codecache.compiler_features().get("openmp"):
                return None
            module = codecache.CppCodeCache.load(SOURCE, MODULE)
        except (InvalidCxxCompiler, CppCompileError) as e:  # products keep OpenBLAS's pool
            log.info("OpenBLAS keeps its own thread pool: %s", e)
            return None
        module.install(ctypes.cast(setter, ctypes.c_void_p).value)
        _state["module"] = module
        log.info("OpenBLAS runs its parallel calls on the OpenMP pool")
        return module
