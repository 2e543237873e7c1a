"""The forward-mode transforms of ``torch.func`` (``jvp``, ``linearize``, ``jacfwd``) and the
Jacobian transforms built from vmap (``jacrev``, ``jacfwd``, ``hessian``).

``jvp`` is true forward mode: each call pushes its own forward-AD level
(:func:`ember.autograd.forward_ad._push_level`), makes the primals duals at that level, runs the
function and unpacks the outputs. Levels nest, so ``jvp(jvp(f))`` and ``jacfwd(jacfwd(f))`` give
higher derivatives; tangents are ember tensors, so ``grad`` of a ``jvp`` and ``jvp`` of a
``grad`` work too. Under ``vmap`` the duals live on the physical tensors (see
``forward_ad._make_dual_batched``), as reverse mode's graphs do.

``jacrev`` is ``vmap`` over ``vjp``'s pullback with the rows of an identity as cotangents;
``jacfwd`` is ``vmap`` over ``jvp`` with its columns as tangents; ``hessian`` is
``jacfwd(jacrev(f))``, as in PyTorch.
"""
import functools

import ember  # resolved when a transform runs: ember imports this package
from ..autograd import forward_ad as _fw
from ..utils._pytree import tree_flatten, tree_unflatten


def _is_tensor(x):
    return hasattr(x, "_keyset")


def _check_tuple(x, argname, api):
    if not isinstance(x, tuple):
        raise RuntimeError(f"{api}: Expected {argname} to be a tuple. E.g. it should be valid to "
                           f"call f(*{argname}).")


def jvp(func, primals, tangents, *, strict=False, has_aux=False):
    """``(func(*primals), J(primals) @ tangents)`` by forward-mode AD."""
    api = "jvp(f, primals, tangents)"
    _check_tuple(primals, "primals", api)
    _check_tuple(tangents, "tangents", api)
    flat_p, spec_p = tree_flatten(primals)
    flat_t, spec_t = tree_flatten(tangents)
    if spec_p != spec_t:
        raise RuntimeError(f"{api}: Expected primals and tangents to have the same python "
                           f"structure. For example, if primals is a tuple of 3 tensors, "
                           f"tangents also must be. Got primals with structure {spec_p} and "
                           f"tangents with structure {spec_t}")
    for p, t in zip(flat_p, flat_t):
        if not (_is_tensor(p) and _is_tensor(t)):
            raise RuntimeError(f"{api}: Expected primals and tangents to only contain Tensors, "
                               f"got {type(p) if not _is_tensor(p) else type(t)}")
        if tuple(p.shape) != tuple(t.shape):
            raise RuntimeError(f"{api}: Expected primals and tangents to have the same shape. "
                               f"Got primal.shape={tuple(p.shape)} and "
                               f"tangent.shape={tuple(t.shape)}")
    level = _fw._push_level()
    try:
        duals = [_fw._make_dual(p, t, level) for p, t in zip(flat_p, flat_t)]
        out = func(*tree_unflatten(duals, spec_p))
        aux = None
        if has_aux:
            if not (isinstance(out, tuple) and len(out) == 2):
                raise RuntimeError(f"{api}: output of function f should be a tuple: (output, "
                                   f"aux) if has_aux is True")
            out, aux = out
        flat_o, spec_o = tree_flatten(out)
        for o in flat_o:
            if not _is_tensor(o):
                raise RuntimeError(f"{api}: expected f(*primals) to return only tensors, got "
                                   f"unsupported type {type(o)}")
        prim_out, tan_out = [], []
        for o in flat_o:
            p, t = _fw._unpack_dual(o, level)
            if t is None and strict:
                raise RuntimeError("jvp(f, primals, tangents, strict=True): The output of f is "
                                   "independent of the inputs. This is not allowed with "
                                   "strict=True.")
            prim_out.append(p)
            tan_out.append(t if t is not None else ember.zeros_like(p))
        if aux is not None:
            aux = tree_unflatten([_strip(a, level) for a in tree_flatten(aux)[0]],
                                 tree_flatten(aux)[1])
    finally:
        _fw._pop_level(level)
    result = (tree_unflatten(prim_out, spec_o), tree_unflatten(tan_out, spec_o))
    return result + (aux,) if has_aux else result


def _strip(x, level):
    return _fw._unpack_dual(x, level).primal if _is_tensor(x) else x


def linearize(func, *primals):
    """``(func(*primals), jvp_fn)``: ``jvp_fn(*tangents)`` gives the Jacobian-vector product at
    ``primals`` for new tangents. As PyTorch's, the forward-mode computation is traced once
    (``make_fx``) into a graph over the tangents, which each call replays."""
    from ..fx.experimental.proxy_tensor import make_fx
    out = func(*primals)
    flat_p, spec_p = tree_flatten(primals)
    flat_o, spec_o = tree_flatten(out)

    def tangents_to_jvp(*flat_t):
        return tree_flatten(jvp(func, tuple(primals),
                                tuple(tree_unflatten(list(flat_t), spec_p)))[1])[0]
    graph = make_fx(tangents_to_jvp)(*[p.detach().new_zeros(p.shape) for p in flat_p])
    graph.graph.eliminate_dead_code()
    graph.recompile()

    def jvp_fn(*tangents):
        flat_t, spec_t = tree_flatten(tangents)
        if spec_t != spec_p:
            raise RuntimeError(f"Expected the tangents {spec_t} to have the same argspec as "
                               f"the primals {spec_p}")
        for idx, (p, t) in enumerate(zip(flat_p, flat_t)):
            for what, a, b in (("shape", t.shape, p.shape), ("device", t.device, p.device),
                               ("dtype", t.dtype, p.dtype)):
                if a != b:
                    raise RuntimeError(f"tangent:{idx} with {what} {a} in flattened pytree "
                                       f"doesn't match the {what} {b} of the corresponding "
                                       f"primal.")
        return tree_unflatten(list(graph(*flat_t)), spec_o)
    return tree_unflatten([o.detach() for o in flat_o], spec_o), jvp_fn


def _argnums_primals(args, argnums, api):
    from . import _check_argnums
    nums = _check_argnums(argnums, len(args))
    return nums, tuple(args[a] for a in nums)


def _partial(func, args, nums, kwargs):
    def f(*diff):
        call = list(args)
        for a, d in zip(nums, diff):
            call[a] = d
        return func(*call, **kwargs)
    return f


def _basis(flat, dtype_of):
    """One-hot rows over all elements of ``flat`` (N = total numel): per tensor ``x`` a tensor of
    shape (N, *x.shape)."""
    sizes = [x.numel() for x in flat]
    n = sum(sizes)
    eye = ember.eye(n, dtype=dtype_of.dtype, device=dtype_of.device)
    out, off = [], 0
    for x, s in zip(flat, sizes):
        out.append(eye[:, off:off + s].reshape((n,) + tuple(x.shape)))
        off += s
    return out, sizes


def jacrev(func, argnums=0, *, has_aux=False, chunk_size=None, _preallocate_and_copy=False):
    """The Jacobian of ``func`` wrt ``args[argnums]`` by reverse mode: ``vmap`` of ``vjp``'s
    pullback over the rows of an identity (``chunk_size`` rows at a time)."""
    from . import vjp, vmap
    if not (chunk_size is None or chunk_size > 0):
        raise ValueError("jacrev: `chunk_size` should be greater than 0.")

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        nums, primals = _argnums_primals(args, argnums, "jacrev")
        f = _partial(func, args, nums, kwargs)
        res = vjp(f, *primals, has_aux=has_aux)
        out, vjp_fn = res[0], res[1]
        flat_o, spec_o = tree_flatten(out)
        for o in flat_o:
            if not _is_tensor(o):
                raise RuntimeError(f"jacrev(func, ...)(*args): Expected f to be a function that "
                                   f"has non-empty output, and each element is a Tensor, got "
                                   f"{type(o)}")
        flat_in, spec_in = tree_flatten(primals)
        basis, sizes = _basis(flat_o, flat_o[0])
        n = sum(sizes)
        if n == 0:
            rows = [ember.zeros((0,) + tuple(x.shape), dtype=x.dtype) for x in flat_in]
        else:
            cts = tree_unflatten(basis, spec_o)
            g = vmap(vjp_fn, chunk_size=chunk_size)(cts)
            rows = tree_flatten(g)[0]
        jac_leaves, off = [], 0
        for o, s in zip(flat_o, sizes):
            per_in = [r[off:off + s].reshape(tuple(o.shape) + tuple(x.shape))
                      for r, x in zip(rows, flat_in)]
            off += s
            per_in = tree_unflatten(per_in, spec_in)
            jac_leaves.append(per_in[0] if isinstance(argnums, int) else per_in)
        jac = tree_unflatten(jac_leaves, spec_o)
        if has_aux:
            return jac, res[2]
        return jac
    return wrapper


def jacfwd(func, argnums=0, has_aux=False, *, randomness="error"):
    """The Jacobian of ``func`` wrt ``args[argnums]`` by forward mode: ``vmap`` of ``jvp`` over
    the columns of an identity."""
    from . import vmap

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        nums, primals = _argnums_primals(args, argnums, "jacfwd")
        f = _partial(func, args, nums, kwargs)
        flat_in, spec_in = tree_flatten(primals)
        for x in flat_in:
            if not _is_tensor(x):
                raise ValueError(f"Thing passed to transform API must be Tensor, got {type(x)}")
        basis, sizes = _basis(flat_in, flat_in[0])

        def push_jvp(*tangents):
            r = jvp(f, primals, tree_unflatten(list(tangents), spec_in), has_aux=has_aux)
            return (r[1], r[2]) if has_aux else r[1]

        res = vmap(push_jvp, randomness=randomness)(*basis)
        tan, aux = (res if has_aux else (res, None))
        flat_t, spec_o = tree_flatten(tan)
        jac_leaves = []
        for t in flat_t:
            per_in, off = [], 0
            oshape = tuple(t.shape[1:])
            for x, s in zip(flat_in, sizes):
                c = t[off:off + s]
                off += s
                c = c.movedim(0, -1) if c.dim() > 1 else c
                per_in.append(c.reshape(oshape + tuple(x.shape)))
            per_in = tree_unflatten(per_in, spec_in)
            jac_leaves.append(per_in[0] if isinstance(argnums, int) else per_in)
        jac = tree_unflatten(jac_leaves, spec_o)
        if has_aux:
            # aux depends on the primals only: every column computed the same one
            fa, sa = tree_flatten(aux)
            return jac, tree_unflatten([a[0] if _is_tensor(a) else a for a in fa], sa)
        return jac
    return wrapper


def hessian(func, argnums=0):
    """The Hessian of a scalar ``func``: ``jacfwd(jacrev(func))`` (forward over reverse)."""
    return jacfwd(jacrev(func, argnums), argnums)
