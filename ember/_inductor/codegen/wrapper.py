"""The Python wrapper of a compiled graph (PyTorch's ``torch._inductor.codegen.wrapper``):
allocates buffers, calls the fused C kernels and the eager fallbacks in order, frees
buffers after their last use, and returns the graph's outputs.

Its text is what ``TORCH_LOGS=output_code`` prints beside the C source; it is compiled under
its path in the cache directory, so tracebacks show its lines.
"""
import math

import ember
from ..._core import api_name
from ..._core.strides import storage_extent
from .. import ir
from ..scheduler import FusedKernel, TemplateKernel
from .cpp import STORAGE_CTYPES, CppKernel, epilogue_source

__all__ = ["WrapperCodeGen"]


def alloc_nbytes(layout):
    """Bytes of a new buffer of ``layout`` (its storage extent, offset 0)."""
    return storage_extent(layout.size, layout.stride, 0) * layout.dtype.itemsize


def op_expr(op):
    """The wrapper's expression for op overload ``op``: ``aten.<name>.<overload>``, or
    ``ember.ops.<namespace>.<name>.<overload>`` for another namespace's (a ``torch.library``
    custom op)."""
    name = str(op)
    return name if name.startswith("aten.") else f"ember.ops.{name}"


def _op_name(target):
    return str(getattr(target, "overloadpacket", target)).split(".")[-1]


class WrapperCodeGen:
    """Turns a scheduled graph into ``(python source, [(kernel, C source, n_args, ctypes)])``;
    ``constants`` holds the values the Python source refers to by name."""

    def __init__(self, graph, scheduler):
        self.graph = graph
        self.scheduler = scheduler
        self.constants = {}
        self.kernels = []
        self.lines = []  # (code, names used, name defined or None)

    # -- arguments ------------------------------------------------------------------------------
    def arg(self, a):
        if isinstance(a, ir.ReinterpretView):
            lay = a.layout
            return (f"reinterpret_tensor({a.data.name}, {tuple(lay.size)}, {tuple(lay.stride)}, "
                    f"{lay.offset})")
        if isinstance(a, ir.Buffer):
            return a.name
        if isinstance(a, list):
            return "[" + ", ".join(self.arg(x) for x in a) + "]"
        if isinstance(a, tuple):
            return "(" + "".join(self.arg(x) + ", " for x in a) + ")"
        if isinstance(a, ember.dtype):
            return api_name.ember_repr(a)
        if isinstance(a, float) and not math.isfinite(a):
            return f"float('{a}')"
        if a is None or isinstance(a, (bool, int, float, str)):
            return repr(a)
        name = f"const{len(self.constants)}"  # dtypes, devices, layouts, memory formats...
        self.constants[name] = a
        return name

    @staticmethod
    def _names(a):
        if isinstance(a, (ir.Buffer, ir.ReinterpretView)):
            return {a.get_name()}
        if isinstance(a, (list, tuple)):
            return set().union(*(WrapperCodeGen._names(x) for x in a)) if a else set()
        if isinstance(a, dict):
            return WrapperCodeGen._names(list(a.values()))
        return set()

    def emit(self, code, uses=(), defines=None):
        self.lines.append((code, set(uses), defines))

    # -- groups ---------------------------------------------------------------------------------
    def kernel_name(self, nodes, index):
        """``(cpp_fused_<ops>_<index>, the fx nodes computed, in graph order)``."""
        ops_in_kernel = []
        for n in nodes:
            for o in n.origins:
                if o not in ops_in_kernel:
                    ops_in_kernel.append(o)
        ops_in_kernel.sort(key=self.graph.node_order.__getitem__)
        names = sorted({_op_name(o.target) for o in ops_in_kernel})
        return f"cpp_fused_{'_'.join(names)[:80]}_{index}", ops_in_kernel

    def codegen_kernel(self, fused, index):
        kname, ops_in_kernel = self.kernel_name(fused.nodes, index)
        kernel = CppKernel(kname, fused, self.graph).codegen()
        users = self.scheduler.users
        private = {n.name for n in fused.nodes if users.get(n.name, set()) <= {id(fused)}}
        removed = {name for name in private if name not in kernel.memory_loads}
        local = (private - removed) & kernel.row_local_candidates()
        produced = [n.name for n in fused.nodes if n.name not in removed | local]
        inputs = [name for name in kernel.memory_loads if name not in fused.names]
        args = [(name, False) for name in inputs] + [(name, True) for name in produced]
        comment = "; ".join(f"{o.target}({o.name})" for o in ops_in_kernel)
        # outputs no later kernel (nor the backward) reads: streaming stores may write them
        final = {name for name in produced if users.get(name, set()) <= {id(fused), "output"}}
        src = kernel.source(args, removed, local, comment, final)
        self.emit_kernel_call(kname, src, args, [n for n in fused.nodes if n.name in produced])

    def codegen_template(self, group, index):
        """A GEMM template with its epilogue: the template's product and the epilogue nodes are
        stored only when someone else reads them."""
        kname, ops_in_kernel = self.kernel_name(group.nodes, index)
        buf = group.template
        users = self.scheduler.users
        kept = [n for n in group.nodes if not users.get(n.name, set()) <= {id(group)}]
        prelude, lines, loads = epilogue_source(kname, group, self.graph,
                                                {n.name for n in kept})
        template = buf.template
        inputs = list(dict.fromkeys([template.a.name, template.b.name] +
                                    [name for name in loads if name not in group.names]))
        args = [(name, False) for name in inputs] + [(n.name, True) for n in kept]
        params = [f"{'' if out else 'const '}{STORAGE_CTYPES[self.graph.dtype_of(name)]}* "
                  f"restrict ptr_{name}" for name, out in args]
        comment = (f"GEMM template {buf.config.name} with its epilogue: "
                   + "; ".join(f"{o.target}({o.name})" for o in ops_in_kernel))
        src = template.render(kname, buf.config, params, (prelude, lines),
                              store=buf in kept, comment=comment)
        self.emit_kernel_call(kname, src, args, kept)

    def emit_kernel_call(self, kname, src, args, produced):
        """Add kernel ``kname`` to the module; allocate the ``produced`` buffers and call it
        with the data pointers of ``args`` ([(buffer name, is_output)])."""
        ctypes = [STORAGE_CTYPES[self.graph.dtype_of(a)] for a, _ in args]
        self.kernels.append((kname, src, len(args), ctypes))
        for n in produced:
            self.codegen_alloc(n.name, n.layout)
        self.codegen_kernel_call(kname, [a for a, _ in args])

    def codegen_alloc(self, name, lay):
        """``name = empty_strided_cpu(size, stride, dtype, nbytes)``: ``empty_strided`` without
        the dispatcher (runtime.py), its storage size worked out here once."""
        self.emit(f"{name} = empty_strided_cpu({tuple(lay.size)}, {tuple(lay.stride)}, "
                  f"{self.arg(lay.dtype)}, {alloc_nbytes(lay)})", defines=name)

    def codegen_kernel_call(self, kname, args):
        ptrs = ", ".join(f"data_ptr({a})" for a in args)
        self.emit(f"kernels.{kname}({ptrs})", uses=args)

    def codegen_fallback(self, buf):
        args = ", ".join([self.arg(a) for a in buf.args]
                         + [f"{k}={self.arg(v)}" for k, v in buf.kwargs.items()])
        self.emit(f"{buf.name} = {op_expr(buf.op)}({args})",
                  uses=self._names(list(buf.args) + list(buf.kwargs.values())), defines=buf.name)

    def codegen_multi_output(self, buf):
        path = "".join(f"[{i}]" for i in buf.index)
        self.emit(f"{buf.name} = {buf.parent.name}{path}", uses=[buf.parent.name], defines=buf.name)

    def codegen_bounds_checks(self, name):
        for size, op, dim, wrap in self.graph.bounds_checks.get(name, ()):
            self.emit(f"check_bounds({name}, {size}, {op!r}, {dim}{', wrap=True' if wrap else ''})",
                      uses=[name])

    def generate(self):
        g = self.graph
        for name in g.graph_input_names:
            self.codegen_bounds_checks(name)
        k = 0
        for group in self.scheduler.groups:
            if isinstance(group, FusedKernel):
                self.codegen_kernel(group, k)
                k += 1
            elif isinstance(group, TemplateKernel):
                self.codegen_template(group, k)
                k += 1
            elif isinstance(group, ir.MultiOutput):
                self.codegen_multi_output(group)
            else:
                self.codegen_fallback(group)
            produced = group.nodes if isinstance(group, (FusedKernel, TemplateKernel)) \
                else [group]
            for n in produced:
                self.codegen_bounds_checks(n.name)
        outs = [self.arg(o) for o in g.graph_outputs]
        out_names = self._names(list(g.graph_outputs))
        body = [f"    {', '.join(g.graph_input_names)}{',' if len(g.graph_input_names) == 1 else ''}"
                " = args" if g.graph_input_names else None,
                "    args.clear()"]
        body = [b for b in body if b]
        body += ["    " + ln for ln in self._with_frees(out_names | set(g.constants))]
        body.append(f"    return ({''.join(o + ', ' for o in outs)})")
        header = [
            f"# ember._inductor: the wrapper of graph {g.name}",
            "# `kernels` is the C module built from the kernels printed beside this file;",
            "# constN are the non-literal arguments (dtypes, devices) of the eager calls;",
            "# _tensor_constantN the tensors the graph holds (get_attr).",
            "import ember",
            "from ember._inductor.runtime import check_bounds, data_ptr, empty_strided_cpu, "
            "reinterpret_tensor",
            "",
            "aten = ember.ops.aten",
            "",
            "",
            "def call(args):",
        ]
        return "\n".join(header + body) + "\n"

    def dead_after(self, keep):
        """For each body line, the buffers (outside ``keep``) whose last use it is, sorted: the
        wrapper drops its reference to them right after that line."""
        last = {}
        for i, (_, uses, defines) in enumerate(self.lines):
            for n in uses | ({defines} if defines else set()):
                last[n] = i
        dead = [[] for _ in self.lines]
        for n, i in sorted(last.items()):
            if n not in keep:
                dead[i].append(n)
        return dead

    def _with_frees(self, keep):
        """The body lines with ``del bufN`` after each buffer's last use."""
        out = []
        for (code, _, _), dead in zip(self.lines, self.dead_after(keep)):
            out.append(code)
            if dead:
                out.append(f"del {', '.join(dead)}")
        return out
