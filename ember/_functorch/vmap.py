"""``vmap``: map a function over a batch dimension of its inputs.

The inputs named by ``in_dims`` (an int, or a pytree of ints/None matching the positional
arguments) are wrapped as BatchedTensors of a new level; the function runs once on them, and
its outputs are unwrapped with the batch dim moved to ``out_dims``. ``chunk_size`` runs the
batch in pieces and concatenates. Errors follow PyTorch's ``torch.func.vmap`` word for word.

The steps are PyTorch's functions of ``torch._functorch.vmap`` under their names
(``_process_batched_inputs``, ``_create_batched_inputs``, ``_unwrap_batched``,
``_maybe_remove_batch_dim``), looked up in this module's globals when they run: libraries
replace them to vmap over their own containers (tensordict's TensorDict does).
"""
import contextlib
import functools

from .._tensor import Tensor  # noqa: F401  (PyTorch's module has it; libraries import it here)
from ..utils._pytree import _broadcast_to_and_flatten, tree_flatten, tree_unflatten
from .batched_tensor import is_batched_at, is_batchedtensor, make_batched
from .interpreter import vmap_decrement_nesting, vmap_increment_nesting as _increment

_RANDOMNESS = ("error", "different", "same")


def _is_tensor(x):
    return hasattr(x, "_keyset")


def _get_name(func):
    if hasattr(func, "__name__"):
        return func.__name__
    if isinstance(func, functools.partial):
        return f"functools.partial({_get_name(func.func)}, ...)"
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
        return vmap_impl(func, in_dims, out_dims, randomness, chunk_size, *args, **kwargs)
    return wrapped


# -- the batching primitives (``torch._C._functorch``) -------------------------------------------

def _add_batch_dim(tensor, batch_dim, level):
    """``tensor`` seen without its dim ``batch_dim``, batched at ``level``."""
    return make_batched(tensor, batch_dim, level)


def _remove_batch_dim(tensor, level, batch_size, out_dim):
    """The plain tensor of ``tensor``'s batch at ``level``, the batch at dim ``out_dim``; a
    tensor not batched at that level is the same for every sample and is expanded."""
    from .._core.strides import wrap_dim
    if is_batched_at(tensor, level):
        value, bdim = tensor._value, tensor._bdim
        out_dim = wrap_dim(out_dim, value.dim())
        return value if bdim == out_dim else value.movedim(bdim, out_dim)
    out_dim = wrap_dim(out_dim, tensor.dim() + 1)
    shape = list(tensor.shape)
    shape.insert(out_dim, batch_size)
    return tensor.unsqueeze(out_dim).expand(*shape)


@contextlib.contextmanager
def vmap_increment_nesting(batch_size, randomness):
    """A vmap layer for the body of the ``with``; its level."""
    try:
        yield _increment(batch_size, randomness)
    finally:
        vmap_decrement_nesting()


# -- vmap's steps ----------------------------------------------------------------------------

def _validate_and_get_batch_size(flat_in_dims, flat_args):
    sizes = [a.size(d) for d, a in zip(flat_in_dims, flat_args) if d is not None]
    if not sizes:
        raise ValueError("vmap: Expected at least one Tensor to vmap over")
    if any(s != sizes[0] for s in sizes):
        raise ValueError(f"vmap: Expected all tensors to have the same size in the mapped "
                         f"dimension, got sizes {sizes} for the mapped dimension")
    return sizes[0]


def _process_batched_inputs(in_dims, args, func):
    """(batch size, in dim per flat argument (negative dims wrapped), flat arguments, their
    spec), or PyTorch's ValueError for ``in_dims`` that do not fit ``args``."""
    name = _get_name(func)
    prefix = f"vmap({name}, in_dims={in_dims}, ...)(<inputs>)"
    if not isinstance(in_dims, (int, tuple)):
        raise ValueError(f"{prefix}: expected `in_dims` to be int or a (potentially nested) "
                         f"tuple matching the structure of inputs, got: {type(in_dims)}.")
    if not args:
        raise ValueError(f"vmap({name})(<inputs>): got no inputs. Maybe you forgot to add "
                         f"inputs, or you are trying to vmap over a function with no inputs. "
                         f"The latter is unsupported.")
    flat_args, args_spec = tree_flatten(args)
    flat_in_dims = _broadcast_to_and_flatten(in_dims, args_spec)
    if flat_in_dims is None:
        raise ValueError(f"{prefix}: in_dims is not compatible with the structure of `inputs`. "
                         f"in_dims has structure {tree_flatten(in_dims)[1]} but inputs has "
                         f"structure {args_spec}.")
    for i, (arg, d) in enumerate(zip(flat_args, flat_in_dims)):
        if d is None:
            continue
        if not isinstance(d, int):
            raise ValueError(f"{prefix}: Got in_dim={d} for an input but in_dim must be either "
                             f"an integer dimension or None.")
        if not _is_tensor(arg):
            raise ValueError(f"{prefix}: Got in_dim={d} for an input but the input is of type "
                             f"{type(arg)}. We cannot vmap over non-Tensor arguments, please "
                             f"use None as the respective in_dim")
        n = arg.dim()
        if not -n <= d < n:
            raise ValueError(f"{prefix}: Got in_dim={d} for some input, but that input is a "
                             f"Tensor of dimensionality {n} so expected in_dim to satisfy "
                             f"-{n} <= in_dim < {n}.")
        flat_in_dims[i] = d % n
    return (_validate_and_get_batch_size(flat_in_dims, flat_args), flat_in_dims, flat_args,
            args_spec)


def _create_batched_inputs(flat_in_dims, flat_args, vmap_level, args_spec):
    """The positional arguments, each batched input wrapped at ``vmap_level``."""
    batched = [a if d is None else _add_batch_dim(a, d, vmap_level)
               for d, a in zip(flat_in_dims, flat_args)]
    return tree_unflatten(batched, args_spec)


def _maybe_remove_batch_dim(name, batched_output, vmap_level, batch_size, out_dim):
    if out_dim is None:
        if _is_tensor(batched_output) and is_batchedtensor(batched_output):
            raise ValueError(f"vmap({name}, ...): `{name}` can not return a BatchedTensor "
                             f"when out_dim is None")
        return batched_output
    if not _is_tensor(batched_output):
        raise ValueError(f"vmap({name}, ...): `{name}` must only return Tensors, got type "
                         f"{type(batched_output)}. Did you mean to set out_dims= to None for "
                         f"output?")
    return _remove_batch_dim(batched_output, vmap_level, batch_size, out_dim)


def _unwrap_batched(batched_outputs, out_dims, vmap_level, batch_size, func):
    """The outputs with ``vmap_level``'s batch moved to ``out_dims`` (a prefix of their
    structure)."""
    flat, spec = tree_flatten(batched_outputs)

    def incompatible_error():
        raise ValueError(f"vmap({_get_name(func)}, ..., out_dims={out_dims})(<inputs>): "
                         f"out_dims is not compatible with the structure of `outputs`. "
                         f"out_dims has structure {tree_flatten(out_dims)[1]} but outputs has "
                         f"structure {spec}.")

    if _is_tensor(batched_outputs):
        # a lone tensor takes a one-element tuple of out_dims as well (PyTorch's
        # test_out_dims_edge_case)
        if out_dims is None or isinstance(out_dims, int):
            flat_dims = [out_dims]
        elif isinstance(out_dims, tuple) and len(out_dims) == 1:
            flat_dims = list(out_dims)
        else:
            incompatible_error()
    else:
        flat_dims = _broadcast_to_and_flatten(out_dims, spec)
        if flat_dims is None:
            incompatible_error()
    name = _get_name(func)
    return tree_unflatten([_maybe_remove_batch_dim(name, o, vmap_level, batch_size, d)
                           for o, d in zip(flat, flat_dims)], spec)


def _check_out_dims_is_int_or_int_pytree(out_dims, func):
    if isinstance(out_dims, int):
        return
    for d in tree_flatten(out_dims)[0]:
        if not (d is None or isinstance(d, int)):
            raise ValueError(f"vmap({_get_name(func)}, ..., out_dims={out_dims}): `out_dims` "
                             f"must be an int, None or a python collection of ints representing "
                             f"where in the outputs the vmapped dimension should appear.")


def vmap_impl(func, in_dims, out_dims, randomness, chunk_size, *args, **kwargs):
    _check_out_dims_is_int_or_int_pytree(out_dims, func)
    batch_size, flat_in_dims, flat_args, args_spec = _process_batched_inputs(in_dims, args,
                                                                             func)
    if chunk_size is not None:
        return _chunked_vmap(func, flat_in_dims, flat_args, batch_size, chunk_size, args_spec,
                             out_dims, randomness, **kwargs)
    return _flat_vmap(func, batch_size, flat_in_dims, flat_args, args_spec, out_dims,
                      randomness, **kwargs)


def _flat_vmap(func, batch_size, flat_in_dims, flat_args, args_spec, out_dims, randomness,
               **kwargs):
    with vmap_increment_nesting(batch_size, randomness) as vmap_level:
        batched_inputs = _create_batched_inputs(flat_in_dims, flat_args, vmap_level, args_spec)
        batched_outputs = func(*batched_inputs, **kwargs)
        return _unwrap_batched(batched_outputs, out_dims, vmap_level, batch_size, func)


def _chunked_vmap(func, flat_in_dims, flat_args, batch_size, chunk_size, args_spec, out_dims,
                  randomness, **kwargs):
    """vmap over pieces of at most ``chunk_size`` samples, the outputs concatenated along
    ``out_dims``; with ``randomness="same"`` every piece draws from the same generator state,
    as one call would."""
    from .. import get_rng_state, set_rng_state
    state = get_rng_state() if randomness == "same" else None
    pieces = []
    for start in range(0, batch_size, chunk_size):
        n = min(chunk_size, batch_size - start)
        chunk = [a if d is None else a.narrow(d, start, n) for a, d in zip(flat_args, flat_in_dims)]
        if state is not None:
            set_rng_state(state)
        pieces.append(_flat_vmap(func, n, flat_in_dims, chunk, args_spec, out_dims, randomness,
                                 **kwargs))
    return _concat_chunks(pieces, out_dims)


def _concat_chunks(pieces, out_dims):
    from .. import cat
    spec = tree_flatten(pieces[0])[1]
    flats = [tree_flatten(p)[0] for p in pieces]
    out = [flats[0][j] if d is None else cat([f[j] for f in flats], d)
           for j, d in enumerate(_broadcast_to_and_flatten(out_dims, spec))]
    return tree_unflatten(out, spec)

