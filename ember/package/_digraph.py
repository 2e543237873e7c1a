"""``DiGraph``: the exporter's module dependency graph (networkx's API, the part it uses), its
nodes kept in insertion order so that errors and paths are reported in the order met."""
from collections import deque


class DiGraph:
    """Nodes with attribute dicts and unlabelled directed edges."""

    def __init__(self):
        self._node = {}  # node -> its attributes
        self._succ = {}  # node -> {successor: True}
        self._pred = {}  # node -> {predecessor: True}
        self._node_order = {}
        self._insertion_idx = 0

    def add_node(self, n, **kwargs):
        """Add ``n`` with attributes ``kwargs`` (or update the attributes of a known node)."""
        if n not in self._node:
            self._node[n] = kwargs
            self._succ[n] = {}
            self._pred[n] = {}
            self._node_order[n] = self._insertion_idx
            self._insertion_idx += 1
        else:
            self._node[n].update(kwargs)

    def add_edge(self, u, v):
        self.add_node(u)
        self.add_node(v)
        self._succ[u][v] = True
        self._pred[v][u] = True

    def successors(self, n):
        try:
            return iter(self._succ[n])
        except KeyError as e:
            raise ValueError(f"The node {n} is not in the digraph.") from e

    def predecessors(self, n):
        try:
            return iter(self._pred[n])
        except KeyError as e:
            raise ValueError(f"The node {n} is not in the digraph.") from e

    @property
    def edges(self):
        for n, successors in self._succ.items():
            for succ in successors:
                yield n, succ

    @property
    def nodes(self):
        return self._node

    def __iter__(self):
        return iter(self._node)

    def __contains__(self, n):
        try:
            return n in self._node
        except TypeError:
            return False

    def _closure(self, src, step):
        result = {src}
        working_set = deque([src])
        while working_set:
            for n in step(working_set.popleft()):
                if n not in result:
                    result.add(n)
                    working_set.append(n)
        return result

    def forward_transitive_closure(self, src):
        """``src`` and every node reachable from it."""
        return self._closure(src, self.successors)

    def backward_transitive_closure(self, src):
        """``src`` and every node from which it is reachable."""
        return self._closure(src, self.predecessors)

    def all_paths(self, src, dst):
        """The subgraph of all paths from ``src`` to ``dst``, in dot format."""
        result_graph = DiGraph()
        reachable = self.forward_transitive_closure(src)
        if dst not in reachable:
            return result_graph.to_dot()
        working_set = deque([dst])
        seen = {dst}
        while working_set:
            cur = working_set.popleft()
            for n in self.predecessors(cur):
                if n in reachable:
                    result_graph.add_edge(n, cur)
                    if n not in seen:
                        seen.add(n)
                        working_set.append(n)
        return result_graph.to_dot()

    def first_path(self, dst):
        """A path to ``dst`` from a node with no predecessors, through the earliest-added
        predecessor at each step."""
        path = []
        while dst:
            path.append(dst)
            dst, min_idx = "", None
            for candidate in self._pred[path[-1]]:
                idx = self._node_order.get(candidate)
                if idx is None:
                    break
                if min_idx is None or idx < min_idx:
                    min_idx, dst = idx, candidate
        return list(reversed(path))

    def to_dot(self):
        edges = "\n".join(f'"{f}" -> "{t}";' for f, t in self.edges)
        return f"digraph G {{\nrankdir = LR;\nnode [shape=box];\n{edges}\n}}\n"
