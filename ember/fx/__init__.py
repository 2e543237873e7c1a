"""``ember.fx``: programs as graphs — PyTorch's ``torch.fx``.

``symbolic_trace`` records a module or function as a :class:`Graph` of :class:`Node`\\ s by running
it on :class:`Proxy` values; a :class:`GraphModule` turns a graph back into Python code and runs
it; :class:`Interpreter` and :class:`Transformer` execute or rewrite a graph node by node.
``ember.fx.experimental.proxy_tensor.make_fx`` records the aten-level graph of a function through
the dispatcher instead (what compilation builds on).
"""
from .graph import Graph, CodeGen, PythonCode  # noqa: F401
from .graph_module import GraphModule  # noqa: F401
from .node import Node, map_arg, map_aggregate, has_side_effect  # noqa: F401
from .proxy import Proxy, TraceError, Attribute  # noqa: F401
from ._symbolic_trace import Tracer, symbolic_trace, wrap, PH, ProxyableClassMeta  # noqa: F401
from .interpreter import Interpreter, Transformer  # noqa: F401
from . import immutable_collections, passes, subgraph_rewriter  # noqa: F401
from . import traceback  # noqa: F401  (loaded by the tracer, so an attribute as in torch.fx)
from .subgraph_rewriter import replace_pattern  # noqa: F401

__all__ = ["symbolic_trace", "Tracer", "wrap", "Graph", "GraphModule", "Interpreter",
           "Transformer", "Node", "Proxy", "replace_pattern", "has_side_effect",
           "map_arg", "CodeGen"]
