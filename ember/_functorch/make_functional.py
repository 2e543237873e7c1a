"""functorch's ``make_functional`` (``torch._functorch.make_functional``), from before
``torch.func.functional_call``: a module split into a stateless function and its state,
``fmodel(params, *args)``. The model is copied; the copy's parameters (and buffers) are
replaced by meta tensors and swapped in for each call. Tied tensors appear once in ``params``
and are set at every name they have."""
import copy

from .. import empty_like
from ..nn import Module
from ..nn.utils._named_member_accessor import NamedMemberAccessor

__all__ = ["make_functional", "make_functional_with_buffers", "combine_state_for_ensemble",
           "FunctionalModule", "FunctionalModuleWithBuffers"]


def _extract_members(module, named_members, subclass):
    """(tensors, their first names, {first name: every name}) of ``named_members``, each
    replaced in ``module`` by an empty ``subclass`` on the meta device."""
    everything = tuple(named_members(remove_duplicate=False))
    unique = tuple(named_members(remove_duplicate=True))
    names_of = {id(t): (name, []) for name, t in unique}
    for name, t in everything:
        names_of[id(t)][1].append(name)
    names_map = dict(names_of.values())
    accessor = NamedMemberAccessor(module)
    stand_ins = {}
    for name, t in everything:
        if id(t) not in stand_ins:
            stand_ins[id(t)] = subclass(empty_like(t, device="meta"))
        accessor.set_tensor(name, stand_ins[id(t)])
    names, tensors = (tuple(zip(*unique)) if unique else ((), ()))
    return tensors, names, names_map


def extract_weights(module):
    from ..nn import Parameter
    return _extract_members(module, module.named_parameters, Parameter)


def extract_buffers(module):
    return _extract_members(module, module.named_buffers, lambda t: t)


def _swap_state(module, names_map, tensors):
    """Set each of ``tensors`` at all its names; the tensors they replace."""
    accessor = NamedMemberAccessor(module)
    old = []
    for names, t in zip(names_map.values(), tensors):
        old.append(accessor.swap_tensor(names[0], t))
        for name in names[1:]:
            accessor.set_tensor(name, t)
    return old


class FunctionalModule(Module):
    """``fmodel(params, *args, **kwargs)``: the copied module run with ``params``."""

    def __init__(self, stateless_model, param_names, names_map):
        super().__init__()
        self.stateless_model = stateless_model
        self.param_names = param_names
        self.names_map = names_map

    @staticmethod
    def _create_from(model, disable_autograd_tracking=False):
        model_copy = copy.deepcopy(model)
        params, param_names, names_map = extract_weights(model_copy)
        if disable_autograd_tracking:
            for p in params:
                p.requires_grad_(False)
        return FunctionalModule(model_copy, param_names, names_map), params

    def forward(self, params, *args, **kwargs):
        old = _swap_state(self.stateless_model, self.names_map, params)
        try:
            return self.stateless_model(*args, **kwargs)
        finally:
            _swap_state(self.stateless_model, self.names_map, old)


class FunctionalModuleWithBuffers(Module):
    """``fmodel(params, buffers, *args, **kwargs)``."""

    def __init__(self, stateless_model, param_names, buffer_names, param_names_map,
                 buffer_names_map):
        super().__init__()
        self.stateless_model = stateless_model
        self.param_names = param_names
        self.buffer_names = buffer_names
        self.all_names_map = dict(param_names_map)
        self.all_names_map.update(buffer_names_map)

    @staticmethod
    def _create_from(model, disable_autograd_tracking=False):
        model_copy = copy.deepcopy(model)
        params, param_names, param_names_map = extract_weights(model_copy)
        buffers, buffer_names, buffer_names_map = extract_buffers(model_copy)
        if disable_autograd_tracking:
            for p in params:
                p.requires_grad_(False)
        return (FunctionalModuleWithBuffers(model_copy, param_names, buffer_names,
                                            param_names_map, buffer_names_map), params, buffers)

    def forward(self, params, buffers, *args, **kwargs):
        old = _swap_state(self.stateless_model, self.all_names_map, tuple(params) + tuple(buffers))
        try:
            return self.stateless_model(*args, **kwargs)
        finally:
            _swap_state(self.stateless_model, self.all_names_map, old)


def make_functional(model, disable_autograd_tracking=False):
    """(fmodel, params) of a module without buffers."""
    if len(tuple(model.buffers())) > 0:
        raise RuntimeError("make_functional(model): `model` has buffers. Please use "
                           "make_functional_with_buffers(model) instead.")
    return FunctionalModule._create_from(model, disable_autograd_tracking)


def make_functional_with_buffers(model, disable_autograd_tracking=False):
    """(fmodel, params, buffers)."""
    return FunctionalModuleWithBuffers._create_from(model, disable_autograd_tracking)


def combine_state_for_ensemble(models):
    """(fmodel, params, buffers) of same-class modules, each state stacked on a new first dim
    (ensembling under vmap)."""
    from .. import stack
    if len(models) == 0:
        raise RuntimeError("combine_state_for_ensemble: Expected at least one model, got 0.")
    if not (all(m.training for m in models) or all(not m.training for m in models)):
        raise RuntimeError("combine_state_for_ensemble: Expected all models to have the same "
                           "training/eval mode.")
    if not all(type(m) is type(models[0]) for m in models):
        raise RuntimeError("combine_state_for_ensemble: Expected all models to be of the same "
                           "class.")
    funcs, params, buffers = zip(*[make_functional_with_buffers(m) for m in models])
    params = tuple(stack(ps).detach() for ps in zip(*params))
    buffers = tuple(stack(bs).detach() for bs in zip(*buffers))
    return funcs[0], params, buffers
