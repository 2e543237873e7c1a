"""OutputGraph: what one capture produces — the fx graph of ember calls (inputs are the tensors
read from the frame, each with its Source), the guards, the side effects to replay, and the
residual Python function that calls the compiled graph, replays the side effects, runs a graph
break's instruction eagerly and calls the resume function (``<ember dynamo residual ...>`` in
tracebacks; ``TORCH_LOGS=bytecode`` prints it: the residual code is readable Python)."""
import dataclasses
import dis
import functools
import itertools
import logging
import operator
import sys
import traceback
import warnings
from collections.abc import Hashable

from .._core.api_name import as_ember
from .. import _C
from .._core.symint import SymInt
from .._dispatch import tls as _tls
from ..fx import Graph, GraphModule
from . import config
from .exc import BackendCompilerFailed, Unsupported
from .guards import GuardSet
from .utils import dynamo_timed, warn_from
from .variables import (ConstantVariable, ConstDictVariable, ListVariable, NNModuleVariable,
                        NamedTupleVariable, NullVariable, TensorVariable, TupleVariable,
                        WithExitVariable)
from .variables.base import VariableTracker, unimplemented
from .variables.builder import wrap_constant_like
from .variables.lists import BaseListVariable
from .variables.misc import (TracedFunctionVariable, TracedObjectVariable,
                             UserDefinedObjectVariable, rebuild_function, rebuild_object)

__all__ = ["OutputGraph", "GraphCompileReason", "SideEffects"]

graph_code_log = logging.getLogger("ember._dynamo.__graph_code")
graph_breaks_log = logging.getLogger("ember._dynamo.__graph_breaks")


@dataclasses.dataclass
class GraphCompileReason:
    """Why a graph was compiled (PyTorch's class of the same name)."""
    reason: str
    user_stack: list
    graph_break: bool = True


_EMPTY_CELL = VariableTracker()  # a real cell's pending contents after ``del`` of it


class SideEffects:
    """Mutations of objects that exist outside the trace, replayed after the graph."""

    def __init__(self, output):
        self.output = output
        self.tracked = {}      # id(real list/dict) -> (real, vt): one VT per object
        self.mutated = {}      # id(vt) -> vt, containers from the frame that were mutated
        self.attrs = {}        # id(obj vt) -> (obj vt, {name: vt})
        self.globals = {}      # (id(globals), name) -> (globals, name, vt)
        self.cells = {}        # id(cell) -> (cell, vt, expr written)
        self.cell_exprs = {}   # id(cell) -> (cell, first expression it was reached by)
        self.calls = []        # (function, args vts, kwargs vts): logging, run after the graph

    def track_list(self, vt, real):
        if vt.source is None:
            return vt
        hit = self.tracked.get(id(real))
        if hit is not None:
            if hit[1].source != vt.source:
                self.output.guards.alias(vt.source, hit[1].source)
            return hit[1]
        self.tracked[id(real)] = (real, vt)
        return vt

    def mutate(self, vt):
        if vt.source is not None:
            self.mutated[id(vt)] = vt

    def store_attr(self, obj, name, value):
        if not isinstance(obj, (NNModuleVariable, UserDefinedObjectVariable)) or obj.source is None:
            unimplemented(f"attribute write {name!r} on {obj}")
        self.attrs.setdefault(id(obj), (obj, {}))[1][name] = value

    def pending_attr(self, obj, name):
        hit = self.attrs.get(id(obj))
        return hit[1].get(name) if hit is not None else None

    def store_global(self, g, name, value):
        self.globals[(id(g), name)] = (g, name, value)

    def pending_global(self, g, name):
        hit = self.globals.get((id(g), name))
        return hit[2] if hit is not None else None

    def cell_reached(self, cell, expr):
        """A real cell read or written through ``expr`` (None: the cell itself, a constant).
        Reached through two expressions (the frame's closure and a closure it was given,
        which is guarded on its code only), the trace takes them for one cell: guarded."""
        first = self.cell_exprs.setdefault(id(cell), (cell, expr))[1]
        if first != expr:
            g = self.output.guards
            g.same_object(first if first is not None else g.const(cell),
                          expr if expr is not None else g.const(cell))

    def store_cell(self, cell, value, expr=None):
        self.cells[id(cell)] = (cell, value, expr)

    def delete_cell(self, cell, expr=None):
        self.cells[id(cell)] = (cell, _EMPTY_CELL, expr)

    def pending_cell(self, cell):
        """What the trace last stored in ``cell`` (None: nothing; ``_EMPTY_CELL``: deleted)."""
        hit = self.cells.get(id(cell))
        return hit[1] if hit is not None else None  # (cell, value, expr)

    def codegen(self, cg):
        for vt in self.mutated.values():
            target = cg.source_expr(vt.source)
            if isinstance(vt, ListVariable):
                cg.lines.append(f"{target}[:] = {BaseListVariable.reconstruct(vt, cg)}")
            elif isinstance(vt, ConstDictVariable):
                # the new items first: they may be read from the dict itself (d[k] kept)
                items, t = cg.temp(), cg.temp()
                cg.lines.append(f"{items} = {ConstDictVariable.reconstruct(vt, cg)}")
                cg.lines.append(f"{t} = {target}")
                cg.lines.append(f"{t}.clear()")
                cg.lines.append(f"{t}.update({items})")
        for obj, attrs in self.attrs.values():
            o = cg.source_expr(obj.source)
            for name, v in attrs.items():
                cg.lines.append(f"___setattr({o}, {name!r}, {cg.reconstruct(v)})")
        for g, name, v in self.globals.values():
            gexpr = "___G" if g is self.output.root_globals else cg.const(g)
            cg.lines.append(f"{gexpr}[{name!r}] = {cg.reconstruct(v)}")
        for cell, v, expr in self.cells.values():
            target = expr or cg.const(cell)
            if v is _EMPTY_CELL:
                cg.lines.append(f"del {target}.cell_contents")
            else:
                cg.lines.append(f"{target}.cell_contents = {cg.reconstruct(v)}")
        for fn, args, kwargs in self.calls:
            parts = [cg.reconstruct(a) for a in args] + \
                [f"{k}={cg.reconstruct(v)}" for k, v in kwargs.items()]
            cg.lines.append(f"{cg.const(fn, 'log')}({', '.join(parts)})")


class ResidualCodegen:
    """Builds the residual function's body; ``collect`` mode only finds the tensors that the
    body needs from the graph."""

    def __init__(self, ns, out_index=None, collect=False):
        self.lines = []
        self.ns = ns
        self.out_index = out_index or {}
        self.collect = collect
        self.tensors = []
        self.cache = {}
        self._consts = {}
        self._ntemp = 0

    def const(self, value, hint=None):
        key = id(value)
        if key in self._consts:
            return self._consts[key]
        hint = hint or getattr(value, "__name__", None)
        if not (isinstance(hint, str) and hint.isidentifier()):
            hint = "const"
        name = f"___{hint.strip('_')}_{len(self._consts)}"
        if hint.startswith("__compiled_fn") or hint.startswith("__resume_at"):
            name = hint
        self._consts[key] = name
        self.ns[name] = value
        return name

    def temp(self):
        self._ntemp += 1
        return f"___tmp_{self._ntemp}"

    def source_expr(self, src):
        return src.expr()

    def tensor_expr(self, vt):
        node = vt.node
        if node.op == "placeholder":
            return node.meta["source"].expr()
        if node.op == "get_attr":
            return self.const(node.meta["real"])
        if self.collect:
            self.tensors.append(node)
            return "___out[?]"
        return f"___out[{self.out_index[node]}]"

    def reconstruct(self, vt):
        if isinstance(vt, TensorVariable):
            return self.tensor_expr(vt)
        if vt.source is not None and not isinstance(vt, ConstantVariable):
            return self.source_expr(vt.source)
        if isinstance(vt, WithExitVariable):
            hit = self.cache.get(id(vt))
            if hit is None:
                hit = self.cache[id(vt)] = vt.reconstruct(self)
            return hit
        if isinstance(vt, (ListVariable, ConstDictVariable)):
            hit = self.cache.get(id(vt))
            if hit is None:
                e = vt.reconstruct(self)
                hit = self.cache[id(vt)] = self.temp()
                self.lines.append(f"{hit} = {e}")
            return hit
        try:
            return vt.reconstruct(self)
        except Unsupported:
            # functions, classes, modules and other objects known at capture time
            if isinstance(vt, (BaseListVariable, ConstDictVariable)) or \
                    not vt.is_python_constant():
                raise
            return self.const(vt.as_python_constant())


class OutputGraph:
    def __init__(self, code, f_globals, compiler_fn, label, frame_state):
        from .._subclasses.fake_tensor import FakeTensorMode
        from ..amp import autocast_mode as _am
        self.code = code
        self.root_globals = f_globals
        self.compiler_fn = compiler_fn
        self.label = label
        self.frame_state = frame_state
        self.graph = Graph()
        self.root_graph = self.graph  # self.graph is a branch's subgraph while ember.cond traces
        self.lifted = None            # outer node -> subgraph placeholder, during a branch
        from ..fx.experimental.symbolic_shapes import ShapeEnv
        self.shape_env = ShapeEnv()
        # inputs are static unless wrap_tensor asks for symbolic dims
        self.fake_mode = FakeTensorMode(allow_non_fake_inputs=True, shape_env=self.shape_env,
                                        static_shapes=True)
        self.sym_nodes = {}     # sympy expr -> the graph node computing it
        self.sym_sizes = {}     # sympy expr -> (tensor node, dim): where to read it if needed
        self.dynamic_inputs = []  # (source, FakeTensor) of the inputs with symbolic dims
        self.guards = GuardSet()
        self.guards.global_state()
        self.side_effects = SideEffects(self)
        self.tensor_inputs = {}
        # names of the sources of nn.Module attributes, parameters and buffers: tensors read
        # there keep static shapes (PyTorch's force_nn_module_property_static_shapes)
        self.module_attr_sources = set()
        self.attrs = {}
        self.real_inputs = []
        s = _tls.state
        self._initial = (s.grad_enabled, s.included, s.excluded, dict(_am.state.dtype),
                         _am.state.nesting, _am.state.cache_enabled, s.inference)
        self.autocast_modes = []
        self.graphs = []  # (gm, compiled) compiled by this capture
        self.break_reasons = []
        self.residual_source = None
        # a graph break raises instead (error_on_graph_break: entered around the call, or
        # in captured code while its block is traced)
        self.error_on_graph_break = _eval_frame()._state.error_on_graph_break
        # nested_compile_region: function code -> {reuse key: (subgraph name, lifted outer
        # nodes, result container type)}
        self.subgraph_reuse = {}

    # -- global state during the trace ------------------------------------------------------
    def restore_global_state(self):
        from ..amp import autocast_mode as _am
        for mode in reversed(self.autocast_modes):
            try:
                mode.__exit__(None, None, None)
            except Exception:  # noqa: BLE001 - best effort, state is reset below
                pass
        self.autocast_modes = []
        s = _tls.state
        g, inc, exc, dtypes, nesting, cache, inference = self._initial
        s.grad_enabled, s.included, s.excluded, s.inference = g, inc, exc, inference
        _am.state.dtype.clear()
        _am.state.dtype.update(dtypes)
        _am.state.nesting, _am.state.cache_enabled = nesting, cache

    def set_grad_mode(self, tx, mode):
        if _tls.state.grad_enabled != mode:
            _tls.state.grad_enabled = mode
            self.create_node(tx, "call_function", _C._set_grad_enabled, (mode,), {}, None)

    def enter_autocast(self, tx, fn, args, real=None):
        """Enter a state-changing region: the real context manager now (the fake ops see its
        state) and a graph node ``fn(*args)`` whose result the exit node takes."""
        from ..amp.autocast_mode import autocast
        real = real if real is not None else autocast(*args)
        real.__enter__()
        self.autocast_modes.append(real)
        node = self.create_node(tx, "call_function", fn, tuple(args), {}, None)
        return node, real

    def exit_autocast(self, tx, fn, node, real):
        real.__exit__(None, None, None)
        if real in self.autocast_modes:
            self.autocast_modes.remove(real)
        self.create_node(tx, "call_function", fn, (node,), {}, None)

    # -- inputs -------------------------------------------------------------------------------
    def _first_non_placeholder(self, graph=None):
        for n in (graph or self.root_graph).nodes:
            if n.op != "placeholder":
                return n
        return None

    def wrap_tensor(self, tx, value, src):
        from .._subclasses.fake_tensor import FakeTensor
        if isinstance(value, FakeTensor):
            unimplemented("a FakeTensor reached the captured frame")
        hit = self.tensor_inputs.get(id(value))
        if hit is not None:
            if src is not None and hit.source is not None and hit.source != src:
                self.guards.alias(src, hit.source)
            return hit
        dims = self._dynamic_dims(value, src)
        if dims is None:
            fake = self.fake_mode.from_tensor(value)
        else:
            from ..fx.experimental.symbolic_shapes import DimDynamic, StatelessSymbolicContext
            ranges = _eval_frame().marked_dynamic_dims(value)
            constraints = [ranges.get(i) if d else None for i, d in enumerate(dims)]
            # a bounded dim gets a symbol of its own: duck sizing would share its range
            ctx = StatelessSymbolicContext(
                [DimDynamic.STATIC if not d else
                 DimDynamic.DYNAMIC if constraints[i] not in (None, (None, None)) else
                 DimDynamic.DUCK for i, d in enumerate(dims)], constraints)
            fake = self.fake_mode.from_tensor(value, static_shapes=False, source=src,
                                              symbolic_context=ctx)
            if not any(isinstance(x, SymInt) for x in fake._size):
                dims = None  # only 0/1 sizes: nothing became symbolic
            else:
                self.dynamic_inputs.append((src, fake))
        if src is None:
            name = f"_tensor_constant{len(self.attrs)}"
            self.attrs[name] = value
            first = self._first_non_placeholder()
            if first is None:
                node = self.root_graph.get_attr(name)
            else:
                with self.root_graph.inserting_before(first):
                    node = self.root_graph.get_attr(name)
            node.meta["real"] = value
        else:
            self.guards.tensor_match(src, value, fake if dims is not None else None)
            name = _placeholder_name(src)
            taken = {n.target for n in self.root_graph.nodes if n.op == "placeholder"}
            if name in taken:  # two sources spelled alike (layer[1] and layer[-1])
                name = next(f"{name}{i}" for i in itertools.count(1) if f"{name}{i}" not in taken)
            first = self._first_non_placeholder()
            if first is None:
                node = self.root_graph.placeholder(name)
            else:
                with self.root_graph.inserting_before(first):
                    node = self.root_graph.placeholder(name)
            self.real_inputs.append((node, value))
        node.meta.update(val=fake, source=src, real_type=type(value))
        self._note_sizes(node, fake)
        vt = TensorVariable(node, fake, src)
        self.tensor_inputs[id(value)] = vt
        return vt

    # -- symbolic sizes -------------------------------------------------------------------------
    def _dynamic_dims(self, value, src):
        """Which dims of an input tensor are symbolic (None: all static). ``dynamic=True``:
        all; ``False``: none; ``None`` (automatic dynamic): a dim whose size differs from the
        one the previous capture of this frame saw, and dims ``mark_dynamic`` named.
        Parameters and the tensors of nn.Modules' attributes and buffers stay static, as
        PyTorch's ``force_parameter_static_shapes`` / ``force_nn_module_property_static_shapes``
        (another object's attribute is an input like any: a KV cache's keys grow each step).
        ``mark_static`` dims stay static."""
        from ..nn.parameter import Parameter
        mode = self.frame_state.dynamic
        if mode is None and not config.assume_static_by_default:
            mode = True  # PyTorch's spelling of "dynamic from the start" for dynamic=None
        if src is None or mode is False or not value._size or isinstance(value, Parameter) \
                or src.name() in self.module_attr_sources:
            return None
        sizes = list(value._size)
        marked = _eval_frame().marked_dynamic_dims(value)
        seen = self.frame_state.automatic
        prev = seen.get(src.name())
        if prev is not None and len(prev) == len(sizes):
            record = [None if p is None or p != s else p for p, s in zip(prev, sizes)]
        else:
            record = sizes
        if config.automatic_dynamic_shapes:
            seen[src.name()] = record
        # mark_static keeps a dim static; mark_dynamic wins over it
        static = getattr(value, "_dynamo_static_indices", ())
        dims = [i in marked or (i not in static and (
                    mode is True or (record[i] is None and config.automatic_dynamic_shapes)))
                for i in range(len(sizes))]
        if not any(dims) or self.frame_state.static_only:
            return None
        self.frame_state.used_dynamic = True
        return dims

    def _note_sizes(self, node, fake):
        """Remember where each new symbolic size of ``fake`` can be read in the graph."""
        for i, s in enumerate(fake._size):
            if isinstance(s, SymInt) and s.node.expr not in self.sym_sizes:
                self.sym_sizes[s.node.expr] = (node, i)

    def wrap_int(self, tx, v):
        """An int read from tensor metadata: a constant, or for a SymInt the graph node
        computing it (``aten.sym_size.int`` made on first use)."""
        from .variables.tensor import SymNodeVariable
        if not isinstance(v, SymInt):
            return ConstantVariable(v)
        return SymNodeVariable(self._sym_node(tx, v.node.expr, v), v)

    def _sym_node(self, tx, expr, val):
        """The graph node computing sympy ``expr``: a size read with ``aten.sym_size.int``,
        or built from those with ``operator`` calls (``s0*s1`` for ``numel``)."""
        import sympy
        node = self.sym_nodes.get(expr)
        if node is not None:
            return node
        from .._ops.overload import ops
        where = self.sym_sizes.get(expr)
        if where is not None:
            target, args = ops.aten.sym_size.int, (where[0], where[1])
        elif isinstance(expr, (sympy.Add, sympy.Mul)):
            target = operator.add if isinstance(expr, sympy.Add) else operator.mul
            terms = [int(a) if a.is_Integer else self._sym_node(tx, a, None) for a in expr.args]
            args = tuple(terms[:2])
            for t in terms[2:]:
                args = (self._new_sym(tx, target, args, None), t)
        elif isinstance(expr, sympy.Mod):
            target = operator.mod
            args = tuple(int(a) if a.is_Integer else self._sym_node(tx, a, None)
                         for a in expr.args)
        else:
            unimplemented(f"symbolic size {expr} with no graph value computing it")
        node = self._new_sym(tx, target, args, val)
        self.sym_nodes[expr] = node
        return node

    def _new_sym(self, tx, target, args, val):
        from .._ops.overload import ops
        name = "sym_size_int" if target is ops.aten.sym_size.int else None
        node = self.root_graph.create_node("call_function", target, args, {}, name=name)
        node.meta["val"] = val
        node.meta["stack_trace"] = "".join(traceback.format_list(tx.user_stack()))
        return node

    def install_shape_guards(self):
        """The ShapeEnv's guards (ranges, duck-sizing equalities, relations branched on) and
        the symbolic strides of the dynamic inputs, as guards of this entry."""
        if not self.dynamic_inputs:
            return
        env = self.shape_env
        for src, fake in self.dynamic_inputs:
            for i, st in enumerate(fake._stride):
                if isinstance(st, SymInt):
                    self.guards.shape_guard(f"{src.expr()}._stride[{i}] == "
                                            f"{env.python_expr(st.node.expr)}",
                                            f"{src.name()}.stride()[{i}] == "
                                            f"{env.python_expr(st.node.expr, readable=True)}")
        for code, readable in zip(env.produce_guards(), env.produce_guards(readable=True)):
            self.guards.shape_guard(code, readable)

    def _remove_unused_sym_nodes(self):
        """Size arithmetic no op used (``x.shape`` read for one dim) leaves the graph."""
        from .._ops.overload import ops
        pure = {ops.aten.sym_size.int, operator.add, operator.sub, operator.mul,
                operator.floordiv, operator.mod, operator.neg}
        for node in reversed(list(self.root_graph.nodes)):
            if node.op == "call_function" and node.target in pure and not node.users and \
                    isinstance(node.meta.get("val"), SymInt):
                self.root_graph.erase_node(node)

    # -- graph calls --------------------------------------------------------------------------
    def _to_fake(self, v):
        from .variables.tensor import SymNodeVariable
        if isinstance(v, (TensorVariable, SymNodeVariable, TracedObjectVariable,
                          TracedFunctionVariable)):
            return v.example
        if isinstance(v, NamedTupleVariable):
            return v.tuple_cls(*[self._to_fake(i) for i in v.items])
        if isinstance(v, TupleVariable):
            return type(v.as_python_constant())(self._to_fake(i) for i in v.items) \
                if v.is_python_constant() else tuple(self._to_fake(i) for i in v.items)
        if isinstance(v, ListVariable):
            return [self._to_fake(i) for i in v.items]
        if isinstance(v, ConstDictVariable):
            return {k: self._to_fake(i) for k, i in v.items.items()}
        return v.as_python_constant()

    def _lift(self, node):
        """An outer graph's node used inside a branch becomes an extra input of the branch."""
        if self.lifted is None or node.graph is not self.root_graph:
            unimplemented("a tensor from an enclosing ember.cond branch (nested cond)")
        ph = self.lifted.get(node)
        if ph is None:
            first = self._first_non_placeholder(self.graph)
            if first is None:
                ph = self.graph.placeholder(f"lifted_{node.name}")
            else:
                with self.graph.inserting_before(first):
                    ph = self.graph.placeholder(f"lifted_{node.name}")
            ph.meta["val"] = node.meta.get("val")
            self.lifted[node] = ph
        return ph

    def _to_node(self, v):
        from .variables.tensor import SymNodeVariable
        if isinstance(v, SymNodeVariable):
            return v.node
        if isinstance(v, (TensorVariable, TracedObjectVariable, TracedFunctionVariable)):
            if v.node.graph is not self.graph:
                return self._lift(v.node)
            return v.node
        if isinstance(v, NamedTupleVariable):
            return v.tuple_cls(*[self._to_node(i) for i in v.items])
        if isinstance(v, TupleVariable):
            if v.is_python_constant():
                return v.as_python_constant()
            return tuple(self._to_node(i) for i in v.items)
        if isinstance(v, ListVariable):
            return [self._to_node(i) for i in v.items]
        if isinstance(v, ConstDictVariable):
            return {k: self._to_node(i) for k, i in v.items.items()}
        return v.as_python_constant()

    def run_fake(self, fn, args, kwargs):
        from .._subclasses.fake_tensor import (DataDependentOutputException,
                                               DynamicOutputShapeException)
        try:
            with self.fake_mode:
                return fn(*args, **kwargs)
        except DataDependentOutputException as e:
            unimplemented(f"data dependent operator: {e.func}; to enable, set "
                          f"ember._dynamo.config.capture_scalar_outputs = True (not supported)")
        except DynamicOutputShapeException as e:
            unimplemented(f"dynamic shape operator: {e.func}; Operator does not have a meta "
                          f"kernel that supports dynamic output shapes")
        except Unsupported:
            raise
        except Exception as e:  # noqa: BLE001 - breaks here; the eager call raises it for real
            from .exc import UserErrorDuringTrace
            name = getattr(fn, "__qualname__", getattr(fn, "__name__", str(fn)))
            raise UserErrorDuringTrace(f"{name} raised {type(e).__name__} on fake tensors: "
                                       f"{e}") from e

    def create_node(self, tx, kind, target, nargs, nkw, val):
        node = self.graph.create_node(kind, target, nargs, nkw)
        node.meta["val"] = val
        node.meta["stack_trace"] = "".join(traceback.format_list(tx.user_stack()))
        return node

    def graph_args(self, tx, args, kwargs):
        """``args`` and ``kwargs`` as values a graph call can take (see :meth:`graph_arg`)."""
        return ([self.graph_arg(tx, a) for a in args],
                {k: self.graph_arg(tx, v) for k, v in kwargs.items()})

    def graph_arg(self, tx, v, seen=None):
        """``v`` as an argument of a graph call. A user object or function whose state holds
        tensors must not be frozen into the graph as a constant (a later call with other
        tensors would reuse the first ones, and under AOTAutograd a gradient would not reach
        them): as PyTorch's Dynamo lifts ``L['mask'].kv_indices`` or a closure's tensors, its
        state is read through sources (each part guarded, tensors graph inputs) and the graph
        rebuilds the object (``rebuild_object``) or function (``rebuild_function``) from it.
        An object without graph values stays a constant, its attributes guarded."""
        from .source import AttrSource, GetItemSource
        from .variables import NestedUserFunctionVariable, UserFunctionVariable, VariableBuilder
        seen = seen if seen is not None else set()

        def sub(x):
            return self.graph_arg(tx, x, seen)

        if isinstance(v, (ListVariable, TupleVariable, ConstDictVariable)):
            if isinstance(v, ConstDictVariable):
                items = {k: sub(i) for k, i in v.items.items()}
                changed = any(items[k] is not i for k, i in v.items.items())
                return ConstDictVariable(items, user_cls=v.user_cls) if changed else v
            items = [sub(i) for i in v.items]
            if all(a is b for a, b in zip(items, v.items)):
                return v
            if isinstance(v, NamedTupleVariable):
                return NamedTupleVariable(items, v.tuple_cls)
            return type(v)(items) if type(v) in (ListVariable, TupleVariable) else v
        if isinstance(v, UserFunctionVariable):
            if id(v.fn) in seen or not _holds_tensor(v.fn):
                return v  # nothing captured is a tensor: a constant, guarded by identity
            seen.add(id(v.fn))
            return self._rebuild_function(tx, v, sub)
        if isinstance(v, NestedUserFunctionVariable):  # made by the trace: no constant form
            if id(v) in seen:
                unimplemented(f"a function made in captured code that captures itself "
                              f"({v.name}) passed to an op")
            seen.add(id(v))
            return self._rebuild_function(tx, v, sub)
        if not isinstance(v, UserDefinedObjectVariable) or \
                isinstance(v, TracedObjectVariable):
            return v
        obj, src = v.obj, v.source
        cls = type(obj)
        if id(obj) in seen:
            unimplemented(f"a {cls.__name__} object that refers to itself passed to an op")
        seen.add(id(obj))
        if isinstance(obj, tuple) and hasattr(cls, "_fields"):
            if src is not None:
                self.guards.length_match(src, obj)
            items = [sub(VariableBuilder(tx, GetItemSource(src, i) if src else None)(x))
                     for i, x in enumerate(obj)]
            return NamedTupleVariable(items, cls) if any(map(_is_graph_value, items)) else v
        holds = _holds_tensor(obj)
        state = getattr(obj, "__dict__", None)
        if type(state) is not dict or cls.__new__ is not object.__new__:
            if holds:
                unimplemented(f"a {cls.__name__} object holding tensors passed to an op "
                              f"(Dynamo rebuilds only objects whose state is their __dict__)")
            return v
        try:
            attrs = {}
            for name, value in state.items():
                pending = self.side_effects.pending_attr(v, name)
                attrs[name] = sub(pending if pending is not None else VariableBuilder(
                    tx, AttrSource(src, name) if src else None)(value))
        except Unsupported:
            if holds:
                raise
            return v  # state Dynamo cannot read holds no tensor: a constant, as before
        hit = self.side_effects.attrs.get(id(v))
        for name, value in (hit[1].items() if hit is not None else ()):
            attrs.setdefault(name, sub(value))  # attributes the trace added
        if not any(_is_graph_value(a) for a in attrs.values()):
            return v
        return self._graph_object(tx, rebuild_object, (cls, attrs), TracedObjectVariable,
                                  cls, attrs)

    def _rebuild_function(self, tx, v, sub):
        from .source import AttrSource, DefaultsSource, GetItemSource, GlobalSource
        from .symbolic_convert import _module_global_source
        from .variables import UserFunctionVariable, VariableBuilder
        if isinstance(v, UserFunctionVariable):
            fn, src = v.fn, v.source
            defaults = [VariableBuilder(tx, DefaultsSource(src, i) if src else None)(d)
                        for i, d in enumerate(fn.__defaults__ or ())]
            kwd = {k: VariableBuilder(tx, DefaultsSource(src, k, True) if src else None)(d)
                   for k, d in (fn.__kwdefaults__ or {}).items()}
            cells = []
            for i, cell in enumerate(fn.__closure__ or ()):
                pending = self.side_effects.pending_cell(cell)
                if pending is None:
                    try:
                        contents = cell.cell_contents
                    except ValueError:
                        unimplemented(f"free variable '{fn.__code__.co_freevars[i]}' of "
                                      f"{fn.__qualname__} referenced before assignment")
                    csrc = AttrSource(GetItemSource(AttrSource(src, "__closure__"), i),
                                      "cell_contents") if src else None
                    pending = VariableBuilder(tx, csrc)(contents)
                cells.append(pending)
            template, f_globals = fn, fn.__globals__
        else:
            import types
            code = v.code
            defaults = list(v.defaults.items) if v.defaults is not None else []
            kwd = dict(v.kwdefaults.items) if v.kwdefaults is not None else {}
            cells = []
            for name, cell in zip(code.co_freevars, v.closure.items if v.closure else ()):
                contents = cell.contents(tx)
                if contents is None:
                    unimplemented(f"free variable '{name}' of {v.name} referenced before "
                                  f"assignment")
                cells.append(contents)
            template = types.FunctionType(code, v.f_globals, code.co_name, None,
                                          tuple(types.CellType() for _ in code.co_freevars))
            template.__qualname__ = v.name
            f_globals = v.f_globals
        # the globals the code reads that hold tensors, read through their sources
        global_values = {}
        for name in _global_names(template.__code__):
            if name in f_globals and _holds_tensor(f_globals[name]):
                pending = self.side_effects.pending_global(f_globals, name)
                if pending is None:
                    gsrc = GlobalSource(name) if f_globals is self.root_globals else \
                        _module_global_source(f_globals, name)
                    pending = VariableBuilder(tx, gsrc)(f_globals[name])
                global_values[name] = pending
        defaults = TupleVariable([sub(d) for d in defaults]) if defaults else \
            ConstantVariable(None)
        kwd = ConstDictVariable({k: sub(d) for k, d in kwd.items()}) if kwd else \
            ConstantVariable(None)
        cells = TupleVariable([sub(c) for c in cells])
        global_values = ConstDictVariable({k: sub(g) for k, g in global_values.items()})
        if isinstance(v, UserFunctionVariable) and not any(
                _is_graph_value(x) for x in (defaults, kwd, cells, global_values)):
            return v  # its captured values are guarded constants: the function is one too
        return self._graph_object(tx, rebuild_function,
                                  (template, defaults, kwd, cells, global_values),
                                  TracedFunctionVariable)

    def _graph_object(self, tx, fn, parts, vt_cls, *vt_args):
        """A ``fn(*parts)`` node (parts: variables) and the variable for its result."""
        if isinstance(parts[-1], dict):
            parts = parts[:-1] + (ConstDictVariable(parts[-1]),)
        example = fn(*[self._to_fake(p) if isinstance(p, VariableTracker) else p
                       for p in parts])
        node = self.create_node(tx, "call_function", fn, tuple(
            self._to_node(p) if isinstance(p, VariableTracker) else p for p in parts), {},
            example)
        return vt_cls(*vt_args, node, example)

    def call_graph(self, tx, kind, target, args, kwargs):
        if _sparse_grad_asked(target, args, kwargs):
            unimplemented(f"{target} with a sparse gradient (ember.compile captures strided "
                          f"tensors)")
        args, kwargs = self.graph_args(tx, args, kwargs)
        fargs = [self._to_fake(a) for a in args]
        fkw = {k: self._to_fake(v) for k, v in kwargs.items()}
        if kind == "call_method":
            fake = self.run_fake(lambda *a, **k: getattr(a[0], target)(*a[1:], **k), fargs, fkw)
        else:
            fake = self.run_fake(target, fargs, fkw)
        node = self.create_node(tx, kind, target, tuple(self._to_node(a) for a in args),
                                {k: self._to_node(v) for k, v in kwargs.items()}, fake)
        return self.wrap_result(tx, node, fake)

    def wrap_result(self, tx, node, fake):
        if fake is None:  # kept: the call is for its effect
            return ConstantVariable(None)
        if not isinstance(fake, SymInt) and not _holds_tensor(fake):
            self.graph.erase_node(node)
            return wrap_constant_like(tx, fake)
        return self._wrap_graph_value(tx, node, fake)

    def _wrap_graph_value(self, tx, node, fake):
        """The variable for ``node``, whose value over fake tensors is ``fake``: the tensors
        in a tuple, list or user object result are read with getitem/getattr nodes (PyTorch's
        Dynamo traces into such results; they must never reach the program as constants
        holding fake tensors)."""
        from .._tensor import Tensor
        from .variables.tensor import SymNodeVariable
        if isinstance(fake, Tensor):
            self._note_sizes(node, fake)
            return TensorVariable(node, fake)
        if isinstance(fake, SymInt):
            self.sym_nodes.setdefault(fake.node.expr, node)
            return SymNodeVariable(node, fake)

        def part(getter, key, f):
            if isinstance(f, SymInt) or not _holds_tensor(f):
                return wrap_constant_like(tx, f)
            return self._wrap_graph_value(
                tx, self.create_node(tx, "call_function", getter, (node, key), {}, f), f)

        if isinstance(fake, (tuple, list)):
            items = [part(operator.getitem, i, f) for i, f in enumerate(fake)]
            if isinstance(fake, list):
                return ListVariable(items)
            if hasattr(type(fake), "_fields"):  # named results (values, indices)
                return NamedTupleVariable(items, type(fake))
            return TupleVariable(items)
        if type(fake) is dict:
            return ConstDictVariable({k: part(operator.getitem, k, f) for k, f in fake.items()})
        state = getattr(fake, "__dict__", None)
        if type(state) is dict and type(fake).__new__ is object.__new__:
            attrs = {k: part(getattr, k, f) for k, f in state.items()}
            return TracedObjectVariable(type(fake), attrs, node, fake)
        unimplemented(f"{node.target} returned a {type(fake).__name__} holding tensors")

    # -- finishing ----------------------------------------------------------------------------
    def can_break(self, tx):
        for v in tx.stack:
            if isinstance(v, WithExitVariable) and not hasattr(v.ctx, "reconstruct_entered"):
                return False
        # (as PyTorch: a break in a try block skips the frame; the residual code that runs
        # the instruction could not hand its exception to the block's handler. Nor can a
        # resume function start in an except block: it would not be handling the exception)
        return not (tx.code.co_flags & (0x20 | 0x80 | 0x100 | 0x200)) and \
            not _in_try_block(tx.code, tx.current.offset) and not _remakes_cells(tx.code) \
            and not tx.exn_stack

    def count_ops(self):
        return sum(1 for n in self.root_graph.nodes if n.op in ("call_function", "call_method",
                                                          "call_module"))

    def finish(self, tx, tail, reason):
        """Compile the graph and build the residual function; ``tail(cg)`` writes what
        follows the graph and the side effects."""
        probe = ResidualCodegen({}, collect=True)
        self.side_effects.codegen(probe)
        tail(probe)
        outs = list(dict.fromkeys(probe.tensors))
        ns = {}
        cg = ResidualCodegen(ns, {n: i for i, n in enumerate(outs)})
        if reason.graph_break:
            fs = reason.user_stack[-1] if reason.user_stack else None
            where = f" ({fs.filename}:{fs.lineno})" if fs else ""
            cg.lines.append(f"# graph break{where}: {reason.reason.splitlines()[0]}")
        self._remove_unused_sym_nodes()
        if self.count_ops():
            self.graph.output(tuple(outs))
            self._remove_unused_tensor_inputs()
            gm = GraphModule(self.attrs, self.graph)
            compiled = self.call_backend(gm, reason)
            args = [n.meta["source"].expr() for n in self.graph.nodes if n.op == "placeholder"]
            fname = cg.const(compiled, f"__compiled_fn_{len(self.frame_state.root.all_graphs) - 1}")
            cg.lines.append(f"___out = {fname}({', '.join(args)})")
        self.side_effects.codegen(cg)
        tail(cg)
        return cg

    def _remove_unused_tensor_inputs(self):
        from .._tensor import Tensor
        # As PyTorch's remove_unused_graphargs: a tensor read but never used by an op (say a
        # value that 3.12's `a or b` leaves on the stack for a resume function to pop) is not
        # an input of the graph. Its guards stay: they came from where it was read.
        for node in list(self.root_graph.nodes):
            if (node.op == "placeholder" and not node.users
                    and isinstance(node.meta.get("val"), Tensor)):
                self.root_graph.erase_node(node)

    def call_backend(self, gm, reason):
        from . import eval_frame
        example_inputs = [v for n, v in self.real_inputs]
        order = {n: i for i, (n, _) in enumerate(self.real_inputs)}
        example_inputs = [dict(self.real_inputs)[n] for n in self.graph.nodes
                          if n.op == "placeholder" and n in order]
        idx = len(self.frame_state.root.all_graphs)
        if graph_code_log.isEnabledFor(logging.DEBUG):
            graph_code_log.debug("TRACED GRAPH\n ===== __compiled_fn_%d =====\n%s", idx,
                                 gm.print_readable(print_output=False))
        try:
            with dynamo_timed("OutputGraph.call_user_compiler"):
                compiled = self.compiler_fn(gm, example_inputs)
        except Exception as e:
            raise BackendCompilerFailed(self.compiler_fn, e,
                                        f"__compiled_fn_{idx} of {self.code.co_name}") from e
        if compiled is None:
            compiled = gm.forward
        self.frame_state.root.all_graphs.append(gm)
        self.graphs.append((gm, compiled, reason))
        eval_frame._record_graph(gm, reason)
        return compiled

    def break_graph(self, tx, inst, exc):
        """Compile what was captured before ``inst``, run ``inst`` in residual code and
        resume after it in a generated (and itself captured) resume function."""
        from .resume_execution import live_locals, resume_target
        msg = exc.msg if isinstance(exc, Unsupported) else str(exc)
        if inst.opname not in ("CALL", "CALL_FUNCTION_EX"):
            # (PyTorch's reason for a jump on a tensor names the jump, not the error)
            msg = f"generic_jump {type(tx.stack[-1]).__name__}()"
        reason = GraphCompileReason(msg, list(exc.real_stack or tx.user_stack()))
        self.break_reasons.append(reason)
        if graph_breaks_log.isEnabledFor(logging.DEBUG):
            fs = reason.user_stack[-1] if reason.user_stack else None
            graph_breaks_log.debug("Graph break in user code at %s:%s\nGraph Break Reason: %s\n"
                                   "User code traceback:\n%s",
                                   fs.filename if fs else "?", fs.lineno if fs else "?",
                                   reason.reason,
                                   "".join(traceback.format_list(reason.user_stack)))
        stack = list(tx.stack)
        op = inst.opname
        state = self.frame_state
        code = tx.code

        def pass_stack(cg, items):
            exprs, nulls = [], []
            for i, v in enumerate(items):
                if isinstance(v, NullVariable):
                    nulls.append(i)
                else:
                    exprs.append(cg.reconstruct(v))
            return exprs, tuple(nulls)

        def locals_for(target_offset):
            # (the frame's cells are not locals of the resume function: see closure_expr)
            names = live_locals(code, target_offset)
            return [n for n in code.co_varnames
                    if n in names and n in tx.symbolic_locals and n not in code.co_cellvars]

        def closure_expr(cg):
            # The resume function's free variables are the frame's cellvars, then its
            # freevars (make_resume_code): its closure is the real cells of the frame, one
            # per cell, shared with every function rebuilt over them, so an assignment on
            # either side of the break is seen on the other.
            if not code.co_cellvars:
                return "___closure"
            cells = [tx._cell(n).reconstruct(cg) for n in code.co_cellvars]
            return f"({', '.join(cells)},) + (___closure or ())"

        def resume_call(cg, target_offset, items, extra=None):
            exprs, nulls = pass_stack(cg, items)
            if extra is not None:
                exprs.append(extra)  # the result is the last stack item
            names = locals_for(target_offset)
            lexprs = [cg.reconstruct(tx.symbolic_locals[n]) for n in names]
            nstack = len(items) + (1 if extra is not None else 0)
            resume = state.resume_for(code, target_offset, nstack, nulls, tuple(names))
            rname = cg.const(resume, resume.__resume_name__)
            return f"{rname}({', '.join(exprs + lexprs + [closure_expr(cg)])})"

        def in_blocks(cg, line, items):
            # The instruction runs in residual code, inside the `with` blocks open at the break
            # (entered again there by rebuilding their exits): if it raises, the blocks are
            # left as eager leaves them, with the exception, before it propagates.
            exits = [cg.reconstruct(v) for v in items if isinstance(v, WithExitVariable)]
            if not exits:
                cg.lines.append(line)
                return
            exc = cg.temp()
            cg.lines += ["try:", f"    {line}", "except BaseException:",
                         f"    {exc} = {cg.const(sys.exc_info)}()"]
            cg.lines += [f"    {e}(*{exc})" for e in reversed(exits)]
            cg.lines.append("    raise")

        if op in ("CALL", "CALL_FUNCTION_EX"):
            if op == "CALL":
                argc = inst.arg
                items = stack[len(stack) - argc - 2:]
                below = stack[:len(stack) - argc - 2]
                if isinstance(items[0], NullVariable):
                    fn, args = items[1], items[2:]
                else:
                    fn, args = items[0], items[1:]
                kwn = tx.kw_names or ()
                kwargs = dict(zip(kwn, args[len(args) - len(kwn):])) if kwn else {}
                args = args[:len(args) - len(kwn)] if kwn else args
                star = False
            else:
                has_kw = inst.arg & 1
                kwv = stack[-1] if has_kw else None
                argv = stack[-1 - has_kw]
                fn = stack[-2 - has_kw]
                below = stack[:len(stack) - 2 - has_kw]
                if below and isinstance(below[-1], NullVariable):
                    below = below[:-1]
                args, kwargs, star = argv, kwv, True
            target = resume_target(code, inst.offset)

            def tail(cg):
                # the stack below first: rebuilding it may enter a no_grad block the call is in
                for v in below:
                    if not isinstance(v, NullVariable):
                        cg.reconstruct(v)
                fexpr = self.callable_expr(cg, fn)
                if getattr(fn, "fn", None) is warnings.warn:
                    # warned from the user's line, as eager (the residual is not their code)
                    line = inst.positions.lineno if inst.positions and \
                        inst.positions.lineno is not None else tx.lineno
                    fexpr = cg.const(functools.partial(warn_from, code.co_filename, line,
                                                       tx.f_globals), "warn_from")
                if star:
                    a = f"*{cg.reconstruct(args)}"
                    if kwargs is not None:
                        a += f", **{cg.reconstruct(kwargs)}"
                else:
                    parts = [cg.reconstruct(v) for v in args]
                    parts += [f"{k}={cg.reconstruct(v)}" for k, v in kwargs.items()]
                    a = ", ".join(parts)
                res = cg.temp()
                in_blocks(cg, f"{res} = {fexpr}({a})", below)
                cg.lines.append(f"return {resume_call(cg, target, below, extra=res)}")
        else:  # a conditional jump on a tensor
            cond = stack[-1]
            below = stack[:-1]
            jump_if_true = "TRUE" in op
            # JUMP_IF_X_OR_POP keeps the value on the stack when it jumps (`a or b`)
            jump_stack = below + [cond] if "OR_POP" in op else below
            nxt = resume_target(code, inst.offset)
            if jump_if_true:
                (t_target, t_stack), (f_target, f_stack) = (inst.argval, jump_stack), (nxt, below)
            else:
                (t_target, t_stack), (f_target, f_stack) = (nxt, below), (inst.argval, jump_stack)

            def tail(cg):
                c = cg.reconstruct(cond)
                t_call = resume_call(cg, t_target, t_stack)
                f_call = resume_call(cg, f_target, f_stack)
                truth = cg.temp()  # (Tensor.__bool__ may raise: inside the blocks)
                in_blocks(cg, f"{truth} = {cg.const(bool)}({c})", below)
                cg.lines.append(f"if {truth}:")
                cg.lines.append(f"    return {t_call}")
                cg.lines.append(f"return {f_call}")
        tx.residual = self.finish(tx, tail, reason)

    def callable_expr(self, cg, fn):
        """The expression the residual code calls for a broken call: user functions go
        through the compiler again (their bodies are captured on their own)."""
        from .variables import (BuiltinVariable, NestedUserFunctionVariable,
                                SkippedFunctionVariable, TorchInGraphFunctionVariable,
                                UserFunctionVariable, UserMethodVariable)
        from .variables.misc import GradModeWrappedVariable
        from .variables.tensor import GetAttrMethod
        from .symbolic_convert import _BoundMethod
        state = self.frame_state
        if isinstance(fn, UserFunctionVariable):
            f = fn.fn
            if f.__closure__ and fn.source is not None:
                # guarded on its code only: the closure the call reads is the one called,
                # through the capture cache of its code, with its own cells and defaults
                if not _has_entry(f.__code__):
                    return cg.source_expr(fn.source)
                entry = state.wrap_code(f.__code__, f.__globals__, len(f.__defaults__ or ()),
                                        list(f.__kwdefaults__ or ()))
                return f"{cg.const(entry, 'entry_of')}({cg.source_expr(fn.source)})"
            return cg.const(state.wrap_callee(f))
        if isinstance(fn, NestedUserFunctionVariable) and _has_entry(fn.code):
            # made by the frame: made again, and run through the capture cache of its code
            entry = state.wrap_code(
                fn.code, fn.f_globals, len(fn.defaults.items) if fn.defaults else 0,
                list(fn.kwdefaults.items) if fn.kwdefaults is not None else [])
            return f"{cg.const(entry, 'entry_of')}({cg.reconstruct(fn)})"
        if isinstance(fn, GradModeWrappedVariable):  # the function itself is captured
            mode = fn.mode
            return f"{cg.const(mode.cls)}({mode.arg_repr()})({self.callable_expr(cg, fn.fn)})"
        if isinstance(fn, UserMethodVariable):
            obj = cg.reconstruct(fn.obj)
            return f"{cg.const(state.wrap_callee(fn.fn))}.__get__({obj})"
        if isinstance(fn, NNModuleVariable):
            # its forward (of user code, without hooks) through the capture cache
            return f"{cg.const(state.callee, 'module_entry')}({cg.reconstruct(fn)})"
        if isinstance(fn, (_BoundMethod, GetAttrMethod)):
            return f"{cg.reconstruct(fn.obj)}.{fn.name}"
        if isinstance(fn, (BuiltinVariable, SkippedFunctionVariable,
                           TorchInGraphFunctionVariable)):
            return cg.const(fn.as_python_constant())
        return cg.reconstruct(fn)

    def finish_return(self, tx, value):
        def tail(cg):
            cg.lines.append(f"return {cg.reconstruct(value)}")
        tx.residual = self.finish(tx, tail, GraphCompileReason(
            "return_value", [tx.frame_summary()], graph_break=False))


def _has_entry(code):
    """Whether calls of ``code``'s functions can run through a generated entry: not a
    generator or coroutine (they run eagerly), and parameters spelled as Python names (3.11's
    comprehensions take `.0`: they run as they are)."""
    return not code.co_flags & (0x20 | 0x80 | 0x100 | 0x200) and \
        all(n.isidentifier() for n in code.co_varnames[:code.co_argcount])


def _remakes_cells(code):
    """Whether ``code`` makes a cell again after its prologue (3.12's inlined comprehension
    whose variable a closure captures): its resume function, which takes the frame's cells
    as free variables, could not run that MAKE_CELL."""
    body = itertools.dropwhile(lambda i: i.opname in ("MAKE_CELL", "COPY_FREE_VARS", "RESUME"),
                               dis.get_instructions(code))
    return any(i.opname == "MAKE_CELL" for i in body)


def _in_try_block(code, offset):
    """Whether an exception raised at ``offset`` reaches a try statement's handler (one that
    starts PUSH_EXC_INFO without WITH_EXCEPT_START): the exception table gives the innermost
    handler only, so a ``with`` block's handler (and the cleanup after it, or 3.12's inlined
    comprehensions') is followed to the handler its re-raise reaches."""
    entries = dis.Bytecode(code).exception_entries
    by_offset = {i.offset: i for i in dis.get_instructions(code)}
    seen = set()
    while offset not in seen:
        seen.add(offset)
        entry = next((e for e in entries if e.start <= offset < e.end), None)
        if entry is None:
            return False
        first, nxt = by_offset.get(entry.target), by_offset.get(entry.target + 2)
        if first is not None and first.opname == "PUSH_EXC_INFO" and \
                (nxt is None or nxt.opname != "WITH_EXCEPT_START"):
            return True
        offset = entry.target
    return False


@functools.lru_cache(maxsize=None)
def _sparse_grad_ops():
    """op -> (position, keyword) of its flag asking for a sparse gradient (built on first use:
    ember is importing when this module loads)."""
    from .. import gather
    from .._ops.overload import ops
    from ..nn import functional as F
    return {ops.aten.embedding.default: (4, "sparse"), F.embedding: (6, "sparse"),
            F.embedding_bag: (7, "sparse"), gather: (3, "sparse_grad"),
            ops.aten.gather.default: (3, "sparse_grad")}


def _sparse_grad_asked(target, args, kwargs):
    where = _sparse_grad_ops().get(target) if isinstance(target, Hashable) else None
    if where is None:
        return False
    pos, name = where
    flag = kwargs.get(name, args[pos] if len(args) > pos else None)
    return flag is not None and flag.is_python_constant() and bool(flag.as_python_constant())


def _holds_tensor(value, seen=None, depth=0):
    """Whether a tensor is reachable from ``value`` through containers, object attributes,
    and functions' closures and defaults (modules and classes are not walked)."""
    import types
    from .._tensor import Tensor
    from ..nn import Module
    from .variables.builder import is_constant_value
    if isinstance(value, Tensor):
        return True
    seen = set() if seen is None else seen
    if depth > 8 or id(value) in seen or is_constant_value(value) or \
            isinstance(value, (type, types.ModuleType, Module)):
        return False
    seen.add(id(value))
    if isinstance(value, (tuple, list, set, frozenset)):
        parts = value
    elif isinstance(value, dict):
        parts = value.values()
    elif isinstance(value, types.FunctionType):
        mod = as_ember(value.__module__) or ""
        if mod == "ember" or mod.startswith("ember."):
            return False  # ember's own functions and module state are fixed
        parts = [c.cell_contents for c in value.__closure__ or () if _cell_full(c)]
        parts += list(value.__defaults__ or ()) + list((value.__kwdefaults__ or {}).values())
        parts += [value.__globals__[n] for n in _global_names(value.__code__)
                  if n in value.__globals__]
    elif isinstance(value, types.MethodType):
        parts = (value.__self__, value.__func__)
    else:
        state = getattr(value, "__dict__", None)
        parts = state.values() if type(state) is dict else ()
    return any(_holds_tensor(p, seen, depth + 1) for p in parts)


def _global_names(code):
    """The names ``code`` (with the functions and comprehensions it defines) may read as
    globals."""
    import types
    names = set(code.co_names)
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            names |= _global_names(c)
    return names


def _cell_full(cell):
    try:
        cell.cell_contents
        return True
    except ValueError:
        return False


def _is_graph_value(v):
    """Whether variable ``v`` is or holds a value computed by the graph (or an input)."""
    from .variables.tensor import SymNodeVariable
    if isinstance(v, (TensorVariable, SymNodeVariable, TracedObjectVariable,
                      TracedFunctionVariable)):
        return True
    if isinstance(v, BaseListVariable):
        return any(_is_graph_value(i) for i in v.items)
    if isinstance(v, ConstDictVariable):
        return any(_is_graph_value(i) for i in v.items.values())
    return False


def _eval_frame():
    from . import eval_frame
    return eval_frame


def _placeholder_name(src):
    import re
    n = src.name()
    n = re.sub(r"[^0-9a-zA-Z_]+", "_", n)
    return n if n.endswith("_") else n + "_"
