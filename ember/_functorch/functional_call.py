"""``functional_call`` and ``stack_module_state``: modules as functions of their state.

``functional_call(module, params_and_buffers, args)`` runs ``module`` with the named tensors
standing in for its parameters and buffers (looked up by state-dict name), restoring the
originals afterwards; the tensors may be BatchedTensors or tensors that require grad, which is
how ``vmap`` and ``grad`` reach a module's weights. ``stack_module_state`` stacks the state of
several same-class modules into leading-dim tensors for ensembling under ``vmap``.
"""
import contextlib


def _resolve(module, name):
    """(submodule, attribute name, kind) for a state-dict name like ``"l1.weight"``."""
    *path, attr = name.split(".")
    mod = module
    for p in path:
        mod = getattr(mod, p)
    if attr in mod._parameters:
        return mod, attr, "_parameters"
    if attr in mod._buffers:
        return mod, attr, "_buffers"
    return mod, attr, None


@contextlib.contextmanager
def _swapped(module, tensors, tie_weights, strict):
    names = dict(module.named_parameters(remove_duplicate=False))
    names.update(dict(module.named_buffers(remove_duplicate=False)))
    if strict:
        missing = [k for k in names if k not in tensors]
        unexpected = [k for k in tensors if k not in names]
        if missing or unexpected:
            msg = []
            if unexpected:
                msg.append(f"Unexpected key(s): {', '.join(map(repr, unexpected))}.")
            if missing:
                msg.append(f"Missing key(s): {', '.join(map(repr, missing))}.")
            raise RuntimeError("Error(s) in reparametrizing for "
                               f"{module.__class__.__name__}:\n\t" + "\n\t".join(msg))
    tensors = dict(tensors)
    if tie_weights:  # a tensor given for one name of a tied weight serves all its names
        by_id = {}
        for k, v in names.items():
            by_id.setdefault(id(v), []).append(k)
        for ks in by_id.values():
            given = [k for k in ks if k in tensors]
            if given:
                for k in ks:
                    tensors.setdefault(k, tensors[given[0]])
    saved = []
    try:
        for name, value in tensors.items():
            mod, attr, kind = _resolve(module, name)
            if kind is None:
                saved.append((mod, attr, None, mod.__dict__.get(attr, _MISSING)))
                object.__setattr__(mod, attr, value)
                continue
            table = getattr(mod, kind)
            saved.append((mod, attr, kind, table[attr]))
            table[attr] = value
        yield
    finally:
        for mod, attr, kind, old in reversed(saved):
            if kind is None:
                if old is _MISSING:
                    mod.__dict__.pop(attr, None)
                else:
                    object.__setattr__(mod, attr, old)
            else:
                getattr(mod, kind)[attr] = old


_MISSING = object()


def functional_call(module, parameter_and_buffer_dicts, args=None, kwargs=None, *,
                    tie_weights=True, strict=False):
    """``torch.func.functional_call``: ``module(*args, **kwargs)`` with its parameters and
    buffers replaced by the given tensors (a dict, or a sequence of dicts)."""
    if isinstance(parameter_and_buffer_dicts, dict):
        tensors = parameter_and_buffer_dicts
    elif isinstance(parameter_and_buffer_dicts, (list, tuple)):
        if not all(isinstance(d, dict) for d in parameter_and_buffer_dicts):
            raise ValueError("Expected all elements of parameter_and_buffer_dicts to be "
                             "dictionaries")
        counts = {}
        for d in parameter_and_buffer_dicts:
            for k in d:
                counts[k] = counts.get(k, 0) + 1
        repeated = [k for k, n in counts.items() if n > 1]
        if repeated:
            raise ValueError(f"{repeated} appeared in multiple dictionaries; behavior of "
                             f"functional call is ambiguous")
        tensors = {k: v for d in parameter_and_buffer_dicts for k, v in d.items()}
    else:
        raise ValueError(f"Expected parameter_and_buffer_dicts to be a dict, or a list/tuple "
                         f"of dicts, but got {type(parameter_and_buffer_dicts)}")
    if args is None:
        args = ()
    elif not isinstance(args, tuple):
        args = (args,)
    with _swapped(module, tensors, tie_weights, strict):
        return module(*args, **(kwargs or {}))


def _stacked_leaf(tensors, name):
    from .. import stack
    all_rg = all(t.requires_grad for t in tensors)
    if not all_rg and any(t.requires_grad for t in tensors):
        raise RuntimeError(f"Expected {name} from each model to have the same .requires_grad")
    out = stack(tensors)
    return out.detach().requires_grad_() if all_rg else out


def stack_module_state(models):
    """``torch.func.stack_module_state``: (params, buffers) dicts of the models' state stacked
    along a new leading dim (new leaf tensors)."""
    models = list(models)
    if not models:
        raise RuntimeError("stack_module_state: Expected at least one model, got 0.")
    if not (all(m.training for m in models) or all(not m.training for m in models)):
        raise RuntimeError("stack_module_state: Expected all models to have the same "
                           "training/eval mode.")
    if not all(type(m) is type(models[0]) for m in models):
        raise RuntimeError("stack_module_state: Expected all models to be of the same class.")
    all_params = [dict(m.named_parameters()) for m in models]
    params = {k: _stacked_leaf(tuple(p[k] for p in all_params), k) for k in all_params[0]}
    all_buffers = [dict(m.named_buffers()) for m in models]
    buffers = {k: _stacked_leaf(tuple(b[k] for b in all_buffers), k) for k in all_buffers[0]}
    return params, buffers
