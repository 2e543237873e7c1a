"""``invoke_subgraph`` and ``mark_compile_region`` (PyTorch's
``torch._higher_order_ops.invoke_subgraph``; ``torch.compiler.nested_compile_region``).

A function marked as a compile region runs as itself eagerly. ``ember.compile`` traces its
body once into a subgraph of the captured graph and calls that subgraph with
``invoke_subgraph`` wherever the function is called with arguments of the same metadata
(``ember/_dynamo/variables/higher_order_ops.py``). Called over traced tensors (AOTAutograd,
Inductor), ``invoke_subgraph`` is the subgraph's own ops, so every backend runs it."""
__all__ = ["invoke_subgraph", "mark_compile_region"]


def invoke_subgraph(subgraph, identifier, *operands):
    """Run the captured region ``subgraph`` (named ``identifier`` in its graph) on
    ``operands``; the result is the tuple of its outputs."""
    return tuple(subgraph(*operands))


def invoke_subgraph_placeholder(func, *args, **kwargs):
    """The region's call outside a capture: the function itself."""
    return func(*args, **kwargs)


def mark_compile_region(fn=None, options=None, max_reuse_entries=8, reuse_hash_fn=None):
    """Mark ``fn`` (or, without it, return a decorator marking a function) as a region
    ``ember.compile`` captures once and reuses. ``max_reuse_entries``: how many differently
    specialised subgraphs one capture may make of it before that is an error;
    ``reuse_hash_fn``: traced with the call's arguments, its constant int result decides reuse
    instead of the arguments' metadata."""

    def wrap(func):
        def inner(*args, **kwargs):
            inner_func = func
            while hasattr(inner_func, "__marked_compile_region_fn__"):
                inner_func = inner_func.__marked_compile_region_fn__
            return invoke_subgraph_placeholder(inner_func, *args, **kwargs)

        inner.__marked_compile_region_fn__ = func
        func.__marked_compile_region_config__ = options
        func.__marked_compile_region_max_reuse_entries__ = max_reuse_entries
        func.__marked_compile_region_reuse_hash_fn__ = reuse_hash_fn
        return inner

    if fn:
        return wrap(fn)
    return wrap
