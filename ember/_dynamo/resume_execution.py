"""Resume functions: after a graph break, the rest of a frame runs in a generated function
``__resume_at_<offset>`` whose arguments are the live stack items and live locals at the break.
Its code is the original code object with a prologue that pushes those stack items (and NULLs)
and jumps to the instruction after the break, built with the ``bytecode`` package (exception
table, line table and stack size computed for CPython 3.11 and 3.12). It has the original's
free variables, and the original's cell variables as free variables too: the caller passes
the frame's cells ahead of its closure. The resume function is itself captured
through the same cache as any compiled function."""
import dis

__all__ = ["make_resume_code", "live_locals", "reachable", "resume_target", "route_calls"]

_UNCONDITIONAL = {"JUMP_FORWARD", "JUMP_BACKWARD", "JUMP_BACKWARD_NO_INTERRUPT", "JUMP_ABSOLUTE",
                  "JUMP"}
_TERMINAL = {"RETURN_VALUE", "RETURN_CONST", "RAISE_VARARGS", "RERAISE"}
_LOADS = {"LOAD_FAST", "LOAD_FAST_CHECK", "LOAD_FAST_AND_CLEAR", "LOAD_DEREF", "LOAD_CLOSURE",
          "DELETE_FAST", "LOAD_CLASSDEREF"}


def _instructions(code):
    return [i for i in dis.get_instructions(code) if i.opname != "EXTENDED_ARG"]


def resume_target(code, offset):
    """The offset of the instruction after the one at ``offset``."""
    insts = _instructions(code)
    for i, inst in enumerate(insts):
        if inst.offset == offset:
            return insts[i + 1].offset
    raise KeyError(offset)


def reachable(code, start_offset):
    """The instructions that may run at or after ``start_offset`` (all paths)."""
    from .symbolic_convert import offset_index
    insts = _instructions(code)
    index = offset_index(code)
    jumps = set(dis.hasjrel) | set(dis.hasjabs)
    seen = set()
    work = [index[start_offset]]
    while work:
        i = work.pop()
        if i in seen or i >= len(insts):
            continue
        seen.add(i)
        inst = insts[i]
        if inst.opname in _TERMINAL:
            continue
        if inst.opcode in jumps:
            work.append(index[inst.argval])
            if inst.opname in _UNCONDITIONAL:
                continue
        work.append(i + 1)
    return [insts[i] for i in sorted(seen)]


def live_locals(code, start_offset):
    """Names possibly read at or after ``start_offset`` (all paths; conservative)."""
    return {inst.argval for inst in reachable(code, start_offset) if inst.opname in _LOADS}


def make_resume_code(code, target_offset, nstack, null_positions, local_names, name):
    """A code object taking ``(stack items that are not NULL..., *local_names)`` that continues
    ``code`` at ``target_offset``."""
    from bytecode import Bytecode, CellVar, ConcreteBytecode, FreeVar, Instr, Label
    concrete = ConcreteBytecode.from_code(code)
    # The k-th real instruction of the abstract bytecode is the k-th (non-cache) instruction
    # that dis lists.
    from .symbolic_convert import offset_index
    target_k = offset_index(code)[target_offset]
    bc = concrete.to_bytecode()
    k = -1
    insert_at = None
    for pos, ins in enumerate(bc):
        if isinstance(ins, Instr):
            k += 1
            if k == target_k:
                insert_at = pos
                break
    if insert_at is None:
        raise RuntimeError(f"resume target {target_offset} not found in {code.co_name}")
    label = Label()
    bc.insert(insert_at, label)
    # The frame's cells are the resume function's free variables (as in PyTorch): its
    # caller hands it the frame's cells themselves, which closures made before the break
    # may hold, so a cell assigned on one side of the break is read on the other.
    freevars = list(code.co_cellvars) + list(code.co_freevars)
    for ins in bc:
        if isinstance(ins, Instr) and isinstance(ins.arg, CellVar):
            ins.arg = FreeVar(ins.arg.name)
    stack_args = [f"___stack{i}" for i in range(nstack) if i not in null_positions]
    prologue = []
    lineno = code.co_firstlineno
    if freevars:
        prologue.append(Instr("COPY_FREE_VARS", len(freevars), lineno=lineno))
    prologue.append(Instr("RESUME", 0, lineno=lineno))
    j = 0
    for i in range(nstack):
        if i in null_positions:
            prologue.append(Instr("PUSH_NULL", lineno=lineno))
        else:
            prologue.append(Instr("LOAD_FAST", stack_args[j], lineno=lineno))
            j += 1
    prologue.append(Instr("JUMP_FORWARD", label, lineno=lineno))
    # Drop the original prefix (MAKE_CELL / COPY_FREE_VARS / RESUME): the prologue did it.
    body = []
    skipping = True
    for ins in bc:
        if skipping and isinstance(ins, Instr) and ins.name in ("MAKE_CELL", "COPY_FREE_VARS",
                                                                "RESUME"):
            continue
        if isinstance(ins, Instr):
            skipping = False
        body.append(ins)
    new = Bytecode(prologue + body)
    new.argnames = stack_args + list(local_names)
    new.argcount = len(new.argnames)
    new.posonlyargcount = 0
    new.kwonlyargcount = 0
    new.first_lineno = code.co_firstlineno
    new.name = name
    new.qualname = name
    new.filename = code.co_filename
    new.docstring = None
    new.cellvars = []
    new.freevars = freevars
    new.flags = bc.flags & ~(0x04 | 0x08)
    return new.to_code()


# frame-sensitive builtins: called through anything but the frame itself they see another
# frame (zero-argument super(), locals(), sys._getframe() ...)
_FRAME_NAMES = {"super", "locals", "vars", "globals", "dir", "eval", "exec", "breakpoint",
                "_getframe", "currentframe", "stack"}


def route_calls(code, map_call, map_fn):
    """``code`` with each call's callable first passed through Python: for ``f(a, ...)``,
    ``map_call(f, (a, ...))`` returns the arguments reversed followed by the callable to call,
    which the code unpacks back onto the stack and calls as the original did (no frame of
    ours between the caller and the callee); for ``f(*a, **k)``, ``map_fn(f)`` gives it. None
    when the code uses what this cannot keep (a frame-sensitive builtin, a bytecode it does
    not know). A skipped frame runs this way, so that the functions it calls are captured,
    as PyTorch's frame hook captures them."""
    from bytecode import Bytecode, Instr
    import sys
    if _FRAME_NAMES & set(code.co_names) or code.co_flags & (0x20 | 0x80 | 0x100 | 0x200):
        return None
    py311 = sys.version_info[:2] == (3, 11)
    bc = Bytecode.from_code(code)
    out, kw = [], None

    def emit(loc, *items):
        out.extend(Instr(*item, location=loc) for item in items)

    def call(loc, n):
        if py311:
            emit(loc, ("PRECALL", n))
        emit(loc, ("CALL", n))

    for ins in bc:
        if not isinstance(ins, Instr):
            out.append(ins)
            continue
        loc = ins.location
        if ins.name == "LOAD_METHOD":  # [method, self] becomes [NULL, bound method]
            emit(loc, ("LOAD_ATTR", ins.arg), ("PUSH_NULL",), ("SWAP", 2))
        elif ins.name == "LOAD_ATTR" and isinstance(ins.arg, tuple):  # 3.12
            if ins.arg[0]:
                emit(loc, ("LOAD_ATTR", (False, ins.arg[1])), ("PUSH_NULL",), ("SWAP", 2))
            else:
                out.append(ins)
        elif ins.name == "LOAD_SUPER_ATTR":
            return None
        elif ins.name == "KW_NAMES":  # moved to just before its call
            kw = ins
        elif ins.name == "PRECALL":
            continue
        elif ins.name == "CALL":
            n = ins.arg
            # [NULL, f, args] -> [NULL, map_call, f, (args)] -> [(args reversed, f')]
            emit(loc, ("BUILD_TUPLE", n), ("LOAD_CONST", map_call), ("SWAP", 3), ("SWAP", 2))
            call(loc, 2)
            emit(loc, ("PUSH_NULL",), ("SWAP", 2), ("UNPACK_SEQUENCE", n + 1))
            if kw is not None:
                out.append(kw)
                kw = None
            call(loc, n)
        elif ins.name == "CALL_FUNCTION_EX":
            depth = 3 if ins.arg & 1 else 2   # f below its args (and kwargs)
            emit(loc, ("SWAP", depth), ("PUSH_NULL",), ("SWAP", 2), ("LOAD_CONST", map_fn),
                 ("SWAP", 2))
            call(loc, 1)
            emit(loc, ("SWAP", depth))
            out.append(ins)
        else:
            out.append(ins)
    new = Bytecode(out)
    for attr in ("argnames", "argcount", "posonlyargcount", "kwonlyargcount", "first_lineno",
                 "name", "qualname", "filename", "docstring", "cellvars", "freevars", "flags"):
        setattr(new, attr, getattr(bc, attr))
    return new.to_code()
