"""``vmap``: map a function over a batch dimension of its inputs.

The inputs named by ``in_dims`` (an int, or a pytree of ints/None matching the positional
arguments) are wrapped as BatchedTensors of a new level; the function runs once on them, and
its outputs are unwrapped with the batch dim moved to ``out_dims``. ``chunk_size`` runs the
batch in pieces and concatenates. Errors follow PyTorch's ``torch.func.vmap`` word for word.
"""
import functools

from ..utils._pytree import tree_flatten, tree_unflatten
from .batched_tensor import BatchedTensor, make_batched
from .interpreter import push_vmap

_RANDOMNESS = ("error", "different", "same")


def _is_tensor(x):
    return hasattr(x, "_keyset")


def _fname(func):
    if hasattr(func, "__name__"):
        return func.__name__
    if isinstance(func, functools.partial):
        return f"functools.partial({_fname(func.func)}, ...)"
    return repr(func)


def vmap(func, in_dims=0, out_dims=0, randomness="error", *, chunk_size=None):
    """``torch.func.vmap``: ``vmap(f)(xs)`` computes ``f`` for every slice of ``xs`` along
    ``in_dims`` at once and stacks the results along ``out_dims``."""
    if randomness not in _RANDOMNESS:
        raise RuntimeError(f"Only allowed values for randomness are 'error', 'different', or "
                           f"'same'. Got {randomness}")
    if chunk_size is not None and (not isinstance(chunk_size, int) or chunk_size <= 0):
        raise ValueError(f"vmap: chunk_size should be None or greater than 0. (got {chunk_size})")

    @functools.wraps(func)
    def wrapped(*args, **kwargs):
        return _vmap_impl(func, in_dims, out_dims, randomness, chunk_size, args, kwargs)
    return wrapped


def _broadcast_dims(dims, spec, leaves_count, what, prefix):
    """Flatten ``dims`` against the structure ``spec``: an int/None applies to a whole subtree."""
    if dims is None or isinstance(dims, int):
        return [dims] * leaves_count
    out = _broadcast_to(dims, spec)
    if out is None:
        raise ValueError(f"{prefix}: {what}_dims is not compatible with the structure of "
                         f"`{'inputs' if what == 'in' else 'outputs'}`. {what}_dims has "
                         f"structure {tree_flatten(dims)[1]} but "
                         f"{'inputs' if what == 'in' else 'outputs'} has structure {spec}.")
    return out


def _broadcast_to(dims, spec):
    """Leaves of ``spec`` each paired with its dim, or None where the structures differ."""
    from ..utils._pytree import LeafSpec
    if dims is None or isinstance(dims, int) or not isinstance(dims, (tuple, list, dict)):
        return [dims] * spec.num_leaves
    if isinstance(spec, LeafSpec):
        return None
    dims_flat, dims_spec = tree_flatten(dims, is_leaf=lambda x: x is not dims)
    if dims_spec.type is not spec.type or dims_spec.context != spec.context or \
            dims_spec.num_children != spec.num_children:
        return None
    out = []
    for d, child in zip(dims_flat, spec.children()):
        sub = _broadcast_to(d, child)
        if sub is None:
            return None
        out.extend(sub)
    return out


def _vmap_impl(func, in_dims, out_dims, randomness, chunk_size, args, kwargs):
    name = _fname(func)
    prefix = f"vmap({name}, in_dims={in_dims}, ...)(<inputs>)"
    if not args:
        raise ValueError(f"vmap({name})(<inputs>): got no inputs. Maybe you forgot to add "
                         f"inputs, or you are trying to vmap over a function with no inputs. "
                         f"The latter is unsupported.")
    if not isinstance(in_dims, (int, tuple)) or isinstance(in_dims, bool):
        raise ValueError(f"{prefix}: expected `in_dims` to be int or a (potentially nested) "
                         f"tuple matching the structure of inputs, got: {type(in_dims)}.")
    if isinstance(in_dims, tuple) and len(in_dims) != len(args):
        raise ValueError(f"{prefix}: in_dims is not compatible with the structure of `inputs`. "
                         f"in_dims has structure {tree_flatten(in_dims)[1]} but inputs has "
                         f"structure {tree_flatten(args)[1]}.")
    flat_args, args_spec = tree_flatten(args)
    flat_dims = _broadcast_dims(in_dims, args_spec, len(flat_args), "in", prefix)
    sizes = []
    for x, d in zip(flat_args, flat_dims):
        if d is None:
            continue
        if not isinstance(d, int) or isinstance(d, bool):
            raise ValueError(f"{prefix}: Got in_dim={d} for an input but in_dim must be either "
                             f"an integer dimension or None.")
        if not _is_tensor(x):
            raise ValueError(f"{prefix}: Got in_dim={d} for an input but the input is of type "
                             f"{type(x)}. We cannot vmap over non-Tensor arguments, please use "
                             f"None as the respective in_dim")
        n = x.dim()
        if not -n <= d < n:
            raise ValueError(f"{prefix}: Got in_dim={d} for some input, but that input is a "
                             f"Tensor of dimensionality {n} so expected in_dim to satisfy "
                             f"-{n} <= in_dim < {n}.")
        sizes.append(x.shape[d])
    if not sizes:
        raise ValueError(f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): Got all in_dims=None"
                         f". We need at least one Tensor to vmap over")
    if any(s != sizes[0] for s in sizes):
        raise ValueError(f"vmap: Expected all tensors to have the same size in the mapped "
                         f"dimension, got sizes {sizes} for the mapped dimension")
    batch = sizes[0]
    flat_dims = [None if d is None else d % flat_args[i].dim() for i, d in enumerate(flat_dims)]
    if chunk_size is None or chunk_size >= batch:
        return _flat_vmap(func, batch, flat_args, flat_dims, args_spec, out_dims, randomness,
                          kwargs)
    pieces = []
    for start in range(0, batch, chunk_size):
        n = min(chunk_size, batch - start)
        chunk = [x if d is None else x.narrow(d, start, n) for x, d in zip(flat_args, flat_dims)]
        pieces.append(_flat_vmap(func, n, chunk, flat_dims, args_spec, out_dims, randomness,
                                 kwargs))
    return _concat_chunks(pieces, out_dims)


def _concat_chunks(pieces, out_dims):
    from .. import cat
    flat0, spec = tree_flatten(pieces[0])
    flats = [tree_flatten(p)[0] for p in pieces]
    dims = _broadcast_to(out_dims, spec) if not isinstance(out_dims, int) else \
        [out_dims] * len(flat0)
    out = []
    for j in range(len(flat0)):
        d = dims[j]
        if d is None:
            out.append(flats[0][j])
        else:
            out.append(cat([f[j] for f in flats], d))
    return tree_unflatten(out, spec)


def _flat_vmap(func, batch, flat_args, flat_dims, args_spec, out_dims, randomness, kwargs):
    name = _fname(func)
    with push_vmap(batch, randomness) as layer:
        wrapped = [x if d is None else make_batched(x, d, layer.level)
                   for x, d in zip(flat_args, flat_dims)]
        out = func(*tree_unflatten(wrapped, args_spec), **kwargs)
        return _unwrap_outputs(out, out_dims, layer, name)


def _unwrap_outputs(out, out_dims, layer, name):
    flat, spec = tree_flatten(out)
    for d in tree_flatten(out_dims)[0]:
        if not (d is None or isinstance(d, int)):
            raise ValueError(f"vmap({name}, ..., out_dims={out_dims}): `out_dims` must be an "
                             f"int, None or a python collection of ints representing where in "
                             f"the outputs the vmapped dimension should appear.")
    dims = _broadcast_dims(out_dims, spec, len(flat), "out",
                           f"vmap({name}, ..., out_dims={out_dims})(<inputs>)")
    result = []
    for o, d in zip(flat, dims):
        batched = o.__class__ is BatchedTensor and o._level == layer.level
        if d is None:
            if batched:
                raise ValueError(f"vmap({name}, ...): `{name}` can not return a BatchedTensor "
                                 f"when out_dim is None")
            result.append(o)
            continue
        if not _is_tensor(o):
            raise ValueError(f"vmap({name}, ...): `{name}` must only return Tensors, got type "
                             f"{type(o)}. Did you mean to set out_dims= to None for output?")
        if batched:
            v, bd = o._value, o._bdim
            from .._core import strides as _st
            d = _st.wrap_dim(d, v.dim())
            result.append(v if bd == d else v.movedim(bd, d))
        else:
            from .._core import strides as _st
            d = _st.wrap_dim(d, o.dim() + 1)
            shape = list(o.shape)
            shape.insert(d, layer.batch_size)
            result.append(o.unsqueeze(d).expand(*shape))
    return tree_unflatten(result, spec)
