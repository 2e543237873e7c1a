"""The scheduler (PyTorch's ``torch._inductor.scheduler``): groups the graph's buffers into
fused kernels and decides which intermediates never need memory.

Buffers are taken in graph order. A ``ComputedBuffer`` joins the kernel being built when its
loops line up with the kernel's (``outer`` dims run in parallel, ``inner`` dims in each
body) and every value it reads from that kernel is read at the element the producer wrote in
the same iteration. That admits vertical fusion (producer → consumer, pointwise prologues and
epilogues around reductions: softmax, layer_norm; around scans: ``cumsum(x).exp()``) and
horizontal fusion (independent loops over the same range). A scatter (accumulating stores)
is a kernel of its own. A node may join any kernel placed after everything it reads, so independent
loops fuse across eager calls (matmuls) between them; it never moves above an eager op that
mutates its inputs. A ``TemplateBuffer`` (max-autotune's GEMM) is a kernel of its own that
takes pointwise consumers of its result, over the same elements, as its epilogue.
"""
import sympy

from . import config, ir

__all__ = ["Scheduler", "FusedKernel", "TemplateKernel"]


def _mutates(op):
    schema = getattr(op, "_schema", None)
    return schema is None or schema.is_mutable


def _non1(sizes):
    return tuple(n for n in sizes if n != 1)


def node_shape(node):
    """``(outer, inner, has_inner_loop)`` loop dims of a node: a reduction's kept and reduced
    dims, a scan's other dims and its scanned dim; a pointwise node's dims all inner (it may
    be split when it joins a reduction's kernel). A scatter has loops of its own (``()``)."""
    data = node.data
    if isinstance(data, ir.Reduction):
        return _non1(data.ranges), _non1(data.reduction_ranges), True
    if isinstance(data, ir.Scan):
        return _non1(data.outer_ranges), _non1(data.scan_ranges), True
    if isinstance(data, ir.Scatter):
        return (), (), False
    return (), _non1(data.ranges), False


def loop_vars(outer, inner):
    xs = [sympy.Symbol(f"x{i}", integer=True, nonnegative=True) for i in range(len(outer))]
    rs = [sympy.Symbol(f"r{i}", integer=True, nonnegative=True) for i in range(len(inner))]
    return xs, rs


def spread(sizes, variables):
    """Loop variables for ``sizes``: the non-1 dims take ``variables`` in order."""
    it = iter(variables)
    return [sympy.Integer(0) if n == 1 else next(it) for n in sizes]


def node_index(node, xs, rs):
    data = node.data
    if isinstance(data, ir.Reduction):
        return spread(data.ranges, xs), spread(data.reduction_ranges, rs)
    if isinstance(data, ir.Scan):
        return data.full_index(spread(data.outer_ranges, xs), spread(data.scan_ranges, rs)), None
    if is_outer_only(node, xs, rs):
        return spread(data.ranges, xs), None
    return spread(data.ranges, xs + rs), None


def is_outer_only(node, xs, rs):
    """A pointwise node over the kernel's outer dims only (after a reduction: var = sum / n)
    runs once per outer iteration, outside the inner loops."""
    return (rs and not isinstance(node.data, (ir.Reduction, ir.Scan))
            and len(_non1(node.data.ranges)) == len(xs))


def store_index(node, xs, rs):
    idx, _ = node_index(node, xs, rs)
    return sympy.expand(node.layout.index(idx) - node.layout.offset)


class FusedKernel:
    """Nodes computed by one C kernel over ``outer`` x ``inner`` loops."""

    def __init__(self, node):
        self.outer, self.inner, self.has_reduction = node_shape(node)
        self.nodes = [node]

    @property
    def names(self):
        return {n.name for n in self.nodes}

    def fit(self, node):
        """The kernel's (outer, inner) with ``node`` in it, or None if its loops differ."""
        if any(isinstance(n.data, ir.Scatter) for n in self.nodes + [node]):
            return None  # a scatter's kernel is its own loops (codegen.cpp)
        outer, inner, is_red = node_shape(node)
        if is_red and not inner:
            return None  # a reduction over size-1 dims only: a copy, kept apart
        if is_red:
            if (outer, inner) == (self.outer, self.inner):
                return outer, inner
            if not self.has_reduction and not self.outer and self.inner in (outer + inner, outer):
                # the pointwise loops split at the reduction's dims, or they become the
                # reduction's outer loops (their nodes then run once per outer iteration)
                return outer, inner
            return None
        if inner == self.outer + self.inner or (self.inner and inner == self.outer):
            return self.outer, self.inner
        return None

    def can_fuse(self, node, checked=()):
        """Whether ``node`` may join; ``checked`` are the index buffers the wrapper checks for
        bounds between kernels (their readers must run in a later kernel)."""
        if len(self.nodes) >= config.max_fusion_size:
            return False
        if self.names & checked & node.reads():
            return False
        shape = self.fit(node)
        if shape is None:
            return False
        xs, rs = loop_vars(*shape)
        produced = {n.name: n for n in self.nodes}
        idx, ridx = node_index(node, xs, rs)
        for name, index in node.data.loads(idx, ridx):
            producer = produced.get(name)
            if producer is None:
                continue
            if sympy.expand(index - store_index(producer, xs, rs)) != 0:
                return False  # reads another iteration's element: needs the whole buffer
        return True

    def add(self, node):
        self.outer, self.inner = self.fit(node)
        self.has_reduction |= node_shape(node)[2]
        self.nodes.append(node)


class TemplateKernel:
    """A ``TemplateBuffer``'s kernel and its epilogue: pointwise nodes over the template's
    elements that read its result (or an earlier epilogue node's) at the element they compute.
    The epilogue's loop variables are the scheduler's: ``x0...`` over the leading non-1 dims of
    the result, ``r0`` over the last."""

    def __init__(self, buf):
        self.template = buf
        self.nodes = [buf]
        self.shape = _non1(buf.get_size())
        self.xs, self.rs = loop_vars(self.shape[:-1], self.shape[-1:])

    @property
    def names(self):
        return {n.name for n in self.nodes}

    def store_index(self, buf):
        """Where element (xs, rs) of ``buf``, the template's result or an epilogue node's, is
        stored, from its data pointer."""
        idx = spread(buf.get_size(), self.xs + self.rs)
        return sympy.expand(buf.layout.index(idx) - buf.layout.offset)

    def can_fuse(self, node, checked=()):
        if len(self.nodes) >= config.max_fusion_size:
            return False
        data = node.data
        if not isinstance(data, ir.Pointwise) or _non1(data.ranges) != self.shape:
            return False
        names = self.names
        if not node.reads() & names or names & checked & node.reads():
            return False
        produced = {n.name: n for n in self.nodes}
        for name, index in data.loads(spread(data.ranges, self.xs + self.rs)):
            producer = produced.get(name)
            if producer is not None and \
                    sympy.expand(index - self.store_index(producer)) != 0:
                return False  # another element of the product: needs all of it first
        return True

    def add(self, node):
        self.nodes.append(node)


class Scheduler:
    """``groups``: FusedKernels and the other buffers (fallbacks, their outputs) in the order
    they run."""

    def __init__(self, graph):
        self.graph = graph
        self.groups = []
        self.checked = set(graph.bounds_checks)
        where = {}  # buffer name -> index of the group producing it
        barrier = 0  # no node moves above a fallback that mutates its inputs
        for buf in graph.buffers:
            if isinstance(buf, ir.ComputedBuffer):
                # the earliest group it may join: after everything it reads
                first = max([barrier] + [where[n] for n in buf.reads() if n in where])
                target = self._kernel_for(buf, first)
                if target is None:
                    target = len(self.groups)
                    self.groups.append(FusedKernel(buf))
                else:
                    self.groups[target].add(buf)
            elif isinstance(buf, ir.TemplateBuffer):
                target = len(self.groups)
                self.groups.append(TemplateKernel(buf))
            else:
                target = len(self.groups)
                self.groups.append(buf)
                if isinstance(buf, ir.FallbackKernel) and _mutates(buf.op):
                    barrier = target
            where[buf.name] = target
        self.users = self._users()

    def _kernel_for(self, buf, first):
        """The latest kernel at or after group ``first`` that ``buf`` fuses into."""
        for i in range(len(self.groups) - 1, first - 1, -1):
            g = self.groups[i]
            if isinstance(g, (FusedKernel, TemplateKernel)) and g.can_fuse(buf, self.checked):
                return i
        return None

    def _users(self):
        """buffer name -> the groups that read it (``"output"`` for the graph's result,
        ``"backward"`` for a forward graph's values saved for backward)."""
        users = {}
        for g in self.groups:
            nodes = g.nodes if isinstance(g, (FusedKernel, TemplateKernel)) else [g]
            for n in nodes:
                for name in n.reads():
                    users.setdefault(name, set()).add(id(g))
        for out in self.graph.graph_outputs:
            if isinstance(out, (ir.Buffer, ir.ReinterpretView)):
                users.setdefault(out.get_name(), set()).add("output")
        for name in self.graph.saved_outputs:
            users.setdefault(name, set()).add("backward")
        for name in self.checked:  # the wrapper reads them: they stay in memory
            users.setdefault(name, set()).add("bounds check")
        return users

    def describe(self):
        """The scheduled IR as text (``config.debug``): each kernel's loops and nodes, each
        eager call."""
        out = []
        for g in self.groups:
            if isinstance(g, FusedKernel):
                out.append(f"kernel: outer {list(g.outer)} x inner {list(g.inner)}")
                for n in g.nodes:
                    d = n.data
                    kind = (f"{d.reduction_type} over {list(d.reduction_ranges)}"
                            if isinstance(d, ir.Reduction) else
                            f"scan along dim {d.scan_dim}" if isinstance(d, ir.Scan) else
                            f"scatter-add of {list(d.ranges)}" if isinstance(d, ir.Scatter)
                            else "pointwise")
                    out.append(f"  {n.name} = {kind} {list(d.ranges)} {n.layout} "
                               f"reads {sorted(n.reads())} from {[o.name for o in n.origins]}")
            elif isinstance(g, TemplateKernel):
                t = g.template
                out.append(f"template: {t.name} = {t.config.name}{list(t.get_size())} "
                           f"{t.layout} reads {sorted(t.reads())}")
                out += [f"  epilogue {n.name} = pointwise {list(n.data.ranges)} {n.layout} "
                        f"reads {sorted(n.reads())}" for n in g.nodes[1:]]
            elif isinstance(g, ir.MultiOutput):
                out.append(f"{g.name} = {g.parent.name}{list(g.index)} {g.layout}")
            else:
                out.append(f"{g.name} = {g.op}(reads {sorted(g.reads())}) {g.layout}")
        return "\n".join(out) + "\n"
