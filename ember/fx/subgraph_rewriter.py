"""``replace_pattern``: find every non-overlapping occurrence of a pattern graph in a
GraphModule and splice in a replacement graph (PyTorch's ``torch.fx.subgraph_rewriter``).

Patterns and replacements are functions (traced with ``symbolic_trace``) or GraphModules. A
match binds each pattern placeholder to a node of the graph and requires every other pattern
node to equal a graph node (same op, target and arguments); nodes inside the match may not be
read from outside it, except the ones the pattern returns.
"""
from typing import NamedTuple

from .graph_module import GraphModule
from .node import Node

__all__ = ["Match", "replace_pattern", "ReplacedPatterns"]


class Match(NamedTuple):
    anchor: Node  # the pattern's (first) returned node, as PyTorch reports it
    nodes_map: dict  # pattern node -> graph node


class ReplacedPatterns(NamedTuple):
    anchor: Node
    nodes_map: dict
    replacements: list


def _as_graph(p):
    from ._symbolic_trace import symbolic_trace
    return p.graph if isinstance(p, GraphModule) else symbolic_trace(p).graph


def _returned(graph):
    out = next(n for n in reversed(graph.nodes) if n.op == "output")
    value = out.args[0]
    return list(value) if isinstance(value, (tuple, list)) else [value]


class _Matcher:
    def __init__(self, pattern):
        self.pattern = pattern
        self.placeholders = [n for n in pattern.nodes if n.op == "placeholder"]
        self.returned = _returned(pattern)

    def match_at(self, anchor_candidates):
        nodes_map = {}

        def match_value(pv, gv):
            if isinstance(pv, Node):
                return isinstance(gv, Node) and match_node(pv, gv)
            if isinstance(pv, (tuple, list)):
                return isinstance(gv, (tuple, list)) and len(pv) == len(gv) and \
                    all(match_value(a, b) for a, b in zip(pv, gv))
            if isinstance(pv, dict):
                return isinstance(gv, dict) and pv.keys() == gv.keys() and \
                    all(match_value(pv[k], gv[k]) for k in pv)
            return type(pv) is type(gv) and pv == gv

        def match_node(pn, gn):
            if pn in nodes_map:
                return nodes_map[pn] is gn
            if pn.op == "placeholder":
                if gn in nodes_map.values():
                    return False  # two pattern inputs cannot be one graph value
                nodes_map[pn] = gn
                return True
            if pn.op != gn.op or pn.target != gn.target:
                return False
            nodes_map[pn] = gn
            if not (match_value(pn.args, gn.args) and match_value(pn.kwargs, gn.kwargs)):
                del nodes_map[pn]
                return False
            return True

        for pn, gn in zip(self.returned, anchor_candidates):
            if not match_node(pn, gn):
                return None
        # the match's inner nodes must not be read outside it (they are going away)
        inner = {nodes_map[p] for p in nodes_map if p.op != "placeholder"}
        kept = {nodes_map[p] for p in self.returned}
        for gn in inner - kept:
            if any(u not in inner for u in gn.users):
                return None
        return nodes_map


def _replace_pattern(gm, pattern, replacement):
    pattern_graph = _as_graph(pattern)
    replacement_graph = _as_graph(replacement)
    matcher = _Matcher(pattern_graph)
    graph = gm.graph
    n_returned = len(matcher.returned)
    matches, used = [], set()
    nodes = list(graph.nodes)
    for i, gn in enumerate(nodes):
        if gn.op in ("placeholder", "output"):
            continue
        # a pattern returning several values is anchored at its first and matched from there
        candidates = [gn] if n_returned == 1 else None
        if candidates is None:
            continue
        nodes_map = matcher.match_at(candidates)
        if nodes_map is None:
            continue
        inner = {g for p, g in nodes_map.items() if p.op != "placeholder"}
        if inner & used:
            continue  # overlaps an earlier match
        used |= inner
        matches.append(Match(anchor=matcher.returned[0], nodes_map=nodes_map))

    results = []
    for match in matches:
        ph_map = {p: match.nodes_map[p] for p in matcher.placeholders}
        rep_placeholders = [n for n in replacement_graph.nodes if n.op == "placeholder"]
        if len(rep_placeholders) != len(matcher.placeholders):
            raise ValueError("The pattern and the replacement must take the same number of "
                             "inputs")
        val_map = {rp: ph_map[pp] for rp, pp in zip(rep_placeholders, matcher.placeholders)}
        anchor = match.anchor
        # the replacement goes just before the first reader of what the match returns (its
        # inputs are all defined by then), as PyTorch places it
        returning = [match.nodes_map[p] for p in matcher.returned]
        user_nodes = {u for n in returning for u in n.users}
        first_user = next((n for n in graph.nodes if n in user_nodes), None)
        insert = graph.inserting_before(first_user) if first_user is not None else \
            graph.inserting_after(match.nodes_map[anchor])
        with insert:
            copied = graph.graph_copy(replacement_graph, val_map)
        new_nodes = [val_map[n] for n in replacement_graph.nodes
                     if n.op not in ("placeholder", "output")]
        for n in new_nodes:
            if n.op in ("get_attr", "call_module") and isinstance(replacement, GraphModule):
                from .graph_module import _copy_attr
                _copy_attr(replacement, gm, n.target)
        copied = copied if isinstance(copied, (tuple, list)) else [copied]
        for p_ret, new_val in zip(matcher.returned, copied):
            match.nodes_map[p_ret].replace_all_uses_with(new_val)
        for p in reversed(list(pattern_graph.nodes)):
            if p.op in ("placeholder", "output"):
                continue
            gn = match.nodes_map[p]
            if not gn.users and not gn._erased:
                graph.erase_node(gn)
        results.append(ReplacedPatterns(anchor, match.nodes_map, new_nodes))
    gm.recompile()
    return results


def replace_pattern(gm, pattern, replacement):
    """Replace each occurrence of ``pattern`` in ``gm``'s graph by ``replacement``; returns
    the list of :class:`Match`\\ es (anchor and pattern-node → graph-node map)."""
    return [Match(anchor=m.anchor, nodes_map=m.nodes_map)
            for m in _replace_pattern(gm, pattern, replacement)]


def replace_pattern_with_filters(gm, pattern, replacement, match_filters=None,
                                 ignore_literals=False, replacement_callback=None):
    if match_filters or ignore_literals or replacement_callback:
        raise NotImplementedError("replace_pattern_with_filters: match filters, "
                                  "ignore_literals and replacement callbacks are not "
                                  "supported by ember yet")
    return _replace_pattern(gm, pattern, replacement)
