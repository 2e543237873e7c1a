"""The per-code-object cache and what happens on a miss (PyTorch's ``convert_frame.py``).

A :class:`FrameState` belongs to one code object (and one backend; a compiled module's
``_call_impl`` gets its own): a list of cache entries ``(guard, residual)`` and ONE generated
dispatch function ``dispatch(*frame_args, ___closure)`` that tries the entries in order and
calls :meth:`FrameState.miss` when none matches. A miss interprets the code symbolically
(restarting when a graph break is found inside an inlined call), compiles the guard function
and the residual function, and appends the entry; after ``config.recompile_limit`` entries
the code runs eagerly with PyTorch's warning. Python versions other than 3.11/3.12, and
internal errors of the interpreter, run eagerly with a one-time warning.
"""
import dis
import logging
import sys
import types
import warnings

from .._core.codegen import compile_source
from . import config
from .exc import RecompileError, RestartAnalysis, Unsupported, UserErrorDuringTrace
from .guards import build_guard_fn, failure_reason
from .source import local_expr

__all__ = ["FrameState", "get_frame_state"]

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
                    dynamic=None):
    key = (code, id(compiler_fn), fullgraph, owner, dynamic)
    st = _states.get(key)
    if st is None:
        st = _states[key] = FrameState(code, f_globals, compiler_fn, fullgraph, root, dynamic)
    return st


def supported_python():
    """The bytecode versions the interpreter knows: CPython 3.11 and 3.12."""
    return sys.version_info[:2] in ((3, 11), (3, 12))


def reset():
    _states.clear()
    _warned.clear()


def arg_names(code):
    n = code.co_argcount + code.co_kwonlyargcount
    n += bool(code.co_flags & 0x04) + bool(code.co_flags & 0x08)
    return code.co_varnames[:n]


class FrameState:
    def __init__(self, code, f_globals, compiler_fn, fullgraph, root=None, dynamic=None):
        self.code = code
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
        self.resumes = {}
        self.callees = {}
        self.argnames = arg_names(code)
        self.compile_id = len(_states)
        self._eager_fns = {}
        self.dispatch = self._make_dispatch()

    def _make_dispatch(self):
        params = ", ".join([*map(local_expr, self.argnames), "___closure"])
        src = (f"def ___dispatch_{self.code.co_name.strip('<>')}({params}):\n"
               f"    for ___g, ___r in ___entries:\n"
               f"        if ___g({params}):\n"
               f"            return ___r({params})\n"
               f"    return ___miss({params})\n")
        ns = {"___entries": self.entries, "___miss": self.miss}
        compile_source(src, f"<ember dynamo dispatch {self.code.co_name}:{self.compile_id}>", ns)
        return next(v for k, v in ns.items() if k.startswith("___dispatch_"))

    # -- eager ---------------------------------------------------------------------------------
    def run_eager(self, args, closure):
        hit = self._eager_fns.get(id(closure))
        if hit is None or hit[0] is not closure:
            hit = self._eager_fns[id(closure)] = (closure, types.FunctionType(
                self.code, self.f_globals, self.code.co_name, None, closure))
        fn = hit[1]
        code = self.code
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
        return fn(*pos, **kwonly)

    # -- a miss --------------------------------------------------------------------------------
    def miss(self, *args):
        from . import eval_frame
        closure = args[-1]
        args = args[:-1]
        if self.eager_forever or _compiling[0] or eval_frame._state.disabled:
            return self.run_eager(args, closure)
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
                r = failure_reason(g, list(args) + [closure])
                reasons.append(f"- {self.compile_id}/{i}: {r}")
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
        except Unsupported as e:
            if self.fullgraph:
                raise
            # Nowhere to break (not at a call or a jump): the frame runs eagerly, as PyTorch's
            # "skip frame".
            self.eager_forever = True
            self.skip_reason = e
            eval_frame._record_skip(e)
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
            for _ in range(32):
                output = OutputGraph(code, self.f_globals, self.compiler_fn, label, self)
                try:
                    tx = InstructionTranslator(code, self.f_globals, args, closure, output,
                                               break_at, self.fullgraph)
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
                            self.dynamic)
            hit = self.root.resumes[key] = st.dispatch
            hit.__resume_name__ = name
        return hit

    def wrap_callee(self, fn):
        from .eval_frame import _wrap_function
        hit = self.root.callees.get(fn)
        if hit is None:
            hit = self.root.callees[fn] = _wrap_function(fn, self.compiler_fn, False,
                                                         dynamic=self.dynamic)
        return hit
