"""IEEE subnormals in the kernels CuPy compiles for ember, as in PyTorch's.

CuPy appends ``-ftz=true`` to the options of every kernel it compiles (``cupy/cuda/compiler.py``,
``_compile_with_cache_cuda``, CuPy 13 and 14; the caller's ``-ftz=false`` comes before it and
loses), so its ufuncs, reductions and ember's raw kernels flush float32 subnormal operands and
results to zero: ``sqrt(1e-40)`` gives 0, ``sign(1e-40)`` 0, ``log(1e-40)`` -inf,
``atan2(1e-40, 0)`` 0. PyTorch's kernels are built with nvcc's default, ``-ftz=false``, and keep
them. (H200, CuPy 14.2: ``benchmarks/gpu_special_values_check.py``.)

:func:`keep_subnormals` wraps three functions of that module. Every compile asks for
``-ftz=false`` (``_compile_module_with_cache``, where CuPy's ufuncs, reductions, ``RawModule``
and ``ElementwiseKernel`` all compile), which also gives the on-disk cache a key of its own: a
flushing CuPy in another process never loads these binaries, nor ember its. The two compilers
then leave out the ``-ftz=true`` appended after it. A compile that does not ask (CuPy's FFT
callbacks call ``_compile_with_cache_cuda`` directly) flushes as before, and so does a kernel
CuPy compiled in this process before ember's GPU runtime started (CuPy keeps them in memory).
"""
import functools

KEEP = "-ftz=false"
_FLUSH = "-ftz=true"
_COMPILERS = ("_compile_using_nvrtc_no_warning", "compile_using_nvcc")


def keep_subnormals(compiler):
    """Make CuPy's compiler module ``compiler`` (``cupy.cuda.compiler``) keep subnormals (module
    docstring). Returns whether it does: False for a CuPy whose compiler has other functions."""
    if getattr(compiler, "_ember_keeps_subnormals", False):
        return True
    if not all(callable(getattr(compiler, name, None))
               for name in ("_compile_module_with_cache",) + _COMPILERS):
        return False
    compiler._compile_module_with_cache = _asking(compiler._compile_module_with_cache)
    for name in _COMPILERS:
        setattr(compiler, name, _not_flushing(getattr(compiler, name)))
    compiler._ember_keeps_subnormals = True
    return True


def _asking(compile_module):
    @functools.wraps(compile_module)
    def call(source, options=(), *args, **kwargs):
        options = tuple(options)
        return compile_module(source, options if KEEP in options else options + (KEEP,),
                              *args, **kwargs)
    return call


def _not_flushing(compile):
    @functools.wraps(compile)
    def call(source, options=(), *args, **kwargs):
        if KEEP in options:
            options = tuple(o for o in options if o != _FLUSH)
        return compile(source, options, *args, **kwargs)
    return call
