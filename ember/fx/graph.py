"""``Graph``: the FX intermediate representation — an ordered list of Nodes — and its Python
code generator.

A graph owns its nodes (a doubly linked list around a sentinel ``root`` node) and a namespace
that keeps node names unique and legal Python identifiers. ``python_code`` turns the graph into
the source of a ``forward`` function: one statement per node, inputs freed after their last use
(``x = None``), operators printed as Python operators, ember functions by their import path.
"""
import builtins
import contextlib
import enum
import inspect
import keyword
import math
import operator
import re
import typing
from collections import defaultdict

import ember
from .._core import api_name

from .immutable_collections import immutable_dict, immutable_list
from .node import Node, _qualified_name, _type_repr, map_arg

__all__ = ["Graph", "CodeGen", "PythonCode"]

# a pre-PEP 585 generic's origin is the builtin (tuple): name it by its typing alias, as written
_ORIGIN_TYPES = {list: typing.List, dict: typing.Dict, set: typing.Set,
                 frozenset: typing.FrozenSet, tuple: typing.Tuple}

# Names always defined in generated code (PyTorch's _custom_builtins, with ember for torch).
_CUSTOM_BUILTINS = {"inf": math.inf, "nan": math.nan, "NoneType": type(None)}


def _custom_builtins():
    return {**_CUSTOM_BUILTINS, "ember": ember, "device": ember.device}


_RESERVED = set(_CUSTOM_BUILTINS) | {"ember", "device", "torch"}

# operator functions printed as Python operators
_REFLECTABLE = {"add": "{} + {}", "sub": "{} - {}", "mul": "{} * {}", "floordiv": "{} // {}",
                "truediv": "{} / {}", "div": "{} / {}", "mod": "{} % {}", "pow": "{} ** {}",
                "lshift": "{} << {}", "rshift": "{} >> {}", "and_": "{} & {}",
                "or_": "{} | {}", "xor": "{} ^ {}", "getitem": "{}[{}]", "matmul": "{} @ {}"}
_MAGIC = {"eq": "{} == {}", "ne": "{} != {}", "lt": "{} < {}", "gt": "{} > {}",
          "le": "{} <= {}", "ge": "{} >= {}", "pos": "+{}", "neg": "-{}", "invert": "~{}",
          **_REFLECTABLE}
_INPLACE = {"iadd": "{} += {}", "iand": "{} &= {}", "ifloordiv": "{} //= {}",
            "ilshift": "{} <<= {}", "imod": "{} %= {}", "imul": "{} *= {}",
            "imatmul": "{} @= {}", "ior": "{} |= {}", "ipow": "{} **= {}",
            "irshift": "{} >>= {}", "isub": "{} -= {}", "itruediv": "{} /= {}",
            "ixor": "{} ^= {}", "setitem": "{}[{}] = {}"}

_DTYPE_ABBRS = {"bfloat16": "bf16", "float64": "f64", "float32": "f32", "float16": "f16",
                "float8_e4m3fn": "f8e4m3fn", "float8_e5m2": "f8e5m2", "complex32": "c32",
                "complex64": "c64", "complex128": "c128", "int8": "i8", "int16": "i16",
                "int32": "i32", "int64": "i64", "bool": "b8", "uint8": "u8", "uint16": "u16",
                "uint32": "u32", "uint64": "u64"}


class _Namespace:
    """Unique, legal names for nodes and the globals of generated code."""

    _illegal_char = re.compile("[^0-9a-zA-Z_]+")
    _name_suffix = re.compile(r"(.*)_(\d+)$")

    def __init__(self):
        self._obj_to_name = {}
        self._used_names = set()
        self._base_count = defaultdict(int)

    def create_name(self, candidate, obj):
        if obj is not None and obj in self._obj_to_name:
            return self._obj_to_name[obj]
        candidate = self._illegal_char.sub("_", candidate)
        if not candidate:
            candidate = "_unnamed"
        if candidate[0].isdigit():
            candidate = f"_{candidate}"
        match = self._name_suffix.match(candidate)
        if match is None:
            base, num = candidate, None
        else:
            base, num = match.group(1), int(match.group(2))
        candidate = base if num is None else f"{base}_{num}"
        if not num:
            num = self._base_count[base]
        while candidate in self._used_names or self._is_illegal_name(candidate, obj):
            num += 1
            candidate = f"{base}_{num}"
        self._used_names.add(candidate)
        self._base_count[base] = num
        if obj is not None:
            self._obj_to_name[obj] = candidate
        return candidate

    def associate_name_with_obj(self, name, obj):
        self._obj_to_name[obj] = name

    def _rename_object(self, obj, name):
        self._obj_to_name[obj] = name

    def _is_illegal_name(self, name, obj):
        if name in keyword.kwlist:
            return True
        if name in builtins.__dict__:
            return obj is not builtins.__dict__[name]
        if name in _RESERVED:
            return True
        return False


class PythonCode:
    """The result of code generation: ``src``, the ``globals`` it needs, and for each line of
    ``src`` the index of the node it came from (``_lineno_map``)."""

    def __init__(self, src, globals, _lineno_map=None):
        self.src = src
        self.globals = globals
        self._lineno_map = _lineno_map


def _is_identifier(s):
    return s.isidentifier() and not keyword.iskeyword(s)


def _format_target(base, target):
    """``self.a.b`` for a dotted attribute path; non-identifier parts through getattr."""
    r = base
    for elem in target.split("."):
        r = f"{r}.{elem}" if _is_identifier(elem) else f'getattr({r}, "{elem}")'
    return r


def _resolves_to(qualified, obj):
    """Whether the dotted path, read from ember, operator, builtins or math, is ``obj``."""
    head, _, rest = qualified.partition(".")
    roots = {"ember": ember, "operator": operator, "builtins": builtins, "math": math}
    cur = roots.get(head)
    if cur is None or not rest:
        return False
    for part in rest.split("."):
        cur = getattr(cur, part, None)
        if cur is None:
            return False
    return cur is obj


def _tensor_annotation(val):
    """``"f32[2, 3]"``: the annotation ``print_readable`` writes for a value in ``meta['val']``."""
    from .._tensor import Tensor
    if isinstance(val, Tensor):
        dt = str(val.dtype).rpartition(".")[2]
        return f'"{_DTYPE_ABBRS.get(dt, dt)}[{", ".join(str(s) for s in val.shape)}]"'
    if isinstance(val, (tuple, list)) and val and all(isinstance(v, Tensor) for v in val):
        return '"' + "(" + ", ".join(_tensor_annotation(v)[1:-1] for v in val) + \
            ("," if len(val) == 1 else "") + ')"'
    return None


class CodeGen:
    """Writes the Python source of a graph. Subclasses may change the signature and the
    handling of inputs and outputs (``gen_fn_def``, ``generate_output``)."""

    def __init__(self):
        self._body_transformer = None

    def gen_fn_def(self, free_vars, maybe_return_annotation):
        if len(free_vars) == 0 or free_vars[0] != "self":
            free_vars.insert(0, "self")
        return f"def forward({', '.join(free_vars)}){maybe_return_annotation}:"

    def generate_output(self, output_args):
        return f"return {repr(output_args)}"

    def process_inputs(self, *args):
        return args

    def process_outputs(self, outputs):
        return outputs

    def _gen_python_code(self, nodes, root_module, namespace, *, verbose=False):
        free_vars = []
        body = []
        globals_ = dict(_custom_builtins())
        wrapped_fns = {}
        maybe_return_annotation = [""]
        lineno_map = {}

        def add_global(name_hint, obj):
            """The name under which generated code reaches ``obj``."""
            if _resolves_to(name_hint, obj) and name_hint.split(".")[0] in ("ember",):
                return name_hint  # ember.relu, ember.ops.aten.add.Tensor: 'ember' is global
            global_name = namespace.create_name(name_hint, obj)
            if global_name in globals_:
                assert globals_[global_name] is obj
                return global_name
            globals_[global_name] = obj
            return global_name

        def type_repr(o):
            if o is type(None):
                return "None"
            if o == ():  # Tuple[()]
                return "()"
            origin = getattr(o, "__origin__", None)
            if origin is not None:
                # typing.Tuple[Tensor, Tensor], list[int]: the generic itself is a global too
                if isinstance(o, typing._GenericAlias):
                    origin = _ORIGIN_TYPES.get(origin, origin)
                name = origin.__qualname__ if isinstance(origin, type) \
                    and origin.__module__ == "builtins" else \
                    add_global(_type_repr(origin).replace(".", "_"), origin)
                args = typing.get_args(o)
                return f"{name}[{','.join(type_repr(a) for a in args)}]" if args else name
            if isinstance(o, type):
                if o.__module__ == "builtins":
                    return o.__qualname__
                return add_global(_type_repr(o).replace(".", "_"), o)
            return repr(o)

        def _get_repr(arg):
            """Source text for a constant (or Node) in an argument list."""
            if isinstance(arg, Node):
                return repr(arg)
            if isinstance(arg, tuple) and hasattr(arg, "_fields"):
                qualified = add_global(type(arg).__name__, type(arg))
                return f"{qualified}({', '.join(_get_repr(a) for a in arg)})"
            if isinstance(arg, (tuple, immutable_list, list)):
                inner = ", ".join(_get_repr(a) for a in arg)
                if isinstance(arg, tuple):
                    return f"({inner}{',' if len(arg) == 1 else ''})"
                return f"[{inner}]"
            if isinstance(arg, (dict, immutable_dict)):
                return "{" + ", ".join(f"{_get_repr(k)}: {_get_repr(v)}"
                                       for k, v in arg.items()) + "}"
            if isinstance(arg, slice):
                return f"slice({_get_repr(arg.start)}, {_get_repr(arg.stop)}, " \
                       f"{_get_repr(arg.step)})"
            if isinstance(arg, float) and (math.isinf(arg) or math.isnan(arg)):
                return repr(arg) if not math.isinf(arg) else ("inf" if arg > 0 else "-inf")
            if isinstance(arg, type):
                return type_repr(arg)
            if callable(arg) and not isinstance(arg, type) and \
                    getattr(arg, "__name__", "<lambda>") != "<lambda>" and \
                    not _is_ember_value(arg):
                return add_global(_qualified_name(arg), arg)
            if _is_ember_value(arg):
                return api_name.ember_repr(arg)
            if arg is None or arg is Ellipsis or \
                    isinstance(arg, (bool, int, float, complex, str, bytes, range)):
                return repr(arg)
            if isinstance(arg, enum.Enum):
                return f"{add_global(type(arg).__name__, type(arg))}.{arg.name}"
            # any other object has no source text (its repr is not Python): the code reaches
            # it as a global; an unhashable one (a dataclass) gets a name per use
            hint = type(arg).__name__.lower()
            try:
                return add_global(hint, arg)
            except TypeError:
                name = namespace.create_name(hint, None)
                globals_[name] = arg
                return name

        def _format_args(args, kwargs):
            parts = [_get_repr(a) for a in args]
            parts += [f"{k} = {_get_repr(v)}" for k, v in kwargs.items()]
            return ", ".join(parts)

        # the last use of each value: free it right after (as eager Python would)
        node_to_last_use = {}
        user_to_last_uses = {}

        def register_last_uses(n, user):
            if n not in node_to_last_use:
                node_to_last_use[n] = user
                user_to_last_uses.setdefault(user, []).append(n)

        for node in reversed(nodes):
            for input_node in node._input_nodes:
                register_last_uses(input_node, node)

        def delete_unused_values(user):
            if user.op == "placeholder":
                return
            if user.op == "output":
                body.append("\n")
                return
            to_delete = list(user_to_last_uses.get(user, []))
            if len(user.users) == 0:
                to_delete.append(user)
            if to_delete:
                body.append(f";  {' = '.join([repr(n) for n in to_delete] + ['None'])}\n")
            else:
                body.append("\n")

        prev_stacktrace = None

        def append_stacktrace_summary(node):
            nonlocal prev_stacktrace
            if node.op in ("placeholder", "output"):
                return
            st = node.meta.get("stack_trace", None)
            if st:
                if st != prev_stacktrace:
                    prev_stacktrace = st
                    summary = _stack_trace_summary(st)
                    if summary:
                        body.append(f"\n {summary}\n")
            elif prev_stacktrace != "":
                prev_stacktrace = ""
                body.append("\n# No stacktrace found for following nodes\n")

        def annotation(node):
            if not verbose:
                return ""
            a = _tensor_annotation(node.meta.get("val"))
            return f": {a}" if a else ""

        def emit_node(node):
            ann = annotation(node)
            if node.op == "placeholder":
                assert isinstance(node.target, str)
                default = "" if not node.args else f" = {_get_repr(node.args[0])}"
                typ = f": {type_repr(node.type)}" if node.type else ann
                free_vars.append(f"{node.target}{typ}{default}")
                raw_name = node.target.replace("*", "")
                if raw_name != repr(node):
                    body.append(f"{repr(node)} = {raw_name}\n")
                return
            if node.op == "call_method":
                assert isinstance(node.target, str)
                body.append(f"{repr(node)}{ann} = {_format_target(_get_repr(node.args[0]), node.target)}"
                            f"({_format_args(node.args[1:], node.kwargs)})")
                return
            if node.op == "call_function":
                target = node.target
                name = getattr(target, "__name__", None)
                if getattr(target, "__module__", "") == "_operator" and name in _MAGIC and \
                        getattr(operator, name, None) is target and not node.kwargs:
                    body.append(f"{repr(node)}{ann} = "
                                f"{_MAGIC[name].format(*(_get_repr(a) for a in node.args))}")
                    return
                if getattr(target, "__module__", "") == "_operator" and name in _INPLACE and \
                        getattr(operator, name, None) is target and not node.kwargs:
                    body.append(f"{_INPLACE[name].format(*(_get_repr(a) for a in node.args))};  "
                                f"{repr(node)}{ann} = {_get_repr(node.args[0])}")
                    return
                qualified = _qualified_name(target)
                global_name = add_global(qualified, target)
                if target is builtins.getattr and len(node.args) == 2 and \
                        isinstance(node.args[1], str) and _is_identifier(node.args[1]):
                    body.append(f"{repr(node)}{ann} = "
                                f"{_format_target(_get_repr(node.args[0]), node.args[1])}")
                    return
                body.append(f"{repr(node)}{ann} = {global_name}"
                            f"({_format_args(node.args, node.kwargs)})")
                if node.meta.get("is_wrapped", False):
                    wrapped_fns.setdefault(global_name)
                return
            if node.op == "call_module":
                assert isinstance(node.target, str)
                body.append(f"{repr(node)}{ann} = {_format_target(root_module, node.target)}"
                            f"({_format_args(node.args, node.kwargs)})")
                return
            if node.op == "get_attr":
                assert isinstance(node.target, str)
                body.append(f"{repr(node)}{ann} = {_format_target(root_module, node.target)}")
                return
            if node.op == "output":
                if node.type is not None:
                    maybe_return_annotation[0] = f" -> {type_repr(node.type)}"
                body.append(self.generate_output(node.args[0]))
                return
            raise NotImplementedError(f"node: {node.op} {node.target}")

        newlines, counted = 0, 0
        for i, node in enumerate(nodes):
            if verbose:
                append_stacktrace_summary(node)
            # the line the node's statement starts on (counted after the header)
            newlines += sum(piece.count("\n") for piece in body[counted:])
            counted = len(body)
            lineno_map[newlines] = i
            emit_node(node)
            delete_unused_values(node)

        if len(body) == 0:
            body.append("pass\n")
        if self._body_transformer:
            body = self._body_transformer(body)

        for name, value in self.additional_globals():
            add_global(name, value)

        prologue = self.gen_fn_def(free_vars, maybe_return_annotation[0])
        code = "".join(body).lstrip("\n")
        code = "\n".join("    " + line for line in code.split("\n"))
        wrap_stmts = "\n".join(f'ember.fx._symbolic_trace.wrap("{name}")'
                               for name in wrapped_fns)
        fn_code = f"\n{wrap_stmts}\n\n{prologue}\n{code}"
        # the header is three lines (blank, wrap statements, blank) plus the def line
        prologue_lines = fn_code[:fn_code.index(prologue)].count("\n") + 1
        lineno_map = {k + prologue_lines: v for k, v in lineno_map.items()}
        return PythonCode(fn_code, globals_, _lineno_map=lineno_map)

    def additional_globals(self):
        return []


def _is_ember_value(arg):
    """dtypes, devices, layouts and memory formats print as ``ember.float32`` etc."""
    r = api_name.ember_repr(arg)
    return r.startswith("ember.") or r.startswith("device(")


def _stack_trace_summary(stack_trace):
    """``# File: path:line in fn, code: source`` for the innermost user frame of a trace."""
    lines = [ln for ln in stack_trace.strip().split("\n")]
    pat = re.compile(r'^File "(.+)", line (\d+), in (.+)$')
    for idx in range(len(lines) - 2, -1, -1):
        m = pat.match(lines[idx].strip())
        if m:
            file, lineno, name = m.groups()
            code = lines[idx + 1].strip() if idx + 1 < len(lines) else ""
            return f"# File: {file}:{lineno} in {name}, code: {code}"
    return None


class _InsertPoint:
    def __init__(self, graph, new_insert):
        self.graph = graph
        self.orig_insert, graph._insert = graph._insert, new_insert

    def __enter__(self):
        pass

    def __exit__(self, type, value, tb):
        self.graph._insert = self.orig_insert


class _node_list:
    """The nodes of a graph, in order (or reversed), as a live view of the linked list."""

    def __init__(self, graph, direction="_next"):
        assert direction in ("_next", "_prev")
        self.graph = graph
        self.direction = direction

    def __len__(self):
        return self.graph._len

    def __iter__(self):
        root = self.graph._root
        cur = getattr(root, self.direction)
        while cur is not root:
            if not cur._erased:
                yield cur
            cur = getattr(cur, self.direction)

    def __reversed__(self):
        return _node_list(self.graph, "_next" if self.direction == "_prev" else "_prev")


class Graph:
    """An ordered list of Nodes; see the module docstring."""

    def __init__(self, owning_module=None, tracer_cls=None, tracer_extras=None):
        self._root = Node(self, "", "root", "", (), {})
        self._used_names = {}
        self._insert = self._root.prepend
        self._len = 0
        self._graph_namespace = _Namespace()
        self._owning_module = owning_module
        self._tracer_cls = tracer_cls
        self._tracer_extras = tracer_extras
        self._codegen = CodeGen()
        self._co_fields = {}
        self._find_nodes_lookup_table = None

    @property
    def owning_module(self):
        return self._owning_module

    @owning_module.setter
    def owning_module(self, mod):
        self._owning_module = mod

    @property
    def nodes(self):
        """The nodes in order; the list may be changed while it is iterated over."""
        return _node_list(self)

    def find_nodes(self, *, op, target=None, sort=True):
        return [n for n in self.nodes if n.op == op and (target is None or n.target == target)]

    # -- creating nodes ---------------------------------------------------------------------
    def create_node(self, op, target, args=None, kwargs=None, name=None, type_expr=None):
        """Insert a node at the insert point (by default, the end) and return it."""
        args = () if args is None else args
        kwargs = {} if kwargs is None else kwargs
        if not isinstance(args, tuple):
            raise AssertionError("args must be a tuple")
        if not isinstance(kwargs, dict):
            raise AssertionError("kwargs must be a dict")
        candidate = name if name is not None else self._target_to_str(target)
        name = self._graph_namespace.create_name(candidate, None)
        n = Node(self, name, op, target, args, kwargs, type_expr)
        self._graph_namespace.associate_name_with_obj(name, n)
        self._insert(n)
        self._len += 1
        return n

    def placeholder(self, name, type_expr=None, default_value=inspect.Signature.empty):
        args = () if default_value is _EMPTY else (default_value,)
        return self.create_node("placeholder", name, args=args, type_expr=type_expr)

    def get_attr(self, qualified_name, type_expr=None):
        mod = self.owning_module
        if mod is not None and not _has_attr_path(mod, qualified_name):
            import warnings
            warnings.warn("Attempted to insert a get_attr Node with no underlying reference "
                          "in the owning GraphModule! Call GraphModule.add_submodule to add "
                          "the necessary submodule, GraphModule.add_parameter to add the "
                          "necessary Parameter, or nn.Module.register_buffer to add the "
                          "necessary buffer", stacklevel=2)
        return self.create_node("get_attr", qualified_name, type_expr=type_expr)

    def call_module(self, module_name, args=None, kwargs=None, type_expr=None):
        mod = self.owning_module
        if mod is not None and not _has_attr_path(mod, module_name):
            import warnings
            warnings.warn("Attempted to insert a call_module Node with no underlying "
                          "reference in the owning GraphModule! Call "
                          "GraphModule.add_submodule to add the necessary submodule",
                          stacklevel=2)
        return self.create_node("call_module", module_name, args, kwargs, type_expr=type_expr)

    def call_method(self, method_name, args=None, kwargs=None, type_expr=None):
        return self.create_node("call_method", method_name, args, kwargs, type_expr=type_expr)

    def call_function(self, the_function, args=None, kwargs=None, type_expr=None, name=None):
        return self.create_node("call_function", the_function, args, kwargs, name=name,
                                type_expr=type_expr)

    def output(self, result, type_expr=None):
        return self.create_node(op="output", target="output", args=(result,),
                                type_expr=type_expr)

    def node_copy(self, node, arg_transform=lambda x: x):
        """Copy ``node`` (from any graph) into this one; ``arg_transform`` maps its input
        nodes to nodes of this graph."""
        args = map_arg(node.args, arg_transform)
        kwargs = map_arg(node.kwargs, arg_transform)
        assert isinstance(args, tuple) and isinstance(kwargs, dict)
        result = self.create_node(node.op, node.target, args, kwargs, node.name, node.type)
        result.meta = dict(node.meta)
        return result

    def graph_copy(self, g, val_map, return_output_node=False):
        """Copy every node of ``g`` into this graph (not its output); ``val_map`` maps
        ``g``'s nodes to the copies and is filled in. Returns the copied output value."""
        for node in g.nodes:
            if node in val_map:
                continue
            if node.op == "output":
                rv = map_arg(node.args[0], lambda n: val_map[n])
                return rv if not return_output_node else (rv, node)
            val_map[node] = self.node_copy(node, lambda n: val_map[n])
        return None

    def __deepcopy__(self, memo=None):
        memo = memo if memo else {}
        g = Graph(tracer_cls=self._tracer_cls)
        output_vals = g.graph_copy(self, val_map=memo, return_output_node=True)
        g._codegen = _copy_codegen(self._codegen)
        if output_vals is not None:
            assert isinstance(output_vals, tuple)
            output_val, old_output_node = output_vals
            new_output_node = g.output(output_val, type_expr=getattr(old_output_node, "type",
                                                                     None))
            new_output_node.meta = dict(old_output_node.meta)
        return g

    def erase_node(self, to_erase):
        """Remove a node nobody reads."""
        if len(to_erase.users) > 0:
            raise RuntimeError(f"Tried to erase Node {to_erase} but it still had "
                               f"{len(to_erase.users)} users in the graph: {to_erase.users}!")
        if to_erase.graph is not self:
            raise RuntimeError(f"Attempting to remove {to_erase} from wrong graph!")
        if to_erase._erased:
            import warnings
            warnings.warn(f"erase_node({to_erase}) on an already erased node")
            return
        to_erase._remove_from_list()
        to_erase._erased = True
        self._len -= 1
        # drop its uses of its inputs
        to_erase._Node__update_args_kwargs((), {})

    # -- insert points ----------------------------------------------------------------------
    def inserting_before(self, n=None):
        if n is None:
            return self.inserting_after(self._root)
        assert n.graph is self, "Node to insert before is not in graph."
        return _InsertPoint(self, n.prepend)

    def inserting_after(self, n=None):
        if n is None:
            return self.inserting_before(self._root)
        assert n.graph is self, "Node to insert after is not in graph."
        return _InsertPoint(self, n.append)

    # -- passes -----------------------------------------------------------------------------
    def eliminate_dead_code(self, is_impure_node=None):
        """Erase nodes without users and without side effects; returns whether any were."""
        self.lint()
        changed = False
        for node in reversed(self.nodes):
            impure = is_impure_node(node) if is_impure_node is not None else node.is_impure()
            if not impure and len(node.users) == 0:
                self.erase_node(node)
                changed = True
        return changed

    def lint(self):
        """Check the graph is well formed: each node's inputs are defined before it and in
        this graph, use lists agree with arguments, names are unique, targets exist."""
        def check_arg(arg, n=None):
            context_str = f" of Node '{n}' " if n else " "
            if arg.graph is not self:
                raise RuntimeError(f"Argument '{arg}'{context_str}does not belong to this "
                                   f"Graph, but was used as an argument! If you are copying "
                                   f"nodes from another graph, make sure to use "
                                   f"``arg_transform`` on node_copy() to remap values\n{self}")
            if arg not in seen_values:
                raise RuntimeError(f"Argument '{arg}'{context_str}was used before it has been "
                                   f"defined! Please check that Nodes in the graph are "
                                   f"topologically ordered\n{self}")

        seen_names = set()
        seen_values = set()
        for node in self.nodes:
            if node.op not in ("placeholder", "call_method", "call_module", "call_function",
                               "get_attr", "output"):
                raise RuntimeError(f"Node {node} had unknown opcode {node.op}!")
            if node.graph is not self:
                raise RuntimeError(f"Node '{node}' does not belong to this Graph!")
            for arg in node._input_nodes:
                check_arg(arg, node)
                if node not in arg.users:
                    raise RuntimeError(f"Node {node} is not in the users of its input {arg}")
            for user in node.users:
                if node not in user._input_nodes:
                    raise RuntimeError(f"Node {user} is a user of {node} but does not read it")
            seen_values.add(node)
            if node.name in seen_names:
                raise RuntimeError(f"Node redefined name {node.name}!")
            seen_names.add(node.name)

        if self.owning_module:
            for node in self.nodes:
                if node.op == "call_module" and \
                        not _is_module(_attr_path(self.owning_module, node.target)):
                    raise RuntimeError(f"Node {node} target {node.target} is not a module "
                                       f"of the owning module")
                if node.op == "get_attr" and not _has_attr_path(self.owning_module,
                                                                node.target):
                    import warnings
                    warnings.warn(f"Node {node} target {node.target} {node.target} does not "
                                  f"reference an nn.Module, nn.Parameter, or buffer, which "
                                  f"is what 'get_attr' Nodes typically target")

    # -- printing and code ------------------------------------------------------------------
    def __str__(self):
        maybe_return_typename = [""]
        node_strs = [node.format_node(maybe_return_typename=maybe_return_typename)
                     for node in self.nodes]
        s = f"graph(){maybe_return_typename[0]}:"
        for node_str in node_strs:
            if node_str:
                s += "\n    " + node_str
        return s

    def print_tabular(self):
        """Print the nodes as a table (opcode, name, target, args, kwargs), as PyTorch does
        with the ``tabulate`` package (its "simple" format; written here without it)."""
        rows = [[n.op, n.name, str(n.target), str(n.args), str(n.kwargs)] for n in self.nodes]
        print(_tabulate(rows, ["opcode", "name", "target", "args", "kwargs"]))

    def python_code(self, root_module, *, verbose=False, include_stride=False,
                    include_device=False, colored=False):
        """The ``forward`` source for this graph; ``root_module`` names the module object
        in the generated code (``"self"``)."""
        namespace = _Namespace()
        # node names first, so globals never shadow a value
        for node in self.nodes:
            namespace.create_name(node.name, node)
        return self._codegen._gen_python_code(list(self.nodes), root_module, namespace,
                                              verbose=verbose)

    def _target_to_str(self, target):
        if callable(target) and not isinstance(target, str):
            op = getattr(target, "__name__", None) or str(target)
            from .._ops.overload import OpOverload
            if isinstance(target, OpOverload):
                op = target._opname
        else:
            assert isinstance(target, str)
            op = target
            if _is_magic(op):
                op = op[2:-2]
        return _snake_case(op)

    def set_codegen(self, codegen):
        self._codegen = codegen

    def on_generate_code(self, make_transformer):
        on_gen_code_old = self._codegen._body_transformer
        self._codegen._body_transformer = make_transformer(on_gen_code_old)

        @contextlib.contextmanager
        def on_generate_code_context_manager():
            try:
                yield
            finally:
                self._codegen._body_transformer = on_gen_code_old
        return on_generate_code_context_manager()


def _copy_codegen(cg):
    import copy
    return copy.copy(cg)


_EMPTY = inspect.Signature.empty


def _is_magic(x):
    return x.startswith("__") and x.endswith("__")


def _snake_case(s):
    """``camelCase`` -> ``camel_case``, as PyTorch names nodes after modules/targets."""
    chars = []
    prev_lower = False
    for c in s:
        if prev_lower and c.isupper():
            chars.append("_")
        chars.append(c.lower())
        prev_lower = c.islower()
    return "".join(chars)


def _attr_path(obj, target):
    for atom in target.split("."):
        if not hasattr(obj, atom):
            return None
        obj = getattr(obj, atom)
    return obj


def _has_attr_path(obj, target):
    for atom in target.split("."):
        if not hasattr(obj, atom):
            return False
        obj = getattr(obj, atom)
    return True


def _is_module(obj):
    from ..nn import Module
    return isinstance(obj, Module)


def _tabulate(rows, headers):
    """A table in ``tabulate``'s "simple" format: columns two spaces apart, each at least two
    wider than its header, a dashed rule under the headers, left-aligned text."""
    widths = [max([len(h) + 2] + [len(r[i]) for r in rows]) for i, h in enumerate(headers)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(headers, widths)),
             "  ".join("-" * w for w in widths)]
    lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths)) for r in rows]
    return "\n".join(lines)
