"""Guards: the conditions under which a captured graph and its residual code may run again.

Every value the symbolic interpreter reads from the frame has a :class:`~.source.Source`; reading
it installs a guard on that source (tensor metadata, a constant's value, an object's identity, a
container's length or keys), and capture adds the global state it depends on (grad mode, the
dispatch key sets that autocast and inference mode change, the default dtype, deterministic
mode). :func:`build_guard_fn` turns one cache entry's guards into ONE generated Python function
(``<ember dynamo guards f:0>`` in tracebacks) taking the frame's arguments and its closure; the
hot path is a single call of it. On a miss, :func:`first_failure` says which guard failed, in
PyTorch's words, for ``TORCH_LOGS=recompiles``.

A capture's guards can be filtered before they are built (``ember.compile``'s
``options["guard_filter_fn"]``, given one :class:`GuardFilterEntry` per guard), and
``set_stance(skip_guard_eval_unsafe=True)`` checks only the guards :func:`diff_key` names.
"""
import builtins
import dataclasses
import re
import types
import typing

from .._core.api_name import as_ember
from .._core.codegen import compile_source
from .._dispatch import tls as _tls
from .source import local_expr

__all__ = ["Guard", "GuardSet", "GuardFilterEntry", "build_guard_fn", "filter_guards",
           "diff_key"]


class Guard:
    """One guard: ``code`` is its list of Python conditions over ``source.expr()``; the fields
    mirror PyTorch's ``Guard`` for ``explain``'s out_guards."""

    def __init__(self, source, create_fn, code, consts=(), obj=None):
        self.source = source
        self.create_fn = create_fn
        self.code = code
        self.consts = consts
        self.obj = obj

    @property
    def name(self):
        return self.source.name() if self.source is not None else ""

    @property
    def originating_source(self):
        return self.source

    @property
    def guard_types(self):
        return [self.create_fn]

    def create_fn_name(self):
        return self.create_fn

    def __repr__(self):
        src = self.source.guard_source if self.source is not None else "global"
        return (f"Name: {self.name!r}\n    Source: {src}\n    Create Function: {self.create_fn}\n"
                f"    Guard Types: [{self.create_fn!r}]\n    Code List: {self.code_list()!r}")

    def code_list(self):
        if isinstance(self.obj, _ShapeCond):
            return [self.obj.readable]
        name = self.name
        return [c.replace(E, name) for c in self.code]


# Where a guard's code reads its source's value; the generated function computes each source
# once, into a local, and substitutes it here.
E = "___E___"


class _ShapeCond:
    def __init__(self, readable):
        self.readable = readable


class _Const:
    def __init__(self, value):
        self.value = value


class GuardSet:
    """The guards of one capture, deduplicated; constants go into the guard's namespace."""

    def __init__(self):
        self.guards = []
        self._seen = set()
        self.namespace = {}

    def const(self, value):
        name = f"___c{len(self.namespace)}"
        self.namespace[name] = value
        return name

    def _add(self, key, source, create_fn, code, obj=None):
        if key in self._seen:
            return
        self._seen.add(key)
        self.guards.append(Guard(source, create_fn, code, obj=obj))

    # -- the kinds --------------------------------------------------------------------------
    def tensor_match(self, source, t, fake=None):
        """``fake``: the input's FakeTensor when some of its sizes are symbolic; those dims
        (and strides) are then checked by the ShapeEnv's guards (:meth:`shape_guard`), the
        static ones here."""
        e = E
        c = self.const((type(t), t._dtype, t._device, t._size, t._stride, t._requires_grad,
                        t._keyset))
        # the device is nearly always the same object: `is` first spares device.__eq__'s call
        code = [f"___type({e}) is {c}[0]", f"{e}._dtype is {c}[1]",
                f"({e}._device is {c}[2] or {e}._device == {c}[2])"]
        dynamic = ()
        if fake is None:
            code += [f"{e}._size == {c}[3]", f"{e}._stride == {c}[4]"]
        else:
            from .._core.symint import SymInt
            dynamic = {i for i, s in enumerate(fake._size) if isinstance(s, SymInt)}
            code.append(f"___len({e}._size) == {len(t._size)}")
            code += [f"{e}._size[{i}] == {s}" for i, s in enumerate(t._size)
                     if i not in dynamic]
            code += [f"{e}._stride[{i}] == {s}" for i, s in enumerate(fake._stride)
                     if not isinstance(s, SymInt)]
        code += [f"{e}._requires_grad is {c}[5]", f"{e}._keyset == {c}[6]"]
        # a snapshot of the metadata, not the tensor: the entry must not keep inputs alive
        from ..nn.parameter import Parameter
        snap = types.SimpleNamespace(_dtype=t._dtype, _device=t._device, _size=t._size,
                                     _stride=t._stride, _requires_grad=t._requires_grad,
                                     dynamic=dynamic, is_param=isinstance(t, Parameter))
        self._add(("T", source), source, "TENSOR_MATCH", code, obj=snap)

    def shape_guard(self, code, readable):
        """One condition of the ShapeEnv over the inputs' sizes (PyTorch's SHAPE_ENV guard);
        ``readable`` spells it with source names for logs and recompile reasons."""
        self._add(("SHAPE", code), None, "SHAPE_ENV", [code], obj=_ShapeCond(readable))

    def id_match(self, source, obj):
        c = self.const(obj)  # held, so the id cannot be reused while the entry lives
        self._add(("ID", source), source, "ID_MATCH", [f"{E} is {c}"], obj=obj)

    def closure_match(self, source, fn):
        """A function with a closure: its code, not its identity (PyTorch's CLOSURE_MATCH),
        so a closure made anew for each call (by the caller, or by the residual code of a
        graph break) does not recompile; the cells and defaults the trace reads are guarded
        through their own sources."""
        c = self.const((type(fn), fn.__code__))
        self._add(("ID", source), source, "CLOSURE_MATCH",
                  [f"___type({E}) is {c}[0]", f"{E}.__code__ is {c}[1]"], obj=fn.__code__)

    def type_match(self, source, obj):
        c = self.const(type(obj))
        self._add(("TY", source), source, "TYPE_MATCH", [f"___type({E}) is {c}"])

    def constant_match(self, source, value):
        e = E
        if value is None or value is True or value is False or value is Ellipsis:
            code = [f"{e} is {value!r}"]
        else:
            c = self.const(value)
            code = [f"___type({e}) is ___type({c})", f"{e} == {c}"]
        self._add(("C", source), source, "EQUALS_MATCH" if value is not None else "ID_MATCH",
                  code, obj=_Const(value))

    def length_match(self, source, obj):
        e = E
        c = self.const(type(obj))
        self._add(("LEN", source), source, "SEQUENCE_LENGTH",
                  [f"___type({e}) is {c}", f"___len({e}) == {len(obj)}"])

    def iter_length(self, source, n, it):
        e = E
        c = self.const(type(it))
        self._add(("IT", source), source, "ITERATOR_LENGTH",
                  [f"___type({e}) is {c}", f"___len(___iter_rest({e})) == {n}"])

    def dict_keys(self, source, d):
        e = E
        t = self.const(type(d))
        if not d:  # the common case (hook tables): cheaper
            code = [f"___type({e}) is {t}", f"not {e}"]
        else:
            c = self.const(list(d.keys()))
            code = [f"___type({e}) is {t}", f"___list({e}.keys()) == {c}"]
        self._add(("DK", source), source, "DICT_KEYS", code)

    def identity(self, source, other, same):
        """Whether two sources hold one object (``same``) or two."""
        self._add(("IS", source, other), source, "OBJECT_ALIASING",
                  [f"({E} is {other.expr()}) is {same!r}"])

    def same_object(self, expr, other):
        """Two expressions over the frame's arguments (residual code's spelling) reach one
        object: a cell reached through two closures."""
        self._add(("SAME", expr, other), None, "OBJECT_ALIASING", [f"{expr} is {other}"])

    def alias(self, source, other):
        self._add(("A", source, other), source, "DUPLICATE_INPUT",
                  [f"{E} is {other.expr()}"])

    def global_state(self):
        """Grad mode, the thread's key sets (autocast, inference mode), the default dtype,
        deterministic mode, autocast dtypes: all read at capture, all guarded."""
        from .._core import dtype as _dt
        from ..amp import autocast_mode as _am
        from ..backends._context import ctx
        s = _tls.state
        self._add(("GRAD",), None, "GRAD_MODE", [f"___tls.grad_enabled is {s.grad_enabled}"])
        c = self.const((s.included, s.excluded))
        self._add(("KEYS",), None, "GLOBAL_STATE",
                  [f"___tls.included == {c}[0]", f"___tls.excluded == {c}[1]"])
        c = self.const(_dt.get_default_dtype())
        self._add(("DT",), None, "DEFAULT_DTYPE", [f"___default_dtype() is {c}"])
        self._add(("DET",), None, "DETERMINISTIC_ALGORITHMS",
                  [f"___det.deterministic is {bool(ctx.deterministic)}"])
        c = self.const(dict(_am.state.dtype))
        self._add(("AC",), None, "AUTOCAST_STATE", [f"___ac.dtype == {c}"])


def _base_namespace():
    from .._core import dtype as _dt
    from ..amp import autocast_mode as _am
    from ..backends._context import ctx
    from .source import iter_rest
    import sys
    return {"___sys_modules": sys.modules, "___iter_rest": iter_rest, "___type": builtins.type, "___len": builtins.len, "___list": builtins.list,
            "___getattr": builtins.getattr, "___hasattr": builtins.hasattr, "___tls": _tls.state,
            "___default_dtype": _dt.get_default_dtype, "___det": ctx, "___ac": _am.state}


def _source_local(src, names, lines):
    """The local variable (or parameter) holding ``src``'s value in the guard function,
    assigning it (and its bases) on first use, so a chain like ``self._modules['fc']`` is read
    once for all the guards under it."""
    hit = names.get(src)
    if hit is not None:
        return hit
    base = getattr(src, "base", None)
    if base is None or not hasattr(src, "expr_with_base"):
        e = src.expr()
        if e.isidentifier():
            names[src] = e
            return e
    else:
        e = src.expr_with_base(_source_local(base, names, lines))
    name = f"___v{len(lines)}"
    lines.append(f"{name} = {e}")
    names[src] = name
    return name


def build_guard_fn(guard_set, argnames, f_globals, label, guards=None):
    """One function ``guard(*argnames, ___closure) -> bool`` and one
    ``first_failure(...) -> index or -1`` for the recompile log, over ``guards`` (by default
    all of ``guard_set``'s)."""
    guards = guard_set.guards if guards is None else guards
    ns = _base_namespace()
    ns.update(guard_set.namespace)
    ns["___G"] = f_globals
    params = ", ".join([*map(local_expr, argnames), "___closure"])
    names, assigns = {}, []
    body = []  # (assignment lines, condition, guard index)
    for i, g in enumerate(guards):
        before = len(assigns)
        local = _source_local(g.source, names, assigns) if g.source is not None else None
        cond = " and ".join(c.replace(E, local) if local else c for c in g.code)
        body.append((assigns[before:], cond, i))

    def emit(fail, track):
        out = []
        for lines, cond, i in body:
            if track:
                out.append(f"        ___at = {i}")
            out += ["        " + ln for ln in lines]
            out.append(f"        if not ({cond}):")
            out.append(f"            return {fail(i)}")
        return out
    lines = [f"def ___guard({params}):", "    try:"]
    lines += emit(lambda i: "False", False)
    lines += ["        return True", "    except Exception:", "        return False", "",
              f"def ___first_failure({params}):", "    ___at = 0", "    try:"]
    lines += emit(str, True)
    lines += ["        return -1", "    except Exception:", "        return ___at"]
    src = "\n".join(lines) + "\n"
    compile_source(src, f"<ember dynamo guards {label}>", ns)
    fn = ns["___guard"]
    fn.first_failure = ns["___first_failure"]
    fn.source = src
    fn.guards = guards
    fn.guard_set = guard_set
    return fn


def diff_key(guard):
    """What ``skip_guard_eval_unsafe`` selects a guard by: its source's name (every guard on
    a source that told entries apart is kept, as PyTorch's diff guard managers keep a source's
    whole subtree), or for a guard without a source its kind and code."""
    if guard.source is not None:
        return guard.source.name()
    return (guard.create_fn, tuple(guard.code))


# -- guard filters --------------------------------------------------------------------------------
# ember's guards on the global state, each a part of what PyTorch checks as one GLOBAL_STATE guard
_GLOBAL_STATE = {"GRAD_MODE", "GLOBAL_STATE", "DEFAULT_DTYPE", "DETERMINISTIC_ALGORITHMS",
                 "AUTOCAST_STATE"}


@dataclasses.dataclass
class GuardFilterEntry:
    """One guard as a ``guard_filter_fn`` sees it (PyTorch's class of the same name): ``name``
    is its source's name with the frame's ``L[...]`` taken off, ``value`` the value there when
    the capture was made (``has_value`` False for a guard without a source)."""
    name: str
    has_value: bool
    value: object
    guard_type: str
    derived_guard_types: typing.Tuple[str, ...]
    is_global: bool
    orig_guard: object


class _GuardSourceKind:
    """``orig_guard.source`` of a filter entry: where the guarded value lives, with PyTorch's
    ``GuardSource`` questions. A value read through an nn.Module (the module itself
    included) is an "unspecialized nn module" source; a builtin one when the nearest module
    on the way is one of ember.nn's own classes."""

    def __init__(self, kind, module):
        self.kind, self.module = kind, module

    def is_unspecialized_nn_module(self):
        return self.module is not None

    def is_unspecialized_builtin_nn_module(self):
        return self.module == "builtin"

    def is_local(self):
        return self.kind == "local"

    def is_global(self):
        return self.kind == "global"


class _FilterGuard:
    """``orig_guard`` of a filter entry: the ember Guard, with ``source`` answering PyTorch's
    questions about where the value lives (the Guard's own source: ``originating_source``)."""

    def __init__(self, guard, source_kind):
        self._guard, self.source = guard, source_kind
        self.originating_source = guard.source

    def __getattr__(self, name):
        return getattr(self._guard, name)


def _strip_local_scope(name):
    """``L['x'].w`` -> ``x.w`` (PyTorch's strip_local_scope)."""
    return re.sub(r"^L\[['\"](.*?)['\"]\]", r"\1", name)


def _chain(src):
    """``src`` and the sources it is read through, innermost first."""
    out = []
    while src is not None:
        out.append(src)
        src = getattr(src, "base", None) or getattr(src, "fn_source", None)
    return out


def filter_guards(guards, guard_filter_fn, argnames, frame_args, f_globals):
    """The guards ``guard_filter_fn`` keeps: it gets one :class:`GuardFilterEntry` per guard,
    made from the values of the frame the capture was made for, and returns one bool each."""
    from ..nn.modules.module import Module
    ns = _base_namespace()
    ns["___G"] = f_globals
    local = dict(zip(map(local_expr, argnames), frame_args))
    local["___closure"] = frame_args[-1]
    missing = object()

    def value_of(src):
        try:
            return eval(src.expr(), ns, local)  # noqa: S307 - the guards' own expressions
        except Exception:  # noqa: BLE001 - PyTorch's has_value=False
            return missing
    entries = []
    for g in guards:
        module = None
        if g.source is not None:
            for s in _chain(g.source):
                v = value_of(s)
                if isinstance(v, Module):
                    module = "builtin" if as_ember(type(v).__module__).startswith("ember.nn.") \
                        else "user"
                    break
        value = value_of(g.source) if g.source is not None else missing
        kind = "global" if g.source is None or g.source.guard_source == "global" else "local"
        guard_type = "GLOBAL_STATE" if g.create_fn in _GLOBAL_STATE else g.create_fn
        entries.append(GuardFilterEntry(
            name=_strip_local_scope(g.name), has_value=value is not missing, value=value,
            guard_type=guard_type,
            derived_guard_types=() if g.create_fn in _GLOBAL_STATE else (g.create_fn,),
            is_global=g.source is not None and g.source.guard_source == "global",
            orig_guard=_FilterGuard(g, _GuardSourceKind(kind, module))))
    keep = guard_filter_fn(entries)
    if len(keep) != len(guards):
        raise AssertionError(f"filter_results length ({len(keep)}) != sorted_guards length "
                             f"({len(guards)})")
    if not all(type(x) is bool for x in keep):
        raise AssertionError("All filter_results entries must be bool")
    return [g for g, k in zip(guards, keep) if k]


def failure_reason(guard_fn, args):
    """PyTorch's wording for the first failed guard of an entry."""
    i = guard_fn.first_failure(*args)
    if i < 0:
        return None
    g = guard_fn.guards[i]
    if g.create_fn == "TENSOR_MATCH" and g.obj is not None:
        return _tensor_reason(g, guard_fn, args)
    if isinstance(g.obj, _ShapeCond):
        return g.obj.readable
    if isinstance(g.obj, _Const):
        return f"{g.name} == {g.obj.value!r}"
    if g.create_fn == "ID_MATCH":
        return f"{g.name} is not the object it was ({type(g.obj).__name__})"
    if g.create_fn == "TYPE_MATCH":
        return f"type({g.name}) changed"
    return " and ".join(c for c in g.code).replace("___tls.", "")


def _tensor_reason(g, guard_fn, args):
    ns = guard_fn.__globals__
    names = guard_fn.__code__.co_varnames[:guard_fn.__code__.co_argcount]
    local = dict(zip(names, args))
    try:
        value = eval(g.source.expr(), dict(ns), local)
    except Exception as e:  # noqa: BLE001 - the reason is only for the log
        return f"{g.name} could not be read: {e}"
    exp, name = g.obj, g.source.name()
    if not hasattr(value, "_dtype"):
        return f"expected type of '{name}' to be a tensor type, ' but found {type(value)}"
    if value._dtype is not exp._dtype:
        return f"tensor '{name}' dtype mismatch. expected {exp._dtype}, actual {value._dtype}"
    if value._device != exp._device:
        return f"tensor '{name}' device mismatch. expected {exp._device}, actual {value._device}"
    if len(value._size) != len(exp._size):
        return f"tensor '{name}' rank mismatch. expected {len(exp._size)}, actual {len(value._size)}"
    dynamic = getattr(exp, "dynamic", ())
    for i, (a, b) in enumerate(zip(value._size, exp._size)):
        if a != b and i not in dynamic:
            return f"tensor '{name}' size mismatch at index {i}. expected {b}, actual {a}"
    for i, (a, b) in enumerate(zip(value._stride, exp._stride)):
        if a != b and not dynamic:
            return f"tensor '{name}' stride mismatch at index {i}. expected {b}, actual {a}"
    if value._requires_grad != exp._requires_grad:
        return (f"tensor '{name}' requires_grad mismatch. expected requires_grad="
                f"{int(exp._requires_grad)}")
    return f"tensor '{name}' dispatch key set mismatch."
