"""Sources: where a value captured by Dynamo was read from (a local, a global, an attribute, an
item, a closure cell). A source names the value for guards and logs (``L['x']``, ``G['w']``,
``L['self'].fc.weight``, PyTorch's spelling) and gives the Python expression that reads it again
in the generated guard and residual functions, whose parameters are the frame's arguments."""

import enum
import keyword

__all__ = ["local_expr", "Source", "LocalSource", "GlobalSource", "AttrSource", "HasAttrSource",
           "GetItemSource", "ClosureSource", "CellContentsSource", "DefaultsSource",
           "ModuleGlobalSource", "TensorProperty", "TensorPropertySource", "EnvironSource"]


def local_expr(name):
    """The parameter name a frame's local ``name`` gets in generated code. Locals need not be
    identifiers: pytest's assertion rewriting names them ``@py_assert1``; those are spelled
    ``___L_40_py_assert1`` (the code points of the other characters, in hex)."""
    if name.isidentifier() and not keyword.iskeyword(name):
        return name
    return "___L_" + "".join(c if c.isalnum() or c == "_" else f"{ord(c):x}_" for c in name)


class Source:
    guard_source = "local"

    def name(self):
        raise NotImplementedError

    def expr(self):
        raise NotImplementedError

    def __eq__(self, other):
        return type(self) is type(other) and self.name() == other.name()

    def __hash__(self):
        return hash(self.name())

    def __repr__(self):
        return self.name()


class LocalSource(Source):
    def __init__(self, local_name):
        self.local_name = local_name

    def name(self):
        return f"L[{self.local_name!r}]"

    def expr(self):
        return local_expr(self.local_name)


class GlobalSource(Source):
    guard_source = "global"

    def __init__(self, global_name):
        self.global_name = global_name

    def name(self):
        return f"G[{self.global_name!r}]"

    def expr(self):
        return f"___G[{self.global_name!r}]"


class ModuleGlobalSource(Source):
    """A global of another module (read by an inlined function): ``sys.modules[m].name``."""
    guard_source = "global"

    def __init__(self, module_name, global_name):
        self.module_name, self.global_name = module_name, global_name

    def name(self):
        return f"G[{self.module_name!r}].{self.global_name}"

    def expr(self):
        return f"___sys_modules[{self.module_name!r}].__dict__[{self.global_name!r}]"


class ClosureSource(Source):
    """A free variable of the compiled function: ``fn.__closure__[i].cell_contents``."""

    def __init__(self, index, var_name):
        self.index, self.var_name = index, var_name

    def name(self):
        return f"L[{self.var_name!r}]"

    def expr(self):
        return f"___closure[{self.index}].cell_contents"


class CellContentsSource(Source):
    """A free variable of an inlined function reached from ``fn_source``:
    ``fn.__closure__[i].cell_contents``."""

    def __init__(self, fn_source, index, var_name):
        self.fn_source, self.index, self.var_name = fn_source, index, var_name
        self.guard_source = fn_source.guard_source

    def name(self):
        return f"{self.fn_source.name()}.__closure__[{self.index}].cell_contents"

    def expr(self):
        return f"___getattr({self.fn_source.expr()}, '__closure__')[{self.index}].cell_contents"


class AttrSource(Source):
    def __init__(self, base, member):
        self.base, self.member = base, member
        self.guard_source = base.guard_source

    def name(self):
        if self.member.isidentifier():
            return f"{self.base.name()}.{self.member}"
        return f"getattr({self.base.name()}, {self.member!r})"

    def expr(self):
        return self.expr_with_base(self.base.expr())

    def expr_with_base(self, b):
        if self.member.isidentifier() and not self.member.startswith("__"):
            return f"{b}.{self.member}"
        return f"___getattr({b}, {self.member!r})"


class HasAttrSource(Source):
    """``hasattr(base, member)``: guarded where captured code found an attribute missing
    (an AttributeError it caught, ``getattr``'s default, ``hasattr``)."""

    def __init__(self, base, member):
        self.base, self.member = base, member
        self.guard_source = base.guard_source

    def name(self):
        return f"hasattr({self.base.name()}, {self.member!r})"

    def expr(self):
        return self.expr_with_base(self.base.expr())

    def expr_with_base(self, b):
        return f"___hasattr({b}, {self.member!r})"


class GetItemSource(Source):
    def __init__(self, base, index):
        self.base, self.index = base, index
        self.guard_source = base.guard_source

    def name(self):
        return f"{self.base.name()}[{self.index!r}]"

    def expr(self):
        return self.expr_with_base(self.base.expr())

    def expr_with_base(self, b):
        return f"{b}[{self.index!r}]"


class EnvironSource(Source):
    """``os.environ.get(key)``: an environment variable read by captured code."""
    guard_source = "global"

    def __init__(self, key):
        self.key = key

    def name(self):
        return f"os.environ.get({self.key!r})"

    def expr(self):
        return f"___sys_modules['os'].environ.get({self.key!r})"


def iter_rest(it):
    """The items a tuple/list/range iterator has left, without advancing it."""
    _, (seq,), pos = it.__reduce__()
    return tuple(seq[pos:])


class IterItemSource(Source):
    """Item ``index`` of what an iterator passed to a resume function has left."""

    def __init__(self, base, index):
        self.base, self.index = base, index
        self.guard_source = base.guard_source

    def name(self):
        return f"___iter_rest({self.base.name()})[{self.index}]"

    def expr(self):
        return self.expr_with_base(self.base.expr())

    def expr_with_base(self, b):
        return f"___iter_rest({b})[{self.index}]"


class DefaultsSource(Source):
    """A default argument value of an inlined function (``fn.__defaults__[i]``)."""

    def __init__(self, fn_source, index, kw=False):
        self.fn_source, self.index, self.kw = fn_source, index, kw

    def name(self):
        attr = "__kwdefaults__" if self.kw else "__defaults__"
        return f"{self.fn_source.name()}.{attr}[{self.index!r}]"

    def expr(self):
        attr = "__kwdefaults__" if self.kw else "__defaults__"
        return f"___getattr({self.fn_source.expr()}, {attr!r})[{self.index!r}]"


class TensorProperty(enum.Enum):
    SIZE = 0
    STRIDE = 1
    STORAGE_OFFSET = 2

    def method_name(self):
        return ("size", "stride", "storage_offset")[self.value]


class TensorPropertySource(Source):
    """A size or stride of a tensor read from ``base`` (the sources of symbolic sizes):
    named ``L['x'].size()[0]`` as PyTorch, read as ``x._size[0]``."""

    def __init__(self, base, prop, idx=None):
        self.base, self.prop, self.idx = base, prop, idx
        self.guard_source = getattr(base, "guard_source", "local")

    def name(self):
        if self.prop is TensorProperty.STORAGE_OFFSET:
            return f"{self.base.name()}.storage_offset()"
        return f"{self.base.name()}.{self.prop.method_name()}()[{self.idx}]"

    def expr(self):
        return self.expr_with_base(self.base.expr())

    def expr_with_base(self, b):
        attr = ("_size", "_stride", "_offset")[self.prop.value]
        return f"{b}.{attr}" + (f"[{self.idx}]" if self.idx is not None else "")
