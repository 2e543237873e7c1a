"""PyTorch's ``torch.export.exported_program``: :class:`ExportedProgram` (the graph module, its
signature, state and calling convention), the module ``.module()`` gives, and
``default_decompositions``."""
import copy
import dataclasses
from typing import Any, List, Optional

from .._tensor import Tensor
from ..fx.node import Node
from .decomp_utils import CustomDecompTable
from .graph_signature import (ExportGraphSignature, InputKind, OutputKind, OutputSpec,
                              TensorArgument)

__all__ = ["ExportedProgram", "ModuleCallEntry", "ModuleCallSignature", "default_decompositions"]


@dataclasses.dataclass
class ModuleCallSignature:
    """How one module of the program is called: the graph values of its flat inputs and
    outputs (argument specs; empty unless the call's signature was preserved), the pytree specs
    of its ``(args, kwargs)`` and of its result, and (for the root) its argument names."""
    inputs: List[Any]
    outputs: List[Any]
    in_spec: Any
    out_spec: Any
    forward_arg_names: Optional[List[str]] = None

    def replace_all_uses_with(self, original_node, new_node):
        for i in self.inputs:
            if i.name == original_node.name:
                i.name = new_node.name
        for o in self.outputs:
            if o.name == original_node.name:
                o.name = new_node.name


@dataclasses.dataclass
class ModuleCallEntry:
    """A module of the exported program by its path (``""`` for the root), with its calling
    convention where the program keeps one."""
    fqn: str
    signature: Optional[ModuleCallSignature] = None


class ExportedProgram:
    """The result of :func:`export`; see the module docstring."""

    def __init__(self, graph_module, graph_signature, state_dict, out_spec=None, *,
                 range_constraints=None, module_call_graph=None, _input_shapes=None,
                 _shape_guards=None):
        self._graph_module = graph_module
        self._graph_signature = graph_signature
        self._state_dict = state_dict
        self._out_spec = out_spec
        # [] for a program not made by export (ember.jit's): no calling convention to check
        self._module_call_graph = list(module_call_graph or [])
        self._range_constraints = dict(range_constraints or {})
        # [(user input name, [int | sympy expr per dim] or None)] when exported with
        # dynamic_shapes: .module() checks each call's inputs against it
        self._input_shapes = _input_shapes
        self._shape_guards = list(_shape_guards or [])  # other relations of those sizes

    @property
    def range_constraints(self):
        """{size symbol: ValueRanges}: the sizes each symbolic dim may take."""
        return self._range_constraints

    @property
    def module_call_graph(self):
        """[ModuleCallEntry]: the root's calling convention first, then every submodule."""
        return self._module_call_graph

    @module_call_graph.setter
    def module_call_graph(self, value):
        raise RuntimeError("Unable to set ExportedProgram's module_call_graph attribute.")

    @property
    def _in_spec(self):
        """The pytree spec of the ``(args, kwargs)`` export traced (None: not known)."""
        if not self._module_call_graph:
            return None
        return self._module_call_graph[0].signature.in_spec

    @property
    def graph_module(self):
        return self._graph_module

    @property
    def graph(self):
        return self._graph_module.graph

    @property
    def graph_signature(self):
        return self._graph_signature

    @property
    def state_dict(self):
        return self._state_dict

    def __call__(self, *args, **kwargs):
        raise RuntimeError("Unable to call ExportedProgram directly. "
                           "You should use `exported_program.module()` instead.")

    def __str__(self):
        return (f"ExportedProgram:\n{self._graph_module.print_readable(False)}\n"
                f"Graph signature: {self._graph_signature}\n"
                f"Range constraints: {self._range_constraints}\n")

    def module(self):
        """A runnable ``nn.Module`` holding the state: calling it runs the graph and writes the
        mutated buffers back."""
        return _ExportedModule(self)

    def run_decompositions(self, decomp_table=None):
        """The program lowered again through ``decomp_table`` (a dict or
        :class:`CustomDecompTable`; default :func:`default_decompositions`): each op the table
        holds is replaced by its decomposition; nodes keep their module stacks."""
        table = default_decompositions() if decomp_table is None else decomp_table
        table = table.materialize() if isinstance(table, CustomDecompTable) else dict(table)
        from . import _retrace  # export's own retracing (ember.export imports this module)
        gm = _retrace(self._graph_module, table, symbolic=self._input_shapes is not None)
        # the outputs as the new graph names them
        outs = next(n for n in gm.graph.nodes if n.op == "output").args[0]
        sig = ExportGraphSignature(
            [dataclasses.replace(s) for s in self._graph_signature.input_specs],
            [OutputSpec(s.kind, TensorArgument(o.name) if isinstance(o, Node) else s.arg,
                        s.target) for s, o in zip(self._graph_signature.output_specs, outs)])
        return ExportedProgram(gm, sig, self._state_dict, self._out_spec,
                               range_constraints=self._range_constraints,
                               module_call_graph=copy.deepcopy(self._module_call_graph),
                               _input_shapes=self._input_shapes,
                               _shape_guards=self._shape_guards)

    def _flat_user_inputs(self, args, kwargs):
        """The leaves of ``(args, kwargs)`` in the program's input order, with their key
        paths; PyTorch's ValueError when they are not shaped as the inputs export traced."""
        from ..utils import _pytree as pytree
        in_spec = self._in_spec
        kwargs_spec = in_spec.child(1)
        if set(kwargs) != set(kwargs_spec.context):
            raise ValueError(f"Ran into a kwarg keyword mismatch: Got the following keywords "
                             f"{list(kwargs)} but expected {kwargs_spec.context}")
        kwargs = {k: kwargs[k] for k in kwargs_spec.context}
        flat, got = pytree.tree_flatten_with_path((tuple(args), kwargs))
        if got != in_spec:
            raise ValueError(
                "Trying to flatten user inputs with exported input tree spec: \n"
                f"{in_spec}\n"
                "but actually got inputs with tree spec of: \n"
                f"{got}.\n"
                "Please check that the inputs have the same number and type of args and "
                "kwargs as the ones you used when tracing.")
        return flat

    def _check_inputs(self, user_args):
        """PyTorch's input guards of ``.module()``: static dims equal, symbolic dims inside
        their range and equal wherever they share a symbol (AssertionError 'Guard failed')."""
        if self._input_shapes is None:
            return
        seen = {}  # symbol -> (size in this call, where it was read)
        derived = []  # sizes spec'd as an expression of symbols (2*s77): checked last
        for (name, shape), x in zip(self._input_shapes, user_args):
            if shape is None:
                continue
            if not isinstance(x, Tensor) or x.dim() != len(shape):
                raise AssertionError(f"Guard failed: {name}.dim() == {len(shape)}")
            for i, (want, got) in enumerate(zip(shape, x.shape)):
                src = f"{name}.size()[{i}]"
                if isinstance(want, int):
                    if got != want:
                        raise AssertionError(f"Guard failed: {src} == {want}")
                elif not want.is_Symbol:
                    derived.append((want, got, src))
                elif want in seen:
                    if got != seen[want][0]:
                        raise AssertionError(f"Guard failed: {src} == {seen[want][1]}")
                else:
                    vr = self._range_constraints.get(want)
                    if vr is not None and got < vr.lower:
                        raise AssertionError(f"Guard failed: {src} >= {vr.lower}")
                    if vr is not None and got > vr.upper:
                        raise AssertionError(f"Guard failed: {src} <= {vr.upper}")
                    seen[want] = (got, src)
        import sympy
        from ..fx.experimental.symbolic_shapes import _PythonPrinter
        for want, got, src in derived:
            if want.xreplace({s: sympy.Integer(v) for s, (v, _) in seen.items()}) != got:
                where = _PythonPrinter({sym: s for sym, (_, s) in seen.items()})
                raise AssertionError(f"Guard failed: {where.doprint(want)} == {src}")
        if self._shape_guards:
            values = {sym: sympy.Integer(v) for sym, (v, _) in seen.items()}
            for g in self._shape_guards:
                if not bool(g.xreplace(values)):
                    where = _PythonPrinter({sym: src for sym, (_, src) in seen.items()})
                    raise AssertionError(f"Guard failed: {where.doprint(g)}")


def _exported_module_cls():
    from ..nn import Module, Parameter

    class ExportedModule(Module):
        def __init__(self, ep):
            super().__init__()
            self._ep = ep
            sig = ep.graph_signature
            for name in sig.parameters:
                _set_nested(self, name, Parameter(ep.state_dict[name].clone()), "param")
            for name in sig.buffers:
                _set_nested(self, name, ep.state_dict[name].clone(), "buffer")

        def forward(self, *args, **kwargs):
            if self._ep._in_spec is not None:
                return self._run_flat([v for _, v in self._ep._flat_user_inputs(args, kwargs)])
            # keyword inputs follow the positional ones, by their placeholder names
            names = self._ep.graph_signature.user_inputs
            return self._run_flat(list(args) + [kwargs[n] for n in names[len(args):]
                                                if n in kwargs])

        def _run_flat(self, args):
            """The program on its user inputs as the graph takes them (flat, in order)."""
            sig = self._ep.graph_signature
            self._ep._check_inputs(args)
            flat = []
            it = iter(args)
            for spec in sig.input_specs:
                if spec.kind == InputKind.USER_INPUT:
                    flat.append(next(it))
                else:
                    flat.append(_get_nested(self, spec.target))
            outs = self._ep.graph_module(*flat)
            user = []
            from .. import no_grad
            for spec, value in zip(sig.output_specs, outs):
                if spec.kind == OutputKind.BUFFER_MUTATION:
                    with no_grad():
                        _get_nested(self, spec.target).copy_(value)
                else:
                    user.append(value)
            if self._ep._out_spec is not None:
                from ..utils import _pytree as pytree
                return pytree.tree_unflatten(user, self._ep._out_spec)
            return user[0] if len(user) == 1 else tuple(user)
    return ExportedModule


def _ExportedModule(ep):
    return _exported_module_cls()(ep)


def _set_nested(root, name, value, kind):
    from ..nn import Module
    *path, attr = name.split(".")
    mod = root
    for p in path:
        if not hasattr(mod, p):
            mod.add_module(p, Module())
        mod = getattr(mod, p)
    if kind == "param":
        mod.register_parameter(attr, value)
    else:
        mod.register_buffer(attr, value)


def _get_nested(root, name):
    obj = root
    for p in name.split("."):
        obj = getattr(obj, p)
    return obj


def default_decompositions():
    """A new :class:`CustomDecompTable`: the decompositions down to the Core ATen op set, for
    :meth:`ExportedProgram.run_decompositions`."""
    return CustomDecompTable()
