"""``GraphLowering``: an fx graph of core aten ops -> Inductor IR buffers (PyTorch's
``torch._inductor.graph``).

Each node is lowered in order (``lowering.lowerings``) or, without a lowering, becomes a
``FallbackKernel`` that calls the eager op. A lazy pointwise result is *realized* (given
memory, with the strides the traced graph recorded for it) when more than one node uses it,
when a user needs memory (views, fallbacks, the graph's outputs) or when it is a reduction;
otherwise it stays lazy and is inlined into its single consumer.
"""
import collections
import logging
import operator

import ember

from .._core.strides import contiguous_strides
from . import config, ir
from .codegen.cpp import can_codegen
from .exc import LoweringException, record_missing_op
from .lowering import lowerings
from .virtualized import set_graph_handler

__all__ = ["GraphLowering", "SUPPORTED_DTYPES"]

log = logging.getLogger("ember._inductor")

# dtypes the C code generator handles (float16/bfloat16 computed in float32); nodes touching
# others (complex, float8) run as fallbacks
SUPPORTED_DTYPES = frozenset({ember.float32, ember.float64, ember.float16, ember.bfloat16,
                              ember.int64, ember.int32, ember.int16, ember.int8, ember.uint8,
                              ember.bool})


def _tensors(val):
    if isinstance(val, ember.Tensor):
        yield val
    elif isinstance(val, (list, tuple)):
        for v in val:
            yield from _tensors(v)


class GraphLowering:
    def __init__(self, gm, example_inputs=None, name="graph"):
        self.gm = gm
        self.name = name
        self.buffers = []            # ComputedBuffer / FallbackKernel / MultiOutput, in order
        self.name_to_buffer = {}
        self.graph_inputs = {}       # placeholder (or get_attr) name -> InputBuffer
        self.constants = {}          # get_attr name -> the tensor the graph holds
        self.graph_input_names = []  # every placeholder, tensors or not, in order
        self.graph_outputs = []      # IR values (or Python values) returned
        self.saved_outputs = set()   # names of the buffers a forward graph returns for backward
        self.fallbacks = collections.Counter()
        self.current_node = None
        self.node_order = {n: i for i, n in enumerate(gm.graph.nodes)}
        self._computed = {}  # fingerprint of a realized loop nest -> its buffer
        self.bounds_checks = {}  # index buffer name -> [(size, op, dim, wrap)] for the wrapper
        self._env = {}

    # -- buffers ----------------------------------------------------------------------------------
    def register_buffer(self, buf):
        self.buffers.append(buf)
        self.name_to_buffer[buf.name] = buf
        return buf

    def add_bounds_check(self, index, size, op, dim, wrap=False):
        checks = self.bounds_checks.setdefault(index.get_name(), [])
        if (size, op, dim, wrap) not in checks:
            checks.append((size, op, dim, wrap))

    def get_buffer(self, name):
        """The input or computed buffer called ``name`` (PyTorch's ``V.graph.get_buffer``)."""
        return self.graph_inputs.get(name) or self.name_to_buffer[name]

    def dtype_of(self, name):
        return self.get_buffer(name).get_dtype()

    def new_name(self):
        return f"buf{len(self.buffers)}"

    def realize(self, x, stride=None):
        """``x`` in memory: buffers and views as they are; a ``Pointwise``/``Reduction``
        becomes a ``ComputedBuffer`` (contiguous unless ``stride`` is given)."""
        if not isinstance(x, ir.Loops):
            return x
        size = x.get_size()
        layout = ir.Layout(size, stride if stride is not None else contiguous_strides(size),
                           x.get_dtype())
        # a value computed again (var's mean and mean's: var_mean decomposes into both) is
        # the buffer that already holds it
        key = (x.fingerprint(), layout.stride)
        hit = self._computed.get(key)
        if hit is not None:
            return hit
        buf = self._computed[key] = self.register_buffer(
            ir.ComputedBuffer(self.new_name(), layout, x))
        return buf

    # -- lowering ---------------------------------------------------------------------------------
    def run(self):
        with set_graph_handler(self):
            for node in self.gm.graph.nodes:
                self.current_node = node
                handler = getattr(self, node.op)
                self._env[node] = handler(node)
        if self.fallbacks:
            log.info("inductor %s: %d fallback calls to eager ops: %s", self.name,
                     sum(self.fallbacks.values()),
                     ", ".join(f"{k} x{v}" for k, v in self.fallbacks.most_common()))
        return self

    def _map(self, a):
        return ember.fx.node.map_arg(a, lambda n: self._env[n])

    def placeholder(self, node):
        self.graph_input_names.append(node.name)
        val = node.meta.get("val")
        if not isinstance(val, ember.Tensor):
            return val
        buf = ir.InputBuffer(node.name, ir.Layout(val.shape, val.stride(), val.dtype,
                                                  val.storage_offset()))
        self.graph_inputs[node.name] = buf
        return buf

    def get_attr(self, node):
        """A tensor the graph holds (a constant the traced program made, such as
        ``ember.tensor([2.0, 3.0])``): read like an input, bound by name in the wrapper's
        namespace (PyTorch's ``V.graph.constants``)."""
        val = getattr(self.gm, node.target)
        if not isinstance(val, ember.Tensor):
            return val
        buf = ir.InputBuffer(node.name, ir.Layout(val.shape, val.stride(), val.dtype,
                                                  val.storage_offset()))
        self.graph_inputs[node.name] = buf
        self.constants[node.name] = val
        return buf

    def call_function(self, node):
        target = node.target
        args, kwargs = self._map(node.args), self._map(node.kwargs)
        if target is operator.getitem:
            return self._maybe_realize(node, args[0][args[1]])
        lowering = lowerings.get(target)
        if lowering is not None and self._dtypes_supported(node):
            if not lowering.lazy_inputs:
                args, kwargs = self._realize_args(args), self._realize_args(kwargs)
            try:
                result = lowering(*args, **kwargs)
                if isinstance(result, ir.Loops) and not can_codegen(result, self.dtype_of):
                    raise NotImplementedError(f"no C for {target}")
                self._check_meta(node, result)
            except NotImplementedError:
                result = self.fallback(node, args, kwargs)
            except Exception as e:
                raise LoweringException(e, target, args, kwargs) from e
        else:
            result = self.fallback(node, args, kwargs)
        return self._maybe_realize(node, result)

    def call_method(self, node):
        raise NotImplementedError(f"call_method {node.target} is not lowered")

    def call_module(self, node):
        raise NotImplementedError(f"call_module {node.target} is not lowered")

    def output(self, node):
        outs = self._map(node.args[0])
        flat = outs if isinstance(outs, (list, tuple)) else (outs,)
        vals = node.args[0] if isinstance(node.args[0], (list, tuple)) else (node.args[0],)
        realized = []
        for v, n in zip(flat, vals):
            if isinstance(v, ir.Loops):
                v = self.realize(v, n.meta["val"].stride())
            realized.append(v)
        self.graph_outputs = realized
        # AOTAutograd's partitioner names the forward graph's values saved for backward
        saved = set(getattr(self.gm, "meta", {}).get("saved", ()))
        self.saved_outputs = {v.get_name() for v, n in zip(realized, vals)
                              if getattr(n, "name", None) in saved
                              and isinstance(v, (ir.Buffer, ir.ReinterpretView))}
        return None

    def _check_meta(self, node, result):
        """A lowering's result must have the traced size and dtype; one that does not is a
        lowering bug: logged, and the node runs eagerly instead."""
        vals = node.meta["val"]
        vals, results = ((vals, result) if isinstance(result, (list, tuple))
                         else ((vals,), (result,)))
        for v, r in zip(vals, results):
            if isinstance(r, ir.IRNode) and (tuple(r.get_size()) != tuple(v.shape)
                                             or r.get_dtype() != v.dtype):
                log.warning("inductor: the lowering of %s gave %s %s where the graph has %s "
                            "%s; running it eagerly", node.target, list(r.get_size()),
                            r.get_dtype(), list(v.shape), v.dtype)
                raise NotImplementedError("lowering disagrees with the traced metadata")

    def _dtypes_supported(self, node):
        vals = [node.meta.get("val")] + [a.meta.get("val") for a in node.all_input_nodes]
        return all(t.dtype in SUPPORTED_DTYPES and t.device.type == "cpu"
                   for v in vals for t in _tensors(v))

    def _realize_args(self, a):
        if isinstance(a, ir.Loops):
            raise AssertionError("lazy value reached a lowering that needs memory")
        if isinstance(a, (list, tuple)):
            return type(a)(self._realize_args(x) for x in a)
        if isinstance(a, dict):
            return {k: self._realize_args(v) for k, v in a.items()}
        return a

    def _maybe_realize(self, node, result):
        """Give ``result`` memory unless it is a pointwise value its consumers can compute
        themselves: one lazy consumer, or a few when the value is cheap (recomputing a
        handful of ops per element costs less than a round trip through memory)."""
        if isinstance(result, (list, tuple)):
            return result  # per-element decisions happen at the getitem nodes
        if not isinstance(result, ir.Loops):
            return result
        users = list(node.users)
        lazy_ok = (isinstance(result, ir.Pointwise) and users
                   and all(u.op == "call_function"
                           and getattr(lowerings.get(u.target), "lazy_inputs", False)
                           and self._dtypes_supported(u) for u in users)
                   and (len(users) == 1 or (len(users) <= config.inline_max_users
                                            and result.op_count() <= config.inline_max_ops)))
        if lazy_ok:
            return result
        return self.realize(result, node.meta["val"].stride())

    def fallback(self, node, args, kwargs):
        """Run ``node`` through its eager op from the wrapper."""
        self.fallbacks[str(node.target)] += 1
        record_missing_op(node.target)
        args, kwargs = self._realize_all(args), self._realize_all(kwargs)
        # (a negative view of a complex value as its values: a real view of it must read them)
        target = node.target
        if target is ember.ops.aten._neg_view.default:
            target = ember.ops.aten.neg.default
        val = node.meta.get("val")
        if isinstance(val, ember.Tensor):
            layout = ir.Layout(val.shape, val.stride(), val.dtype, val.storage_offset())
            return self.register_buffer(ir.FallbackKernel(self.new_name(), layout, target,
                                                          args, kwargs, (node,)))
        kernel = self.register_buffer(ir.FallbackKernel(self.new_name(), None, target,
                                                        args, kwargs, (node,)))
        return self._multi_outputs(kernel, val, ())

    def _multi_outputs(self, kernel, val, path):
        if isinstance(val, ember.Tensor):
            layout = ir.Layout(val.shape, val.stride(), val.dtype, val.storage_offset())
            return self.register_buffer(ir.MultiOutput(self.new_name(), layout, kernel, path))
        if isinstance(val, (list, tuple)):
            return type(val)(self._multi_outputs(kernel, v, path + (i,))
                             for i, v in enumerate(val))
        if val is None:
            return None
        if type(val) is int:
            # a size the trace computed (flash attention's max_q, say): static shapes make it a
            # constant of the graph
            return val
        raise NotImplementedError(f"{kernel.op} returns {type(val).__name__}, which the "
                                  "wrapper cannot pass on")

    def _realize_all(self, a):
        if isinstance(a, ir.Loops):
            return self.realize(a)
        if isinstance(a, (list, tuple)):
            return type(a)(self._realize_all(x) for x in a)
        if isinstance(a, dict):
            return {k: self._realize_all(v) for k, v in a.items()}
        return a

