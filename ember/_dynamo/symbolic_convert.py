"""The symbolic bytecode interpreter (PyTorch's ``symbolic_convert.py``).

An :class:`InstructionTranslator` runs a frame's bytecode (CPython 3.11 or 3.12) over
VariableTrackers instead of values: tensor ops go into the OutputGraph's fx graph, Python values
are folded, and calls to user functions, methods and ``nn.Module.forward`` are inlined by an
:class:`InliningInstructionTranslator` (a child interpreter sharing the graph), so one graph spans
many Python frames. An exception raised in captured code (``raise``, or a builtin's or a
container's error) unwinds as CPython's does, to the handler the code's exception table names,
through inlined callers (``ObservedException``). When an instruction cannot be captured
(``Unsupported``), the root translator restarts the analysis and, at that instruction, compiles
the graph so far and hands the rest of the frame to residual code and a generated resume
function (``_break_graph``). A break inside a loop of the frame itself skips the frame, as
PyTorch's does: it runs eagerly, the user functions it calls captured on their own
(``FrameState.callee``).
"""
import dis
import inspect
import operator
import sys
import traceback

from .exc import (SUPPORTABLE_HINT, USER_ERROR_HINT, ObservedException, RestartAnalysis,
                  SkipFrame, Unsupported, UserErrorDuringTrace,
                  format_graph_break_message)
from .source import (ClosureSource, GlobalSource, LocalSource,
                     ModuleGlobalSource)
from .variables import (BuiltinVariable, CellVariable, ConstantVariable, ConstDictVariable,
                        ListIteratorVariable, ListVariable, NestedUserFunctionVariable,
                        NNModuleVariable, NullVariable, TensorVariable,
                        TupleVariable, VariableBuilder, WithExitVariable)
from .variables.base import unimplemented
from .variables.builtin import binary_op, compare_op
from .variables.dicts import DictViewVariable
from .variables.tensor import constant_or_specialized, data_dependent_branching
from .variables.lists import BaseListVariable
from .variables.nn_module import _STRUCTURE_METHODS, ModuleDictVariable
from .variables.misc import (ContextManagerVariable, EnvironVariable, ExceptionVariable,
                             NewObjectVariable, ObjectDictVariable, SuperVariable,
                             UserDefinedClassVariable, raise_observed)

__all__ = ["InstructionTranslator", "InliningInstructionTranslator", "SUPPORTED_VERSIONS"]

SUPPORTED_VERSIONS = ((3, 11), (3, 12))
PY312 = sys.version_info[:2] >= (3, 12)

_BINARY_OPS = {
    "+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv,
    "//": operator.floordiv, "%": operator.mod, "**": operator.pow, "@": operator.matmul,
    "&": operator.and_, "|": operator.or_, "^": operator.xor, "<<": operator.lshift,
    ">>": operator.rshift,
    "+=": operator.iadd, "-=": operator.isub, "*=": operator.imul, "/=": operator.itruediv,
    "//=": operator.ifloordiv, "%=": operator.imod, "**=": operator.ipow,
    "@=": operator.imatmul, "&=": operator.iand, "|=": operator.ior, "^=": operator.ixor,
    "<<=": operator.ilshift, ">>=": operator.irshift,
}
_COMPARE = {"<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge,
            "==": operator.eq, "!=": operator.ne}
_BUILTINS = __builtins__ if isinstance(__builtins__, dict) else vars(__builtins__)


def _module_global_source(f_globals, name):
    """A guardable source for a global of another module, when that module is importable by
    name (ember's own modules are taken as fixed, as PyTorch takes torch's)."""
    mod = f_globals.get("__name__")
    if not mod or mod == "ember" or mod.startswith("ember.") or \
            getattr(sys.modules.get(mod), "__dict__", None) is not f_globals:
        return None
    return ModuleGlobalSource(mod, name)


def get_instructions(code):
    return [i for i in dis.get_instructions(code) if i.opname != "EXTENDED_ARG"]


def offset_index(code):
    """offset -> index in get_instructions(code); an EXTENDED_ARG's offset (a jump may target
    it) maps to the instruction it extends."""
    index, pending, k = {}, [], 0
    for i in dis.get_instructions(code):
        if i.opname == "EXTENDED_ARG":
            pending.append(i.offset)
            continue
        for off in pending + [i.offset]:
            index[off] = k
        pending = []
        k += 1
    return index


class InstructionTranslatorBase:
    def __init__(self, code, f_globals, symbolic_locals, cells, output, parent=None):
        self.code = code
        self.f_globals = f_globals
        self.output = output
        self.parent = parent
        self.symbolic_locals = symbolic_locals
        self.instructions = get_instructions(code)
        self.index_of = offset_index(code)
        self.stack = []
        self.ip = 0
        self.lineno = code.co_firstlineno
        self.kw_names = None
        self.done = False
        self.return_value = None
        # cells: name -> CellVariable, for the frame's cellvars and freevars
        self.cells = cells
        # the exceptions being handled (PUSH_EXC_INFO .. POP_EXCEPT), innermost last
        self.exn_stack = []

    # -- helpers ----------------------------------------------------------------------------
    def frame_summary(self):
        line = None
        try:
            import linecache
            line = linecache.getline(self.code.co_filename, self.lineno).strip()
        except Exception:  # noqa: BLE001
            pass
        return traceback.FrameSummary(self.code.co_filename, self.lineno, self.code.co_name,
                                      line=line or None)

    def user_stack(self):
        frames = []
        tx = self
        while tx is not None:
            frames.append(tx.frame_summary())
            tx = tx.parent
        return frames[::-1]

    def push(self, v):
        self.stack.append(v)

    def pop(self):
        return self.stack.pop()

    def popn(self, n):
        if n == 0:
            return []
        items = self.stack[-n:]
        del self.stack[-n:]
        return items

    def unpack(self, v):
        if isinstance(v, ConstantVariable):
            try:
                return [ConstantVariable(x) for x in v.value]
            except TypeError:
                unimplemented(f"iterate over {type(v.value).__name__}")
        if not v.has_unpack_var_sequence(self):
            unimplemented(f"iterate over {v}")
        return v.unpack_var_sequence(self)

    def getattr(self, obj, name):
        if name == "__class__":  # x.__class__ is type(x), for any value whose type is known
            return BuiltinVariable(type).call_function(self, [obj], {})
        return obj.var_getattr(self, name)

    def getitem(self, obj, idx):
        if isinstance(obj, TensorVariable):
            return obj.call_method(self, "__getitem__", [idx], {})
        if isinstance(idx, TensorVariable):
            unimplemented("indexing a Python container with a tensor")
        if isinstance(obj, ConstantVariable):
            return ConstantVariable(obj.value[idx.as_python_constant()])
        return obj.call_method(self, "__getitem__", [idx], {})

    def call(self, fn, args, kwargs):
        target = getattr(fn, "fn", None)
        if target is None:
            target = getattr(fn, "cls", None)
        if target is not None and callable(target) and \
                inspect.getattr_static(target, "_dynamo_forbidden", False):
            raise AssertionError(f"Attempt to trace forbidden callable {target}")
        return fn.call_function(self, list(args), dict(kwargs))

    def inline_call(self, code, f_globals, bound, cells):
        return inline_call(self, code, f_globals, bound, cells)

    def load_global(self, name):
        pending = self.output.side_effects.pending_global(self.f_globals, name)
        if pending is not None:
            return pending
        if name in self.f_globals:
            if self.f_globals is self.output.root_globals:
                src = GlobalSource(name)
            else:
                src = _module_global_source(self.f_globals, name)
            return VariableBuilder(self, src)(self.f_globals[name])
        b = self.f_globals.get("__builtins__", _BUILTINS)
        b = b if isinstance(b, dict) else vars(b)
        if name not in b:
            unimplemented(f"NameError: name '{name}' is not defined")
        return VariableBuilder(self, None)(b[name])

    # -- the loop ---------------------------------------------------------------------------
    def run(self):
        while not self.done:
            self.step()
        return self.return_value

    def step(self):
        inst = self.instructions[self.ip]
        self.current = inst
        if inst.positions is not None and inst.positions.lineno is not None:
            self.lineno = inst.positions.lineno
        self.ip += 1
        handler = getattr(self, inst.opname, None)
        if handler is None:
            unimplemented(f"missing bytecode handler: {inst.opname}")
        try:
            handler(inst)
        except ObservedException as e:
            self.handle_exception(e.exc)

    def handle_exception(self, exc):
        """Unwind to the handler the exception table names for the current instruction, as
        CPython does: the stack cut to the entry's depth, the offset pushed if the entry says
        ``lasti``, then the exception; with no handler here, the caller's frame gets it."""
        offset = self.current.offset
        entry = next((e for e in dis.Bytecode(self.code).exception_entries
                      if e.start <= offset < e.end), None)
        if entry is None and self.parent is None:
            # out of the compiled frame: a graph break at a call (its residual call raises
            # it), else the frame runs eagerly; PyTorch's words
            unimplemented(format_graph_break_message(
                "Observed exception", f"raised exception {exc.debug_repr()}",
                "Dynamo found no exception handler at the top-level compiled function when "
                "encountering an exception. Exception will propagate outside the compiled "
                "region.", [USER_ERROR_HINT, SUPPORTABLE_HINT]))
        if entry is None:
            raise ObservedException(exc)
        del self.stack[entry.depth:]
        if entry.lasti:
            self.push(ConstantVariable(offset))
        self.push(exc)
        self.ip = self.index_of[entry.target]

    def jump(self, inst):
        self.ip = self.index_of[inst.argval]

    # -- opcodes: stack and constants ------------------------------------------------------
    def NOP(self, inst):
        pass

    RESUME = NOP
    PRECALL = NOP
    CACHE = NOP

    def POP_TOP(self, inst):
        self.pop()

    def PUSH_NULL(self, inst):
        self.push(NullVariable())

    def COPY(self, inst):
        self.push(self.stack[-inst.arg])

    def SWAP(self, inst):
        self.stack[-1], self.stack[-inst.arg] = self.stack[-inst.arg], self.stack[-1]

    def LOAD_CONST(self, inst):
        v = inst.argval
        if isinstance(v, tuple):
            from .variables.builder import wrap_constant_like
            self.push(wrap_constant_like(self, v))
        else:
            self.push(ConstantVariable(v))

    def RETURN_CONST(self, inst):
        self.LOAD_CONST(inst)
        self.RETURN_VALUE(inst)

    # -- locals, globals, cells ------------------------------------------------------------
    def LOAD_FAST(self, inst):
        name = inst.argval
        if name not in self.symbolic_locals:
            unimplemented(f"UnboundLocalError: local variable '{name}' referenced before "
                          f"assignment")
        self.push(self.symbolic_locals[name])

    LOAD_FAST_CHECK = LOAD_FAST

    def LOAD_FAST_AND_CLEAR(self, inst):
        self.push(self.symbolic_locals.pop(inst.argval, NullVariable()))

    def STORE_FAST(self, inst):
        v = self.pop()
        if isinstance(v, NullVariable):
            self.symbolic_locals.pop(inst.argval, None)
        else:
            self.symbolic_locals[inst.argval] = v

    def DELETE_FAST(self, inst):
        self.symbolic_locals.pop(inst.argval, None)

    def LOAD_GLOBAL(self, inst):
        if inst.arg & 1:
            self.push(NullVariable())
        self.push(self.load_global(inst.argval))

    def STORE_GLOBAL(self, inst):
        self.output.side_effects.store_global(self.f_globals, inst.argval, self.pop())

    def MAKE_CELL(self, inst):
        name = inst.argval
        self.cells[name] = CellVariable(self.symbolic_locals.pop(name, None))

    def COPY_FREE_VARS(self, inst):
        pass  # cells were bound when the frame was set up

    def _cell(self, name):
        c = self.cells.get(name)
        if c is None:
            c = self.cells[name] = CellVariable(None)
        return c

    def _unbound_cell(self, name):
        """CPython's error for reading an empty cell (a ``del``-ed or unassigned variable)."""
        if name in self.code.co_cellvars:
            raise_observed(UnboundLocalError(
                f"cannot access local variable '{name}' where it is not associated with a "
                f"value"))
        raise_observed(NameError(f"cannot access free variable '{name}' where it is not "
                                 f"associated with a value in enclosing scope"))

    def LOAD_DEREF(self, inst):
        value = self._cell(inst.argval).contents(self)
        if value is None:
            self._unbound_cell(inst.argval)
        self.push(value)

    LOAD_CLASSDEREF = LOAD_DEREF

    def STORE_DEREF(self, inst):
        self._cell(inst.argval).store(self, self.pop())

    def DELETE_DEREF(self, inst):
        cell = self._cell(inst.argval)
        if cell.contents(self) is None:
            self._unbound_cell(inst.argval)
        cell.delete(self)

    def LOAD_CLOSURE(self, inst):
        self.push(self._cell(inst.argval))

    # -- attributes and items --------------------------------------------------------------
    def LOAD_ATTR(self, inst):
        if PY312 and inst.arg & 1:
            return self._load_method(inst.argval)
        obj = self.pop()
        self.push(self.getattr(obj, inst.argval))

    def _load_method(self, name):
        obj = self.pop()
        self.push(NullVariable())
        self.push(self.getattr_for_call(obj, name))

    def getattr_for_call(self, obj, name):
        if isinstance(obj, (TensorVariable, BaseListVariable, ConstDictVariable,
                            DictViewVariable, ListIteratorVariable, EnvironVariable,
                            ObjectDictVariable, ModuleDictVariable)) or (
                isinstance(obj, ConstantVariable) and not isinstance(obj.value, type)):
            return _BoundMethod(obj, name)
        if isinstance(obj, NNModuleVariable) and (
                name in ("__getitem__", "__len__", "keys", "values", "items") or
                name in _STRUCTURE_METHODS):
            return _BoundMethod(obj, name)
        return self.getattr(obj, name)

    def LOAD_METHOD(self, inst):
        self._load_method(inst.argval)

    def LOAD_SUPER_ATTR(self, inst):
        _super, cls, self_ = self.popn(3)  # stack: super, __class__, self
        sup = SuperVariable(cls.as_python_constant(), self_)
        if inst.arg & 1:
            self.push(NullVariable())
        self.push(sup.var_getattr(self, inst.argval))

    def STORE_ATTR(self, inst):
        obj, value = self.pop(), self.pop()
        if isinstance(obj, TensorVariable):
            unimplemented(f"setting attribute {inst.argval} on a tensor")
        if isinstance(obj, (NewObjectVariable, ExceptionVariable)):
            obj.store_attr(self, inst.argval, value)
        else:
            self.output.side_effects.store_attr(obj, inst.argval, value)

    def DELETE_ATTR(self, inst):
        obj = self.pop()
        if not isinstance(obj, NewObjectVariable):
            unimplemented("del of an attribute of an object that exists outside the trace")
        obj.delete_attr(self, inst.argval)

    def BINARY_SUBSCR(self, inst):
        idx = self.pop()
        obj = self.pop()
        self.push(self.getitem(obj, idx))

    def STORE_SUBSCR(self, inst):
        idx, obj, value = self.pop(), self.pop(), self.pop()
        obj.call_method(self, "__setitem__", [idx, value], {})

    def DELETE_SUBSCR(self, inst):
        idx, obj = self.pop(), self.pop()
        obj.call_method(self, "__delitem__", [idx], {})

    def BUILD_SLICE(self, inst):
        items = self.popn(inst.arg)
        self.push(ConstantVariable(slice(*[constant_or_specialized(i) for i in items])))

    def BINARY_SLICE(self, inst):
        start, end = self.popn(2)
        obj = self.pop()
        sl = ConstantVariable(slice(constant_or_specialized(start), constant_or_specialized(end)))
        self.push(self.getitem(obj, sl))

    def STORE_SLICE(self, inst):
        start, end = self.popn(2)
        obj, value = self.pop(), self.pop()
        sl = ConstantVariable(slice(constant_or_specialized(start), constant_or_specialized(end)))
        obj.call_method(self, "__setitem__", [sl, value], {})

    # -- operators ---------------------------------------------------------------------------
    def BINARY_OP(self, inst):
        b, a = self.pop(), self.pop()
        op = _BINARY_OPS[inst.argrepr]
        self.push(self._binop(op, a, b))

    def _binop(self, op, a, b):
        if isinstance(a, TensorVariable) or isinstance(b, TensorVariable):
            return binary_op(self, op, [a, b])
        inplace_to = {operator.iadd: operator.add, operator.isub: operator.sub,
                      operator.imul: operator.mul, operator.itruediv: operator.truediv}
        if op in inplace_to and not isinstance(a, ListVariable):
            op = inplace_to[op]
        return binary_op(self, op, [a, b])

    def _unary(self, op):
        a = self.pop()
        from .variables.tensor import SymNodeVariable
        if isinstance(a, TensorVariable) or (isinstance(a, SymNodeVariable) and
                                             op is operator.neg):
            self.push(self.output.call_graph(self, "call_function", op, [a], {}))
        else:
            self.push(ConstantVariable(op(constant_or_specialized(a))))

    def UNARY_NEGATIVE(self, inst):
        self._unary(operator.neg)

    def UNARY_POSITIVE(self, inst):
        self._unary(operator.pos)

    def UNARY_INVERT(self, inst):
        self._unary(operator.invert)

    def UNARY_NOT(self, inst):
        a = self.pop()
        self.push(ConstantVariable(not a.truth(self)))

    def COMPARE_OP(self, inst):
        b, a = self.pop(), self.pop()
        self.push(compare_op(self, _COMPARE[inst.argval], a, b))

    def IS_OP(self, inst):
        b, a = self.pop(), self.pop()
        self.push(compare_op(self, operator.is_not if inst.arg else operator.is_, a, b))

    def CONTAINS_OP(self, inst):
        b, a = self.pop(), self.pop()
        if isinstance(b, TensorVariable):
            unimplemented("`in` on a tensor (Tensor.__contains__ reads data)")
        if isinstance(b, ConstantVariable):
            r = a.as_python_constant() in b.value
        else:
            r = b.call_method(self, "__contains__", [a], {}).as_python_constant()
        self.push(ConstantVariable(not r if inst.arg else r))

    def CALL_INTRINSIC_1(self, inst):
        name = inst.argrepr
        if name == "INTRINSIC_LIST_TO_TUPLE":
            self.push(TupleVariable(self.pop().items))
        elif name == "INTRINSIC_UNARY_POSITIVE":
            self._unary(operator.pos)
        else:
            unimplemented(f"CALL_INTRINSIC_1 {name}")

    # -- building containers ---------------------------------------------------------------
    def BUILD_SET(self, inst):
        items = self.popn(inst.arg)
        # a set of constants, folded (its methods run on the Python set made for this trace)
        self.push(ConstantVariable({i.as_python_constant() for i in items}))

    def SET_ADD(self, inst):
        # set comprehensions; sets hold constants only (see BUILD_SET)
        v = self.pop()
        target = self.stack[-inst.arg]
        if not (isinstance(target, ConstantVariable) and isinstance(target.value, set)
                and v.is_python_constant()):
            unimplemented("set of non-constant values")
        # a new set, never the real one a resume function was passed (see _building)
        self.stack[-inst.arg] = ConstantVariable(target.value | {v.as_python_constant()})

    def SET_UPDATE(self, inst):
        v = self.pop()
        target = self.stack[-inst.arg]
        items = self.unpack(v)
        if not (isinstance(target, ConstantVariable) and isinstance(target.value, set)
                and all(i.is_python_constant() for i in items)):
            unimplemented("set of non-constant values")
        self.stack[-inst.arg] = ConstantVariable(
            target.value | {i.as_python_constant() for i in items})

    def BUILD_TUPLE(self, inst):
        self.push(TupleVariable(self.popn(inst.arg)))

    def BUILD_LIST(self, inst):
        self.push(ListVariable(self.popn(inst.arg)))

    def BUILD_MAP(self, inst):
        items = self.popn(2 * inst.arg)
        self.push(ConstDictVariable({items[i].as_python_constant(): items[i + 1]
                                     for i in range(0, len(items), 2)}))

    def BUILD_CONST_KEY_MAP(self, inst):
        keys = self.pop().as_python_constant()
        vals = self.popn(inst.arg)
        self.push(ConstDictVariable(dict(zip(keys, vals))))

    def BUILD_STRING(self, inst):
        parts = self.popn(inst.arg)
        self.push(ConstantVariable("".join(p.as_python_constant() for p in parts)))

    def FORMAT_VALUE(self, inst):
        spec = self.pop().as_python_constant() if inst.arg & 0x04 else ""
        v = self.pop()
        if isinstance(v, TensorVariable):
            unimplemented("formatting a tensor into a string reads its data")
        val = v.as_python_constant()
        conv = inst.arg & 0x03
        if conv == 1:
            val = str(val)
        elif conv == 2:
            val = repr(val)
        elif conv == 3:
            val = ascii(val)
        self.push(ConstantVariable(format(val, spec)))

    # The container these build is usually new (no source), but in a resume function it is an
    # argument: 3.12 inlines comprehensions, so a break inside one resumes with the partly built
    # list on the stack. Then the append is a mutation of a real object, replayed after the graph.
    def _building(self, depth):
        target = self.stack[-depth]
        self.output.side_effects.mutate(target)
        return target

    def LIST_APPEND(self, inst):
        v = self.pop()
        self._building(inst.arg).items.append(v)

    def LIST_EXTEND(self, inst):
        v = self.pop()
        self._building(inst.arg).items.extend(self.unpack(v))

    def LIST_TO_TUPLE(self, inst):
        self.push(TupleVariable(self.pop().items))

    def MAP_ADD(self, inst):
        k, v = self.popn(2)
        self._building(inst.arg).items[k.as_python_constant()] = v

    def DICT_UPDATE(self, inst):
        v = self.pop()
        if not isinstance(v, ConstDictVariable):
            unimplemented("dict update from a non-dict")
        self._building(inst.arg).items.update(v.items)

    DICT_MERGE = DICT_UPDATE

    def UNPACK_SEQUENCE(self, inst):
        items = self.unpack(self.pop())
        if len(items) != inst.arg:
            unimplemented(f"ValueError: unpacking {len(items)} values into {inst.arg}")
        for v in reversed(items):
            self.push(v)

    def UNPACK_EX(self, inst):
        items = self.unpack(self.pop())
        before, after = inst.arg & 0xFF, inst.arg >> 8
        if len(items) < before + after:
            unimplemented("ValueError: not enough values to unpack")
        mid = ListVariable(items[before:len(items) - after])
        vals = items[:before] + [mid] + items[len(items) - after:]
        for v in reversed(vals):
            self.push(v)

    # -- iteration and jumps ---------------------------------------------------------------
    def GET_ITER(self, inst):
        v = self.pop()
        if isinstance(v, ListIteratorVariable):
            self.push(v)
        else:
            self.push(ListIteratorVariable(self.unpack(v)))

    def FOR_ITER(self, inst):
        it = self.stack[-1]
        if not isinstance(it, ListIteratorVariable):
            unimplemented(f"FOR_ITER over {it}")
        v = it.next_item(self)
        if v is None:
            self.pop()
            self.jump(inst)
            if PY312:  # 3.12 jumps past the END_FOR that follows the loop body
                self.ip += 1
        else:
            self.push(v)

    def END_FOR(self, inst):
        self.popn(2)

    def JUMP_FORWARD(self, inst):
        self.jump(inst)

    JUMP_BACKWARD = JUMP_FORWARD
    JUMP_BACKWARD_NO_INTERRUPT = JUMP_FORWARD
    JUMP_ABSOLUTE = JUMP_FORWARD
    JUMP = JUMP_FORWARD

    def _cond_jump(self, inst, jump_if, pop_always=True):
        v = self.stack[-1]
        if isinstance(v, TensorVariable):
            unimplemented(data_dependent_branching(v))
        truth = v.truth(self)
        if pop_always:
            self.pop()
            if truth == jump_if:
                self.jump(inst)
        else:  # JUMP_IF_X_OR_POP
            if truth == jump_if:
                self.jump(inst)
            else:
                self.pop()

    def _none_jump(self, inst, jump_if_none):
        v = self.pop()
        is_none = isinstance(v, ConstantVariable) and v.value is None
        if is_none == jump_if_none:
            self.jump(inst)

    def POP_JUMP_IF_FALSE(self, inst):
        self._cond_jump(inst, False)

    def POP_JUMP_IF_TRUE(self, inst):
        self._cond_jump(inst, True)

    POP_JUMP_FORWARD_IF_FALSE = POP_JUMP_BACKWARD_IF_FALSE = POP_JUMP_IF_FALSE
    POP_JUMP_FORWARD_IF_TRUE = POP_JUMP_BACKWARD_IF_TRUE = POP_JUMP_IF_TRUE

    def POP_JUMP_IF_NONE(self, inst):
        self._none_jump(inst, True)

    def POP_JUMP_IF_NOT_NONE(self, inst):
        self._none_jump(inst, False)

    POP_JUMP_FORWARD_IF_NONE = POP_JUMP_BACKWARD_IF_NONE = POP_JUMP_IF_NONE
    POP_JUMP_FORWARD_IF_NOT_NONE = POP_JUMP_BACKWARD_IF_NOT_NONE = POP_JUMP_IF_NOT_NONE

    def JUMP_IF_FALSE_OR_POP(self, inst):
        self._cond_jump(inst, False, pop_always=False)

    def JUMP_IF_TRUE_OR_POP(self, inst):
        self._cond_jump(inst, True, pop_always=False)

    # -- calls -------------------------------------------------------------------------------
    def KW_NAMES(self, inst):
        self.kw_names = self.code.co_consts[inst.arg]

    def CALL(self, inst):
        argc = inst.arg
        items = self.popn(argc + 2)
        if isinstance(items[0], NullVariable):
            fn, args = items[1], items[2:]
        else:
            fn, args = items[0], items[1:]
        kwargs = {}
        if self.kw_names:
            n = len(self.kw_names)
            kwargs = dict(zip(self.kw_names, args[len(args) - n:]))
            args = args[:len(args) - n]
            self.kw_names = None
        self.push(self.call(fn, args, kwargs))

    def CALL_FUNCTION_EX(self, inst):
        kw = self.pop() if inst.arg & 1 else ConstDictVariable({})
        args = self.pop()
        fn = self.pop()
        if self.stack and isinstance(self.stack[-1], NullVariable):
            self.pop()
        if not isinstance(kw, ConstDictVariable):
            unimplemented("**kwargs that is not a dict")
        self.push(self.call(fn, self.unpack(args), kw.items))

    def MAKE_FUNCTION(self, inst):
        code = self.pop()  # 3.11 no longer pushes the qualified name
        name = code.as_python_constant().co_qualname
        flags = inst.arg
        closure = self.pop() if flags & 0x08 else None
        if flags & 0x04:
            self.pop()  # annotations
        kwdefaults = self.pop() if flags & 0x02 else None
        defaults = self.pop() if flags & 0x01 else None
        self.push(NestedUserFunctionVariable(code.as_python_constant(), self.f_globals, name,
                                             defaults, kwdefaults, closure))

    def RETURN_VALUE(self, inst):
        self.return_value = self.pop()
        self.done = True

    # -- with blocks ---------------------------------------------------------------------------
    def BEFORE_WITH(self, inst):
        ctx = self.pop()
        if not isinstance(ctx, ContextManagerVariable):
            unimplemented(f"`with` over an unsupported context manager {ctx}")
        self.push(WithExitVariable(ctx))
        self.push(ctx.enter(self))

    # -- exceptions ---------------------------------------------------------------------------
    def handled_exception(self):
        """The exception an ``except`` block running now handles (``sys.exc_info()``), in this
        frame or a caller's; None outside any."""
        tx = self
        while tx is not None:
            if tx.exn_stack:
                return tx.exn_stack[-1]
            tx = tx.parent
        return None

    def _as_exception(self, v):
        if isinstance(v, UserDefinedClassVariable) and issubclass(v.cls, BaseException):
            v = v.call_function(self, [], {})  # `raise ValueError` makes ValueError()
        if not isinstance(v, ExceptionVariable):
            unimplemented(f"raise of {v} (exceptions are modelled when made in captured code "
                          f"from a class without Python __new__/__init__)")
        return v

    def RAISE_VARARGS(self, inst):
        if inst.arg == 0:  # bare `raise`: the exception being handled, unchanged
            exc = self.handled_exception()
            if exc is None:
                unimplemented("RuntimeError: No active exception to reraise")
            raise ObservedException(exc)
        cause = self.pop() if inst.arg == 2 else None
        exc = self._as_exception(self.pop())
        if cause is not None:
            none = isinstance(cause, ConstantVariable) and cause.value is None
            exc.set_cause(cause if none else self._as_exception(cause))
        context = self.handled_exception()
        if context is not None and context is not exc:
            exc.attrs["__context__"] = context
        raise ObservedException(exc)

    def RERAISE(self, inst):
        raise ObservedException(self.pop())

    def PUSH_EXC_INFO(self, inst):
        exc = self.pop()
        self.push(self.handled_exception() or ConstantVariable(None))
        self.push(exc)
        self.exn_stack.append(exc)

    def POP_EXCEPT(self, inst):
        self.pop()
        self.exn_stack.pop()

    def CHECK_EXC_MATCH(self, inst):
        typ = self.pop().as_python_constant()
        self.push(ConstantVariable(issubclass(self.stack[-1].python_type(), typ)))

    def WITH_EXCEPT_START(self, inst):
        # stack: __exit__, lasti, the previous exception, the exception
        exc = self.stack[-1]
        self.push(self.stack[-4].call_function(
            self, [ConstantVariable(exc.cls), exc, ConstantVariable(None)], {}))

    def LOAD_ASSERTION_ERROR(self, inst):
        self.push(UserDefinedClassVariable(AssertionError))

    def LOAD_BUILD_CLASS(self, inst):
        # its call is a graph break (BuiltinVariable): residual code runs the class body
        self.push(BuiltinVariable(_BUILTINS["__build_class__"]))

    # -- imports --------------------------------------------------------------------------------
    def IMPORT_NAME(self, inst):
        fromlist, level = self.pop(), self.pop()
        try:
            mod = __import__(inst.argval, self.f_globals, None, fromlist.as_python_constant(),
                             level.as_python_constant())
        except ImportError as e:  # eager raises it here, for the code's own handler
            unimplemented(f"import {inst.argval} raised {type(e).__name__}: {e}")
        self.push(VariableBuilder(self, None)(mod))

    def IMPORT_FROM(self, inst):
        self.push(self.getattr(self.stack[-1], inst.argval))

    def zero_arg_super(self):
        cls_cell = self.cells.get("__class__")
        if cls_cell is None:
            unimplemented("super() without __class__ cell")
        cls = cls_cell.contents(self)
        if cls is None:
            unimplemented("super(): empty __class__ cell")
        cls = cls.as_python_constant()
        first = self.code.co_varnames[0]
        return SuperVariable(cls, self.symbolic_locals[first])


class _BoundMethod(BuiltinVariable):
    """``obj.method`` loaded for a call (LOAD_METHOD / LOAD_ATTR's method form)."""

    def __init__(self, obj, name):
        super().__init__(None)
        self.obj, self.name = obj, name

    def call_function(self, tx, args, kwargs):
        return self.obj.call_method(tx, self.name, args, kwargs)

    def reconstruct(self, cg):
        return f"{cg.reconstruct(self.obj)}.{self.name}"

    def __repr__(self):
        return f"_BoundMethod({self.obj}.{self.name})"


class InliningInstructionTranslator(InstructionTranslatorBase):
    """A called user function, interpreted inside the parent's trace. A generator function
    (a generator expression, most often) is run to the end and its values collected: the
    consumer gets an iterator over them."""

    generator_values = None

    def RETURN_GENERATOR(self, inst):
        self.generator_values = []
        self.push(ConstantVariable(None))

    def YIELD_VALUE(self, inst):
        if self.generator_values is None:
            unimplemented("yield outside a generator")
        self.generator_values.append(self.pop())
        self.push(ConstantVariable(None))

    def RETURN_VALUE(self, inst):
        super().RETURN_VALUE(inst)
        if self.generator_values is not None:
            self.return_value = ListIteratorVariable(self.generator_values)

    def STORE_GLOBAL(self, inst):
        self.output.side_effects.store_global(self.f_globals, inst.argval, self.pop())


class InstructionTranslator(InstructionTranslatorBase):
    """The compiled frame itself: owns the OutputGraph and the break logic."""

    def __init__(self, code, f_globals, args, closure, output, break_at, one_graph):
        symbolic_locals = {}
        self.arg_names = _arg_names(code)
        # the call's closure: its cells are read (and written) through ___closure, which a
        # resume function's caller also fills with the cells of the frame it resumes
        cells = {name: CellVariable(real=closure[i], contents_source=ClosureSource(i, name),
                                    write_expr=f"___closure[{i}]")
                 for i, name in enumerate(code.co_freevars)}
        super().__init__(code, f_globals, symbolic_locals, cells, output)
        for name, value in zip(self.arg_names, args):
            symbolic_locals[name] = VariableBuilder(self, LocalSource(name))(value)
        self.break_at = break_at
        self.one_graph = one_graph
        self.residual = None

    def step(self):
        inst = self.instructions[self.ip]
        if inst.offset in self.break_at:
            if inst.positions is not None and inst.positions.lineno is not None:
                self.lineno = inst.positions.lineno
            self.current = inst
            self.output.break_graph(self, inst, self.break_at[inst.offset])
            self.done = True
            return
        try:
            super().step()
        except Unsupported as e:
            in_callee = bool(e.real_stack)
            if not e.real_stack:
                e.add_user_stack(self.user_stack_at_error())
            if self.one_graph or isinstance(e, UserErrorDuringTrace):
                raise
            if self.output.error_on_graph_break:
                e.error_on_graph_break = True
                raise
            if not in_callee and self.maybe_has_backedge():
                # PyTorch's "graph break in loop": the frame runs eagerly. Resuming inside
                # the loop would capture one resume function per iteration, each nested in
                # the last (a long loop compiles for minutes and outgrows the stack). A break
                # inside a function called in the loop still breaks at that call: the
                # callee is captured on its own, as PyTorch's frame hook captures it.
                raise SkipFrame(format_graph_break_message(
                    "graph break in loop",
                    f"frame skipped: {self.code.co_name} ({self.code.co_filename} line "
                    f"{self.code.co_firstlineno})",
                    "torch.compile detected a graph break in a for/while loop. Skipping the "
                    "frame and falling back to eager, as graph breaks in loops are not "
                    "supported.", []), e.real_stack, compile_callees=True) from e
            if inst.opname in _BREAKABLE and self.output.can_break(self):
                self.break_at[inst.offset] = e
                raise RestartAnalysis() from e
            raise

    def user_stack_at_error(self):
        return self.user_stack()

    def maybe_has_backedge(self):
        """PyTorch's heuristic for a break inside a loop: a jump back to before the current
        instruction, before the next return."""
        for inst in self.instructions[self.ip:]:
            if inst.opname in ("RETURN_VALUE", "RETURN_CONST"):
                return False
            if inst.opcode in dis.hasjabs + dis.hasjrel and inst.argval < self.current.offset:
                return True
        return False


_BREAKABLE = {"CALL", "CALL_FUNCTION_EX", "POP_JUMP_IF_FALSE", "POP_JUMP_IF_TRUE",
              "POP_JUMP_FORWARD_IF_FALSE", "POP_JUMP_FORWARD_IF_TRUE",
              "POP_JUMP_BACKWARD_IF_FALSE", "POP_JUMP_BACKWARD_IF_TRUE",
              "JUMP_IF_FALSE_OR_POP", "JUMP_IF_TRUE_OR_POP"}


def _arg_names(code):
    n = code.co_argcount + code.co_kwonlyargcount
    n += bool(code.co_flags & 0x04) + bool(code.co_flags & 0x08)
    return code.co_varnames[:n]


_MAX_INLINE_DEPTH = 64


def inline_call(parent, code, f_globals, bound, cells):
    """Interpret ``code`` with ``bound`` arguments (and ``cells``: name -> CellVariable) as a
    child of ``parent``."""
    if code.co_flags & (0x80 | 0x100 | 0x200):
        unimplemented(f"inlining coroutine function {code.co_name}")
    depth = 0
    tx = parent
    while tx is not None:
        depth += 1
        tx = tx.parent
    if depth > _MAX_INLINE_DEPTH:
        unimplemented("recursion too deep while inlining")
    child = InliningInstructionTranslator(code, f_globals, dict(bound), dict(cells),
                                          parent.output, parent)
    try:
        return child.run()
    except Unsupported as e:
        if not e.real_stack:
            e.add_user_stack(child.user_stack())
        raise

