"""The per-code-object cache and what happens on a miss (PyTorch's ``convert_frame.py``).

A :class:`FrameState` belongs to one code object (and one backend; a compiled module's
``_call_impl`` gets its own): a list of cache entries ``(guard, residual)`` and ONE generated
dispatch function ``dispatch(*frame_args, ___closure)`` that tries the entries in order and
calls :meth:`FrameState.miss` when none matches. A miss interprets the code symbolically
(restarting when a graph break is found inside an inlined call), compiles the guard function
and the residual function, and appends the entry; after ``config.recompile_limit`` entries
the code runs eagerly with PyTorch's warning. Python versions other than 3.11/3.12, and
internal errors of the interpreter, run eagerly with a one-time warning.

The compiler's stance (``eval_frame._stance``, set by ``torch.compiler.set_stance``) is read
here: on a miss (eager_on_recompile, fail_on_recompile, eager_then_compile,
aot_eager_then_compile), and on every call while ``_stance_flags.special`` is set (force_eager,
a forced backend, skip_guard_eval_unsafe's "differentiating" guards).
"""
import dis
import functools
import logging
import sys
import textwrap
import types
import warnings

from .._core.codegen import compile_source
from . import config
from .exc import RecompileError, RestartAnalysis, SkipFrame, Unsupported, UserErrorDuringTrace
from .guards import build_guard_fn, diff_key, failure_reason, filter_guards
from .utils import compilation_time_metrics, dynamo_timed
from .source import GetItemSource, LocalSource, local_expr

__all__ = ["FrameState", "get_frame_state", "run_cached"]

log = logging.getLogger("ember._dynamo.convert_frame")
recompiles_log = logging.getLogger("ember._dynamo.__recompiles")
guards_log = logging.getLogger("ember._dynamo.__guards")
bytecode_log = logging.getLogger("ember._dynamo.__bytecode")
dynamo_log = logging.getLogger("ember._dynamo")

_states = {}       # (code, backend key, owner) -> FrameState
_warned = set()
_compiling = [0]   # > 0 while a capture runs (is_compiling, re-entrancy)


def _warn_once(key, msg):
    if key not in _warned:
        _warned.add(key)
        warnings.warn(msg, RuntimeWarning, stacklevel=3)


def get_frame_state(code, f_globals, compiler_fn, fullgraph, owner=None, root=None,
                    dynamic=None, guard_filter_fn=None):
    key = (code, id(compiler_fn), fullgraph, owner, dynamic, guard_filter_fn)
    st = _states.get(key)
    if st is None:
        st = _states[key] = FrameState(code, f_globals, compiler_fn, fullgraph, root, dynamic,
                                       owner, guard_filter_fn)
    return st


def run_cached(code, f_globals):
    """The dispatch function of ``torch._dynamo.run(fn)``: the cached entries of every capture
    of ``code`` are tried (each is guarded), and the frame runs eagerly when none matches."""
    def dispatch(*args):
        for st in list(_states.values()):
            if st.code is code:
                for g, r in st.entries:
                    if g(*args):
                        return r(*args)
        pos, kwonly = _eager_args(code, args[:-1])
        return _eager_function(code, f_globals, args[-1])(*pos, **kwonly)
    return dispatch


def _eager_function(code, f_globals, closure):
    return types.FunctionType(code, f_globals, code.co_name, None, closure)


def _eager_args(code, args):
    """The frame's arguments (one per parameter, ``*args`` and ``**kwargs`` as a tuple and a
    dict) as a call's positional and keyword arguments: (args, kwargs)."""
    pos = list(args[:code.co_argcount])
    i = code.co_argcount
    kwonly = dict(zip(code.co_varnames[i:i + code.co_kwonlyargcount],
                      args[i:i + code.co_kwonlyargcount]))
    i += code.co_kwonlyargcount
    if code.co_flags & 0x04:
        pos.extend(args[i])
        i += 1
    if code.co_flags & 0x08:
        kwonly.update(args[i])
    return pos, kwonly


def has_tensor_in_frame(code, f_globals, args):
    """PyTorch's test for the frames (other than the compiled function's own) a stance's
    recompile check applies to: the code reads the ember module (or one of its modules) as a
    global, or an argument holds a tensor or an nn.Module (through lists, tuples, dicts and
    named tuples)."""
    from .._tensor import Tensor
    from ..nn.modules.module import Module
    for name in code.co_names:
        obj = f_globals.get(name)
        if isinstance(obj, types.ModuleType) and (obj is sys.modules["ember"] or
                                                  obj.__name__.startswith("ember.")):
            return True
    seen = set()

    def has_tensor(obj):
        if id(obj) in seen:
            return False
        seen.add(id(obj))
        if isinstance(obj, (Tensor, Module)) or (type(obj) is type and issubclass(obj, Module)):
            return True
        if type(obj) in (list, tuple):
            return any(has_tensor(v) for v in obj)
        if type(obj) is dict:
            return any(has_tensor(v) for v in list(obj.values()))
        if isinstance(obj, tuple) and hasattr(obj, "_fields"):
            return any(has_tensor(getattr(obj, f)) for f in obj._fields)
        return False
    return any(has_tensor(a) for a in args)


def _library_dirs():
    import os
    import sysconfig
    paths = sysconfig.get_paths()
    dirs = {os.path.dirname(os.path.abspath(__file__)).rsplit(os.sep, 1)[0]}  # ember itself
    dirs.update(paths[k] for k in ("stdlib", "platstdlib", "purelib", "platlib") if k in paths)
    return tuple(os.path.join(os.path.realpath(d), "") for d in dirs)


_LIBRARY_DIRS = _library_dirs()


@functools.lru_cache(maxsize=None)
def _is_user_code(filename):
    """Not ember's, the standard library's or an installed package's: the functions a skipped
    frame's calls capture."""
    import os
    return not filename.startswith("<") and \
        not os.path.realpath(filename).startswith(_LIBRARY_DIRS)


def _has_hooks(m, mod):
    return bool(m._backward_hooks or m._backward_pre_hooks or m._forward_hooks or
                m._forward_pre_hooks or mod._global_backward_pre_hooks or
                mod._global_backward_hooks or mod._global_forward_hooks or
                mod._global_forward_pre_hooks)


def supported_python():
    """The bytecode versions the interpreter knows: CPython 3.11 and 3.12."""
    return sys.version_info[:2] in ((3, 11), (3, 12))


def reset():
    # compiled functions keep their FrameState (its dispatch is bound into them): each is
    # emptied in place, so they capture afresh, as PyTorch's reset makes them
    for st in _states.values():
        st.forget()
    _states.clear()
    _warned.clear()
    compilation_time_metrics.clear()


def arg_names(code):
    n = code.co_argcount + code.co_kwonlyargcount
    n += bool(code.co_flags & 0x04) + bool(code.co_flags & 0x08)
    return code.co_varnames[:n]


class FrameState:
    def __init__(self, code, f_globals, compiler_fn, fullgraph, root=None, dynamic=None,
                 owner=None, guard_filter_fn=None):
        self.code = code
        self.owner = owner
        self.guard_filter_fn = guard_filter_fn
        self.dynamic = dynamic  # ember.compile(dynamic=): None (automatic), True, False
        self.automatic = {}     # input source name -> sizes seen (None: a dim made dynamic)
        self.used_dynamic = False  # the capture under way made some input size symbolic
        self.static_only = False   # retrying a failed dynamic capture with static sizes
        self.f_globals = f_globals
        self.compiler_fn = compiler_fn
        self.fullgraph = fullgraph
        self.root = root or self
        self.entries = []
        self.all_graphs = []
        self.eager_forever = False
        self.skip_reason = None
        self.eager_code = None  # a skipped frame's code, its calls routed through callee()
        self.resumes = {}
        self.callees = {}
        self.argnames = arg_names(code)
        self.compile_id = len(_states)
        self._eager_fns = {}
        # skip_guard_eval_unsafe: the keys (guards.diff_key) of the guards that tell this
        # frame's entries apart — the non-parameter tensors' and those a recompile saw fail —
        # and the entries checked on those guards only (None: to be rebuilt)
        self.diff_keys = set()
        self._diff_entries = None
        self.examples_seen = 0  # calls eager_then_compile has run eagerly to learn sizes
        self.always_optimize = False  # the function given to ember.compile itself
        self.dispatch = self._make_dispatch()

    def forget(self):
        """Drop what the frame learned: its entries, graphs, sizes seen and decisions."""
        self.entries.clear()  # (the same list: the generated dispatch reads it)
        self.all_graphs.clear()
        self.automatic.clear()
        self.resumes.clear()
        self.callees.clear()
        self._eager_fns.clear()
        self.diff_keys.clear()
        self._diff_entries = None
        self.used_dynamic = self.static_only = self.eager_forever = False
        self.skip_reason = self.eager_code = None
        self.examples_seen = 0

    def _make_dispatch(self):
        from .eval_frame import _stance_flags
        params = ", ".join([*map(local_expr, self.argnames), "___closure"])
        src = (f"def ___dispatch_{self.code.co_name.strip('<>')}({params}):\n"
               f"    if ___stance.special:\n"
               f"        return ___special({params})\n"
               f"    for ___g, ___r in ___entries:\n"
               f"        if ___g({params}):\n"
               f"            return ___r({params})\n"
               f"    return ___miss({params})\n")
        ns = {"___entries": self.entries, "___miss": self.miss, "___stance": _stance_flags,
              "___special": self.dispatch_special}
        compile_source(src, f"<ember dynamo dispatch {self.code.co_name}:{self.compile_id}>", ns)
        return next(v for k, v in ns.items() if k.startswith("___dispatch_"))

    def dispatch_special(self, *args):
        """A call under a stance that changes how cached entries run."""
        from . import eval_frame
        from .backends.registry import lookup_backend
        stance = eval_frame._stance
        if stance.stance == "force_eager":
            return self.run_eager(args[:-1], args[-1])
        if stance.stance not in eval_frame.STANCES:
            raise RuntimeError(f"invalid torch.compile stance '{stance}'")
        if stance.backend is not None and self.root is self:
            # the frame's captures with the forced backend: a cache of their own
            other = get_frame_state(self.code, self.f_globals, lookup_backend(stance.backend),
                                    self.fullgraph, self.owner, dynamic=self.dynamic,
                                    guard_filter_fn=self.guard_filter_fn)
            if other is not self:
                return other.dispatch(*args)
        entries = self.entries
        if stance.skip_guard_eval_unsafe:
            entries = self.diff_entries()
        for g, r in entries:
            if g(*args):
                return r(*args)
        return self.miss(*args)

    def diff_entries(self):
        """The entries with guard functions over the differentiating guards only
        (PyTorch's diff guard managers): built again when an entry or a key is added."""
        if self._diff_entries is None or len(self._diff_entries) != len(self.entries):
            self._diff_entries = [
                (build_guard_fn(g.guard_set, self.argnames, self.f_globals,
                                f"{self.code.co_name}:{self.compile_id}/{i} diff",
                                [x for x in g.guards if diff_key(x) in self.diff_keys]), r)
                for i, (g, r) in enumerate(self.entries)]
        return self._diff_entries

    # -- eager ---------------------------------------------------------------------------------
    def run_eager(self, args, closure):
        hit = self._eager_fns.get(id(closure))
        if hit is None or hit[0] is not closure:
            hit = self._eager_fns[id(closure)] = (closure, _eager_function(
                self.eager_code or self.code, self.f_globals, closure))
        pos, kwonly = _eager_args(self.code, args)
        return hit[1](*pos, **kwonly)

    def callee(self, fn):
        """What a skipped frame (``eager_code``) calls for ``fn``: a function, method or
        module forward of user code runs through the capture cache of its code, as PyTorch's
        frame hook captures the frames a skipped frame calls; anything else as it is."""
        from . import eval_frame
        from ..nn.modules import module as _mod
        if eval_frame._state.disabled:
            return fn
        if isinstance(fn, types.FunctionType):
            return self._entry(fn) or fn
        if isinstance(fn, types.MethodType) and isinstance(fn.__func__, types.FunctionType):
            entry = self._entry(fn.__func__)
            return fn if entry is None else types.MethodType(entry, fn.__self__)
        if isinstance(fn, _mod.Module) and type(fn).__call__ is _mod.Module.__call__ and \
                type(fn)._call_impl is _mod.Module._call_impl and \
                not {"forward", "_compiled_call_impl"} & fn.__dict__.keys() and \
                not _has_hooks(fn, _mod):
            fwd = getattr(type(fn), "forward", None)
            if not isinstance(fwd, types.FunctionType) or self._entry(fwd, make=False) is None:
                return fn
            # each instance its own cache (as a compiled module's): the capture guards its
            # module, and a model's many layers would otherwise exhaust one recompile limit
            key = ("module", id(fn))
            hit = self.root.callees.get(key)
            if hit is None or hit[0] is not fn:
                from .eval_frame import _wrap_function
                hit = self.root.callees[key] = (fn, _wrap_function(
                    types.MethodType(fwd, fn), self.compiler_fn, False, dynamic=self.dynamic,
                    guard_filter_fn=self.guard_filter_fn))
            return hit[1]
        return fn

    def _map_call(self, fn, args):
        return (*reversed(args), self.callee(fn))

    def _entry(self, fn, make=True):
        """``fn`` run through the capture cache of its code, when it is user code that has
        one (``make=False``: only whether it has)."""
        from .eval_frame import _disabled_fns
        from .output_graph import _has_entry
        code = fn.__code__
        if fn in _disabled_fns or not _has_entry(code) or not _is_user_code(code.co_filename):
            return None
        if not make:
            return True
        return self.wrap_code(code, fn.__globals__, len(fn.__defaults__ or ()),
                              list(fn.__kwdefaults__ or ()))(fn)

    def _note_example(self, args):
        """Record the sizes of the tensors among the frame's arguments as a capture would
        (automatic dynamic shapes compares the next capture's sizes with them)."""
        from .._tensor import Tensor

        def note(src, v):
            if isinstance(v, Tensor):
                if config.automatic_dynamic_shapes and v._size:
                    self.automatic.setdefault(src.name(), list(v._size))
            elif type(v) in (list, tuple):
                for i, x in enumerate(v):
                    note(GetItemSource(src, i), x)
            elif type(v) is dict:
                for k, x in v.items():
                    if isinstance(k, (str, int)):
                        note(GetItemSource(src, k), x)
        for name, v in zip(self.argnames, args):
            note(LocalSource(name), v)
        self.examples_seen += 1

    def _stance_on_miss(self, stance, args, closure):
        """How a miss runs under a non-default stance: a function making the call's result,
        or None to capture as usual."""
        st = stance.stance
        if st == "eager_on_recompile":
            return lambda: self.run_eager(args, closure)
        if st == "fail_on_recompile" and (self.always_optimize or has_tensor_in_frame(
                self.code, self.f_globals, args)):
            msg = (f"Detected recompile when torch.compile stance is 'fail_on_recompile'. "
                   f"filename: '{self.code.co_filename}', function name: "
                   f"'{self.code.co_name}', line number: {self.code.co_firstlineno}")
            reasons = []
            for i, (g, _) in enumerate(self.entries):
                r = failure_reason(g, list(args) + [closure])
                if r is not None:
                    reasons.append(f"{self.compile_id}/{i}: {r}")
            if reasons:
                details = ("triggered by the following guard failure(s):\n" +
                           textwrap.indent("\n".join(reasons), "- "))
                msg += "\n" + textwrap.indent(details, "    ")
            raise RuntimeError(msg)
        if st in ("eager_then_compile", "aot_eager_then_compile") and \
                self.examples_seen == 0 and not self.entries:
            self._note_example(args)
            if st == "eager_then_compile":
                return lambda: self.run_eager(args, closure)
            from .backends.registry import lookup_backend
            other = get_frame_state(self.code, self.f_globals, lookup_backend("aot_eager"),
                                    self.fullgraph, self.owner, dynamic=self.dynamic,
                                    guard_filter_fn=self.guard_filter_fn)
            return lambda: other.dispatch(*args, closure)
        return None

    # -- a miss --------------------------------------------------------------------------------
    def miss(self, *args):
        from . import eval_frame
        closure = args[-1]
        args = args[:-1]
        if self.eager_forever or _compiling[0] or eval_frame._state.disabled or \
                eval_frame._state.run_only:
            return self.run_eager(args, closure)
        if eval_frame._stance.stance != "default":
            other_way = self._stance_on_miss(eval_frame._stance, args, closure)
            if other_way is not None:
                return other_way()
        if not supported_python():
            _warn_once("version", f"ember.compile: Python {sys.version_info[0]}."
                       f"{sys.version_info[1]} bytecode is not supported (3.11 and 3.12 are); "
                       f"running eagerly")
            self.eager_forever = True
            return self.run_eager(args, closure)
        reason = None
        if self.entries:
            reasons = []
            for i, (g, _) in enumerate(self.entries):
                frame = list(args) + [closure]
                r = failure_reason(g, frame)
                reasons.append(f"- {self.compile_id}/{i}: {r}")
                failed = g.first_failure(*frame)
                if failed >= 0 and diff_key(g.guards[failed]) not in self.diff_keys:
                    self.diff_keys.add(diff_key(g.guards[failed]))
                    self._diff_entries = None
            reason = reasons[-1][2:] if reasons else None
            msg = (f"Recompiling function {self.code.co_name} in {self.code.co_filename}:"
                   f"{self.code.co_firstlineno}\n    triggered by the following guard "
                   f"failure(s):\n" + "\n".join("    " + r for r in reasons))
            if recompiles_log.isEnabledFor(logging.DEBUG):
                recompiles_log.debug(msg)
            if config.error_on_recompile:
                raise RecompileError(msg)
            if len(self.entries) >= config.recompile_limit:
                log.warning(
                    "ember._dynamo hit config.%s (%s)\n   function: %s\n   last reason: %s\n"
                    'To log all recompilation reasons, use TORCH_LOGS="recompiles".\n'
                    "To diagnose recompilation issues, see %s", "recompile_limit",
                    config.recompile_limit,
                    f"'{self.code.co_name}' ({self.code.co_filename}:"
                    f"{self.code.co_firstlineno})", reason,
                    "https://pytorch.org/docs/main/torch.compiler_troubleshooting.html")
                self.eager_forever = True
                return self.run_eager(args, closure)
        try:
            entry = self.compile(args, closure)
        except UserErrorDuringTrace:
            # Run this call eagerly, cache nothing: the user's error is raised as in eager
            # (with their frames); if eager succeeds, the next call tries to capture again.
            return self.run_eager(args, closure)
        except SkipFrame as e:
            if self.fullgraph:  # PyTorch's: the skip is an Unsupported like any
                err = Unsupported(e.msg)
                err.add_user_stack(e.real_stack)
                raise err from None
            self.eager_forever = True
            self.skip_reason = e
            if e.compile_callees:
                from .resume_execution import route_calls
                self.eager_code = route_calls(self.code, self._map_call, self.callee)
                self._eager_fns.clear()
            dynamo_log.debug("skipping frame %s: %s", self.code.co_name, e)
            return self.run_eager(args, closure)
        except Unsupported as e:
            if self.fullgraph or e.error_on_graph_break:
                raise
            # Nowhere to break (not at a call or a jump): the frame runs eagerly, as PyTorch's
            # "skip frame".
            self.eager_forever = True
            self.skip_reason = e
            dynamo_log.debug("skipping frame %s: %s", self.code.co_name, e)
            return self.run_eager(args, closure)
        except Exception as e:  # noqa: BLE001 - never fail where eager works
            if not config.suppress_errors:
                raise
            from .exc import BackendCompilerFailed
            from ..fx.experimental.symbolic_shapes import ConstraintViolationError
            if isinstance(e, (BackendCompilerFailed, ConstraintViolationError)):
                raise
            _warn_once(("internal", self.code), f"ember.compile: internal error while "
                       f"capturing {self.code.co_name} ({type(e).__name__}: {e}); running "
                       f"eagerly")
            self.eager_forever = True
            return self.run_eager(args, closure)
        self.entries.append(entry)
        return entry[1](*args, closure)

    def compile(self, args, closure):
        """Capture one entry. A capture with symbolic sizes that fails (Dynamo cannot model
        something about them) is retried with every size static, so dynamic shapes never
        make a frame run eagerly that a specialised capture handles."""
        from .exc import BackendCompilerFailed
        from ..fx.experimental.symbolic_shapes import ConstraintViolationError
        self.used_dynamic = False
        try:
            return self._compile(args, closure)
        except (UserErrorDuringTrace, BackendCompilerFailed, ConstraintViolationError):
            raise  # (a mark_dynamic range the input breaks is the user's error, not Dynamo's)
        except Exception as e:  # noqa: BLE001 - retried static, then raised as before
            if not self.used_dynamic:
                raise
            dynamo_log.debug("capture of %s with dynamic shapes failed (%s: %s); "
                             "specialising", self.code.co_name, type(e).__name__, e)
            self.static_only = True
            try:
                return self._compile(args, closure)
            finally:
                self.static_only = False

    def _compile(self, args, closure):
        with dynamo_timed("_compile.compile_inner"):
            return self._compile_inner(args, closure)

    def _compile_inner(self, args, closure):
        from .output_graph import OutputGraph
        from .symbolic_convert import InstructionTranslator
        from . import eval_frame
        code = self.code
        label = f"{code.co_name}:{self.compile_id}/{len(self.entries)}"
        dynamo_log.info("Step 1: torchdynamo start tracing %s %s:%s", code.co_name,
                        code.co_filename, code.co_firstlineno)
        break_at = {}
        _compiling[0] += 1
        try:
            for attempt in range(32):
                output = OutputGraph(code, self.f_globals, self.compiler_fn, label, self)
                try:
                    with dynamo_timed(f"compile_attempt_{attempt}"):
                        tx = InstructionTranslator(code, self.f_globals, args, closure, output,
                                                   break_at, self.fullgraph)
                        with dynamo_timed("bytecode_tracing"):
                            tx.run()
                        if tx.residual is None:
                            output.finish_return(tx, tx.return_value)
                    break
                except RestartAnalysis:
                    continue
                finally:
                    output.restore_global_state()
            else:
                raise Unsupported("too many restarts of the analysis")
        finally:
            _compiling[0] -= 1
        dynamo_log.info("Step 1: torchdynamo done tracing %s (%s)", code.co_name,
                        "graph break" if output.break_reasons else "RETURN_VALUE")
        output.install_shape_guards()
        if self.guard_filter_fn is not None:
            output.guards.guards = filter_guards(output.guards.guards, self.guard_filter_fn,
                                                 self.argnames, list(args) + [closure],
                                                 self.f_globals)
        for g in output.guards.guards:
            if g.create_fn == "TENSOR_MATCH" and not g.obj.is_param:
                self.diff_keys.add(diff_key(g))
        with dynamo_timed("build_guards"):
            guard_fn = build_guard_fn(output.guards, self.argnames, self.f_globals, label)
        residual = self._build_residual(tx.residual, label)
        eval_frame._record_guards(output.guards.guards)
        if guards_log.isEnabledFor(logging.DEBUG):
            guards_log.debug("GUARDS %s:\n%s", label, guard_fn.source)
        if bytecode_log.isEnabledFor(logging.DEBUG):
            bytecode_log.debug("ORIGINAL BYTECODE %s %s line %s\n%s\nMODIFIED (residual "
                               "Python):\n%s", code.co_name, code.co_filename,
                               code.co_firstlineno, dis.Bytecode(code).dis(), residual.source)
        return guard_fn, residual

    def _build_residual(self, cg, label):
        ns = cg.ns
        from .source import iter_rest
        ns.update(___sys_modules=sys.modules, ___iter_rest=iter_rest, ___G=self.f_globals, ___setattr=setattr, ___getattr=getattr, ___iter=iter)
        params = ", ".join([*map(local_expr, self.argnames), "___closure"])
        body = "\n".join("    " + line for line in cg.lines) or "    return None"
        src = f"def ___residual({params}):\n{body}\n"
        compile_source(src, f"<ember dynamo residual {label}>", ns)
        fn = ns["___residual"]
        fn.source = src
        return fn

    # -- resume functions and callees ----------------------------------------------------------
    def resume_for(self, code, target, nstack, nulls, names):
        from .resume_execution import make_resume_code
        key = (code, target, nstack, nulls, names)
        hit = self.root.resumes.get(key)
        if hit is None:
            name = f"__resume_at_{target}_{len(self.root.resumes)}"
            rcode = make_resume_code(code, target, nstack, set(nulls), names, name)
            st = FrameState(rcode, self.f_globals, self.compiler_fn, self.fullgraph, self.root,
                            self.dynamic, guard_filter_fn=self.guard_filter_fn)
            hit = self.root.resumes[key] = st.dispatch
            hit.__resume_name__ = name
        return hit

    def wrap_code(self, code, f_globals, ndefaults, kwdefault_names):
        """The entry factory (``eval_frame._nested_entry_factory``) of ``code``, for residual
        code that calls a function of it made anew at each call (by the frame, or by its
        caller: a closure guarded on its code)."""
        from .eval_frame import _nested_entry_factory
        hit = self.root.callees.get(code)
        if hit is None:
            hit = self.root.callees[code] = _nested_entry_factory(
                code, f_globals, ndefaults, kwdefault_names, self.compiler_fn,
                dynamic=self.dynamic, guard_filter_fn=self.guard_filter_fn)
        return hit

    def wrap_callee(self, fn):
        from .eval_frame import _wrap_function
        hit = self.root.callees.get(fn)
        if hit is None:
            hit = self.root.callees[fn] = _wrap_function(fn, self.compiler_fn, False,
                                                         dynamic=self.dynamic,
                                                         guard_filter_fn=self.guard_filter_fn)
        return hit
