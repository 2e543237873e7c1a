"""``ember.func``: the function-transform API of ``torch.func`` (``grad``, ``grad_and_value``,
``vjp``, ``jvp``, ``linearize``, ``jacrev``, ``jacfwd``, ``hessian``, ``vmap``,
``functional_call``, ``stack_module_state``, ``replace_all_batch_norm_modules_``,
``debug_unwrap``). The forward-mode and Jacobian transforms live in :mod:`ember.func._forward`.

``vmap`` lives in :mod:`ember._functorch` (BatchedTensors on the FuncTorchBatched key). The
reverse-mode transforms run over ember's autograd: each call runs the function on fresh copies
of the differentiated arguments (pytrees of tensors) that require grad, then differentiates with
:func:`ember.autograd.grad` under ``create_graph=True``. Results keep their graph only when they
depend on tensors from outside the call (an enclosing ``grad``, or arguments and closure tensors
that require grad), so ``grad(grad(f))`` works and a plain ``grad(f)(x)`` returns tensors that
need no grad, as in PyTorch.

Under ``vmap``, autograd records its graph on the physical (whole-batch) tensors. A ``grad``
inside a ``vmap`` first gives every differentiated input a batch dim at every enclosing vmap
level (an expanded view where it had none), so each sample owns its slice of the leaf; the
per-sample scalar outputs are then differentiated together with a ones cotangent, which yields
every sample's gradient at once because samples never interact under vmap.
"""
from .._functorch import batching as _batching
from .._functorch import functional_wrapper as _functional_wrapper
from .._functorch import randomness as _randomness
from .._functorch.batch_norm_replacement import replace_all_batch_norm_modules_
from .._functorch.batched_tensor import BatchedTensor, physical, wrap_like
from .._functorch.functional_call import functional_call, stack_module_state
from .._functorch.functionalize import functionalize
from .._functorch.interpreter import push_grad, vmap_layers
from .._functorch.vmap import vmap
from .._functorch.wrapper_tensor import WrapperTensor
from ..autograd import grad as _autograd_grad
from ..autograd import forward_ad as _fw
from ..autograd.graph import AccumulateGrad
from ..autograd.grad_mode import enable_grad, is_grad_enabled
from ..utils._pytree import tree_flatten, tree_unflatten

__all__ = ["grad", "grad_and_value", "vjp", "jvp", "linearize", "jacrev", "jacfwd", "hessian",
           "vmap", "functional_call", "stack_module_state", "functionalize",
           "replace_all_batch_norm_modules_", "debug_unwrap", "batching_rule_coverage"]

_batching.install()
_functional_wrapper.install()
_randomness.install()


def batching_rule_coverage():
    """Beyond PyTorch: how vmap handles each aten overload (out= variants left out).

    A dict: ``"rule"`` maps ops with a batching rule to the family it comes from;
    ``"decomposition"`` lists CompositeImplicitAutograd ops (batched through the ops they call);
    ``"randomness"`` lists random ops (governed by vmap's ``randomness``); ``"fallback"`` lists
    the ops that run once per sample with the performance warning."""
    return _batching.coverage()


def _is_tensor(x):
    return hasattr(x, "_keyset")


def debug_unwrap(tensor, *, recurse=True):
    """The tensor inside a functorch wrapper (a ``vmap``'s BatchedTensor, a ``functionalize``'s
    FunctionalTensorWrapper), for looking at in a debugger; ``recurse`` peels every level.
    Anything else comes back as it is: the tensors ``grad`` / ``vjp`` differentiate are plain
    tensors in ember (autograd runs on them directly), and so are functional tensors made
    outside a transform (level 0, PyTorch's level -1)."""
    if not _is_tensor(tensor):
        raise TypeError(f"is_functorch_wrapped_tensor(): incompatible function arguments. The "
                        f"following argument types are supported:\n    1. (arg0: torch.Tensor) "
                        f"-> bool\n\nInvoked with: {tensor!r}")
    if not isinstance(tensor, WrapperTensor) or tensor._level <= 0:
        return tensor
    result = tensor._value
    if recurse:
        return debug_unwrap(result)
    return result


def _check_argnums(argnums, n_args):
    if isinstance(argnums, int):
        nums = (argnums,)
    elif isinstance(argnums, tuple) and all(isinstance(a, int) for a in argnums):
        if not argnums:
            raise RuntimeError("argnums must be non-empty")
        nums = argnums
    else:
        raise RuntimeError(f"argnums must be int or Tuple[int, ...], got: {type(argnums)}")
    for a in nums:
        if not -n_args <= a < n_args:
            raise RuntimeError(f"Got argnum={a}, but only {n_args} positional inputs")
    nums = tuple(a % n_args for a in nums)
    if len(set(nums)) != len(nums):
        raise RuntimeError(f"argnums must be unique, got {argnums}")
    return nums


def _add_level(x, layer):
    """``x`` batched at ``layer`` too: an expanded view along a new batch dim, inserted below
    the levels higher than ``layer`` so wrappers stay ordered by level."""
    if x.__class__ is BatchedTensor and x._level > layer.level:
        from .._functorch.batched_tensor import make_batched
        return make_batched(_add_level(x._value, layer), x._bdim, x._level)
    from .._functorch.batched_tensor import make_batched
    return make_batched(x.unsqueeze(0).expand(layer.batch_size, *x.shape), 0, layer.level)


def _levels(x):
    out = set()
    while x.__class__ is BatchedTensor:
        out.add(x._level)
        x = x._value
    return out


def _wrap_inputs(tree):
    """Flatten a pytree of tensors into fresh tensors that require grad (views of the caller's
    tensors that require grad, so an enclosing graph stays connected). Returns the logical
    inputs, the physical leaves autograd differentiates, and the spec."""
    leaves, spec = tree_flatten(tree)
    layers = vmap_layers()
    wrapped, leaves_phys = [], []
    for x in leaves:
        if not _is_tensor(x):
            raise ValueError(f"Thing passed to transform API must be Tensor, got {type(x)}")
        have = _levels(x)
        for layer in layers:
            if layer.level not in have:
                x = _add_level(x, layer)
        p = physical(x)
        leaf = p.view_as(p) if p.requires_grad else _detach(p).requires_grad_(True)
        leaves_phys.append(leaf)
        wrapped.append(wrap_like(x, leaf))
    return wrapped, leaves_phys, spec


def _ones_cotangent(out):
    """The cotangent of a (per-sample scalar) output: ones over its physical tensor."""
    p = physical(out)
    return p, p.new_ones(p.shape) if out.__class__ is BatchedTensor else None


def _top_level(x):
    return x._level if x.__class__ is BatchedTensor else 0


def _strip_above(x, level):
    """Take off ``x``'s batch levels above ``level``, moving their dims to the front:
    (tensor, [levels stripped, outermost first])."""
    stripped = []
    while x.__class__ is BatchedTensor and x._level > level:
        stripped.append(x._level)
        x = x._value.movedim(x._bdim, 0) if x._bdim else x._value
    return x, stripped


def _rewrap_front(x, stripped):
    """Undo :func:`_strip_above`: each stripped level wraps again, its dim at the front."""
    from .._functorch.batched_tensor import make_batched
    for level in reversed(stripped):
        x = make_batched(x, 0, level)
    return x


def _align_to(c, template):
    """Cotangent ``c`` laid out like ``physical(template)``: batched at the same levels with
    the same batch dims (expanding levels ``c`` lacks). Levels of ``c`` above the template's
    (``vmap`` over a pullback, as ``jacrev`` does) stay batched, outside, with their dims
    leading."""
    c, stripped = _strip_above(c, _top_level(template))
    lead = len(stripped)
    while template.__class__ is BatchedTensor:
        level = template._level
        if c.__class__ is BatchedTensor and c._level == level:
            v, bd = c._value, c._bdim
        else:
            if c.__class__ is BatchedTensor and c._level > level:
                raise RuntimeError("vjp: a cotangent is batched at a vmap level its output is "
                                   "not batched at")
            size = template._value._size[template._bdim]
            v, bd = c.unsqueeze(lead).expand(*c.shape[:lead], size, *c.shape[lead:]), lead
        if bd != template._bdim + lead:
            v = v.movedim(bd, template._bdim + lead)
        c, template = v, template._value
    return _rewrap_front(c, stripped)


def _wrap_result(template, g):
    """``wrap_like(template, g)`` for a ``g`` that may be batched at levels above the
    template's (from a cotangent of :func:`_align_to`): those stay outermost."""
    g, stripped = _strip_above(g, _top_level(template))
    if not stripped:
        return wrap_like(template, g)
    from .._functorch.batched_tensor import make_batched
    chain = []
    t = template
    while t.__class__ is BatchedTensor:
        chain.append((t._bdim, t._level))
        t = t._value
    for bdim, level in reversed(chain):
        g = make_batched(g, bdim + len(stripped), level)
    return _rewrap_front(g, stripped)


def _depends_on_outer(tensors, own):
    """Whether the graph of ``tensors`` reaches a leaf other than this call's own inputs."""
    own_ids = {id(t) for t in own}
    stack = [t.grad_fn for t in tensors if t is not None and t.grad_fn is not None]
    if any(t is not None and t.requires_grad and t.grad_fn is None and id(t) not in own_ids
           for t in tensors):
        return True
    seen = set()
    while stack:
        node = stack.pop()
        if node in seen:
            continue
        seen.add(node)
        if isinstance(node, AccumulateGrad):
            if id(node.variable) not in own_ids:
                return True
            continue
        stack.extend(n for n, _ in node._next if n is not None)
    return False


def _finish(tensors, own, record=True):
    """Detach results that only depend on this call's inputs, and all of them when the
    caller's grad mode does not ``record`` (PyTorch's transforms ignore an outer ``no_grad``
    inside the function but obey it outside: the levels below the transform record nothing)."""
    keep = record and _depends_on_outer(tensors, own)
    return [t if t is None or keep else _detach(t) for t in tensors]


def _detach(t):
    """``t.detach()`` that keeps the tangents of enclosing ``jvp`` levels: reverse-mode
    transforms nested in forward mode (``jvp(grad(f))``) must not cut the forward derivative."""
    if t.__class__ is BatchedTensor:  # tangents live on the physical tensor
        return wrap_like(t, _detach(physical(t)))
    d = t.detach()
    for level in _fw.tangent_levels(t):
        _fw.set_tangent(d, level, _detach(_fw.get_tangent(t, level)))
    return d


def grad_and_value(func, argnums=0, has_aux=False):
    """``f -> (grad of f wrt args[argnums], f(*args))``; ``f`` returns a scalar tensor (or
    ``(scalar, aux)`` with ``has_aux``)."""
    def wrapper(*args, **kwargs):
        nums = _check_argnums(argnums, len(args))
        record = is_grad_enabled()
        with enable_grad(), push_grad():
            args = list(args)
            flat, phys, specs = {}, {}, {}
            for a in nums:
                flat[a], phys[a], specs[a] = _wrap_inputs(args[a])
                args[a] = tree_unflatten(flat[a], specs[a])
            out = func(*args, **kwargs)
            aux = None
            if has_aux:
                if not (isinstance(out, tuple) and len(out) == 2):
                    raise RuntimeError("grad_and_value(f)(*args): output of function f should be "
                                       "a tuple: (output, aux) if has_aux is True")
                out, aux = out
            if not _is_tensor(out):
                raise RuntimeError(f"grad_and_value(f)(*args): Expected f(*args) to return a "
                                   f"Tensor, got {type(out)}")
            if out.dim() != 0:
                raise RuntimeError(f"grad_and_value(f)(*args): Expected f(*args) to return a "
                                   f"scalar Tensor, got tensor with {out.dim()} dims. Maybe you "
                                   f"wanted to use the vjp or jacrev APIs instead?")
            logical = [x for a in nums for x in flat[a]]
            inputs = [x for a in nums for x in phys[a]]
            out_phys, ones = _ones_cotangent(out)
            if out_phys.requires_grad:
                gs = _autograd_grad(out_phys, inputs, ones, create_graph=True, allow_unused=True)
            else:
                gs = (None,) * len(inputs)
        gs = [g if g is not None else x.detach().new_zeros(x.shape) for g, x in zip(gs, inputs)]
        gs = [wrap_like(x, g) for x, g in zip(logical, _finish(gs, inputs, record))]
        value = wrap_like(out, _finish([out_phys], inputs, record)[0])
        grads, k = [], 0
        for a in nums:
            n = len(flat[a])
            grads.append(tree_unflatten(gs[k:k + n], specs[a]))
            k += n
        result = grads[0] if isinstance(argnums, int) else tuple(grads)
        if has_aux:
            return result, (value, aux)
        return result, value
    return wrapper


def grad(func, argnums=0, has_aux=False):
    """``f -> grad of f wrt args[argnums]`` (``(grad, aux)`` with ``has_aux``)."""
    gv = grad_and_value(func, argnums, has_aux)

    def wrapper(*args, **kwargs):
        g, value = gv(*args, **kwargs)
        return (g, value[1]) if has_aux else g
    return wrapper


def vjp(func, *primals, has_aux=False):
    """``(func(*primals), vjp_fn)``: ``vjp_fn(cotangents)`` returns one gradient per primal
    (a tuple), and can be called any number of times. As in PyTorch, ``vjp_fn``'s results
    keep a graph (to tensors from outside, cotangents included) only under ``create_graph``,
    which defaults to the grad mode ``vjp_fn`` is called in."""
    record = is_grad_enabled()
    with enable_grad(), push_grad():
        flat, phys, spec = _wrap_inputs(tuple(primals))
        out = func(*tree_unflatten(flat, spec))
        aux = None
        if has_aux:
            if not (isinstance(out, tuple) and len(out) == 2):
                raise RuntimeError("vjp(f, *primals): output of function f should be a tuple: "
                                   "(output, aux) if has_aux is True")
            out, aux = out
    outs, out_spec = tree_flatten(out)
    for o in outs:
        if not _is_tensor(o):
            raise RuntimeError(f"vjp(f, *primals): Expected f to be a function that has "
                               f"non-empty output, and each element is a Tensor, got {type(o)}")

    def vjp_fn(cotangents, retain_graph=True, create_graph=None):
        if create_graph is None:
            create_graph = is_grad_enabled()
        cts, ct_spec = tree_flatten(cotangents)
        if len(cts) != len(outs):
            raise RuntimeError("Expected pytree structure of cotangents to be the same as "
                               "pytree structure of outputs to the function.")
        pairs = [(physical(o), _align_to(c, o)) for o, c in zip(outs, cts) if o.requires_grad]
        with enable_grad():
            if pairs:
                gs = _autograd_grad(tuple(o for o, _ in pairs), phys, tuple(c for _, c in pairs),
                                    retain_graph=retain_graph, create_graph=True,
                                    allow_unused=True)
            else:
                gs = (None,) * len(phys)
        gs = [g if g is not None else x.detach().new_zeros(x.shape) for g, x in zip(gs, phys)]
        # (the graph is always built: a vjp_fn inside another transform — a cotangent that is
        # its input, a jvp tangent — needs it; detaching drops it when not asked for)
        gs = _finish(gs, phys, create_graph)
        return tree_unflatten([_wrap_result(x, g) for x, g in zip(flat, gs)], spec)

    result = tree_unflatten([wrap_like(o, p) for o, p in
                             zip(outs, _finish([physical(o) for o in outs], phys, record))],
                            out_spec)
    if has_aux:
        return result, vjp_fn, aux
    return result, vjp_fn


from ._forward import hessian, jacfwd, jacrev, jvp, linearize  # noqa: E402
