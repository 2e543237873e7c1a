"""``ember.func``: the function-transform API of ``torch.func`` (``grad``, ``grad_and_value``,
``vjp``), implemented over ember's autograd rather than functorch's transform levels.

Each call runs the function on fresh copies of the differentiated arguments (pytrees of tensors)
that require grad, then differentiates with :func:`ember.autograd.grad` under
``create_graph=True``. Results keep their graph only when they depend on tensors from outside
the call (an enclosing ``grad``, or arguments and closure tensors that require grad), so
``grad(grad(f))`` works and a plain ``grad(f)(x)`` returns tensors that need no grad, as in
PyTorch. There is no ``vmap``: batched transforms are not provided.
"""
from ..autograd import grad as _autograd_grad
from ..autograd.graph import AccumulateGrad
from ..autograd.grad_mode import enable_grad
from ..utils._pytree import tree_flatten, tree_unflatten

__all__ = ["grad", "grad_and_value", "vjp"]


def _is_tensor(x):
    return hasattr(x, "_keyset")


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


def _wrap_inputs(tree):
    """Flatten a pytree of tensors into fresh tensors that require grad (views of the caller's
    tensors that require grad, so an enclosing graph stays connected)."""
    leaves, spec = tree_flatten(tree)
    wrapped = []
    for x in leaves:
        if not _is_tensor(x):
            raise ValueError(f"Thing passed to transform API must be Tensor, got {type(x)}")
        wrapped.append(x.view_as(x) if x.requires_grad else x.detach().requires_grad_(True))
    return wrapped, spec


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


def _finish(tensors, own):
    """Detach results that only depend on this call's inputs."""
    keep = _depends_on_outer(tensors, own)
    return [t if t is None or keep else t.detach() for t in tensors]


def grad_and_value(func, argnums=0, has_aux=False):
    """``f -> (grad of f wrt args[argnums], f(*args))``; ``f`` returns a scalar tensor (or
    ``(scalar, aux)`` with ``has_aux``)."""
    def wrapper(*args, **kwargs):
        nums = _check_argnums(argnums, len(args))
        with enable_grad():
            args = list(args)
            flat, specs = {}, {}
            for a in nums:
                flat[a], specs[a] = _wrap_inputs(args[a])
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
            inputs = [x for a in nums for x in flat[a]]
            if out.requires_grad:
                gs = _autograd_grad(out, inputs, create_graph=True, allow_unused=True)
            else:
                gs = (None,) * len(inputs)
        gs = [g if g is not None else x.detach().new_zeros(x.shape) for g, x in zip(gs, inputs)]
        gs = _finish(gs, inputs)
        value = _finish([out], inputs)[0]
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
    (a tuple), and can be called any number of times."""
    with enable_grad():
        flat, spec = _wrap_inputs(tuple(primals))
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

    def vjp_fn(cotangents):
        cts, ct_spec = tree_flatten(cotangents)
        if len(cts) != len(outs):
            raise RuntimeError("Expected pytree structure of cotangents to be the same as "
                               "pytree structure of outputs to the function.")
        pairs = [(o, c) for o, c in zip(outs, cts) if o.requires_grad]
        with enable_grad():
            if pairs:
                gs = _autograd_grad(tuple(o for o, _ in pairs), flat, tuple(c for _, c in pairs),
                                    retain_graph=True, create_graph=True, allow_unused=True)
            else:
                gs = (None,) * len(flat)
        gs = [g if g is not None else x.detach().new_zeros(x.shape) for g, x in zip(gs, flat)]
        return tree_unflatten(_finish(gs, flat + cts), spec)

    result = tree_unflatten(_finish(outs, flat), out_spec)
    if has_aux:
        return result, vjp_fn, aux
    return result, vjp_fn
