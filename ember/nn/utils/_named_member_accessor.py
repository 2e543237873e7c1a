"""``torch.nn.utils._named_member_accessor``: read, set, delete and swap a module's tensors and
submodules by dotted name (``"layer1.conv1.weight"``), the primitives libraries build
functional calls and parameter swapping on (tensordict's ``TensorDict.to_module``).
``NamedMemberAccessor`` caches the submodules it walks through."""
from ..modules.module import Module
from ..._tensor import Tensor

_MISSING = object()  # (the "no such attribute" a swap may put back)


def _check_name(name, what):
    if "." in name:
        raise KeyError(f"{what} name can't contain \".\"")
    if name == "":
        raise KeyError(f"{what} name can't be empty string \"\"")


def _check_module(module):
    if not isinstance(module, Module):
        raise TypeError(f"{module} is not an instance of torch.nn.Module")


def set_tensor(module, name, tensor):
    """``module.<name> = tensor``, kept a parameter or buffer where it was one."""
    _check_module(module)
    if not isinstance(tensor, Tensor) and tensor is not None:
        raise TypeError(f"{tensor} is not an instance of torch.Tensor")
    _check_name(name, "tensor")
    if name in module._parameters:
        module._parameters[name] = tensor
    elif name in module._buffers:
        module._buffers[name] = tensor
    else:
        setattr(module, name, tensor)


def swap_tensor(module, name, tensor, allow_missing=False):
    """Put ``tensor`` at ``module.<name>`` and return what was there (``_MISSING`` for nothing,
    when ``allow_missing``); ``tensor=_MISSING`` deletes the entry."""
    _check_module(module)
    if tensor is not _MISSING and not isinstance(tensor, Tensor) and tensor is not None:
        raise TypeError(f"{tensor} is not an instance of torch.Tensor")
    _check_name(name, "tensor")
    for table in (module._parameters, module._buffers):
        if name in table:
            orig = table[name]
            if tensor is _MISSING:
                del table[name]
            else:
                table[name] = tensor
            return orig
    if hasattr(module, name):
        orig = getattr(module, name)
        if not isinstance(orig, Tensor) and orig is not None:
            raise TypeError(f"attribute `{name}`: {orig} is not an instance of torch.Tensor")
    elif allow_missing:
        orig = _MISSING
    else:
        raise AttributeError(f"{module._get_name()} has no attribute `{name}`")
    if tensor is not _MISSING:
        setattr(module, name, tensor)
    elif hasattr(module, name):
        delattr(module, name)
    return orig


def swap_submodule(module, name, submodule):
    """Put ``submodule`` at ``module.<name>`` (an existing submodule); the one it replaces."""
    _check_module(module)
    if not isinstance(submodule, Module):
        raise TypeError(f"{submodule} is not an instance of torch.nn.Module")
    _check_name(name, "submodule")
    if name not in module._modules:
        raise KeyError(f"submodule {name} does not exist")
    orig = module._modules[name]
    if not isinstance(orig, Module):
        raise TypeError(f"{name} attribute is not an instance of torch.nn.Module")
    module._modules[name] = submodule
    return orig


class NamedMemberAccessor:
    """The tensors and submodules of ``module`` by dotted path, one at a time or in batches."""

    def __init__(self, module):
        self.module = module
        self.memo = {}

    def get_submodule(self, name):
        if not name:
            return self.module
        if name not in self.memo:
            prefix, _, attr = name.rpartition(".")
            parent = self.get_submodule(prefix)
            try:
                sub = getattr(parent, attr)
            except AttributeError as ex:
                raise AttributeError(f"{parent._get_name()} has no attribute `{attr}`") from ex
            if not isinstance(sub, Module):
                raise TypeError(f"submodule `{name}`: {sub} is not an instance of "
                                f"torch.nn.Module")
            self.memo[name] = sub
        return self.memo[name]

    def _owner(self, name):
        prefix, _, attr = name.rpartition(".")
        return self.get_submodule(prefix), attr

    def swap_submodule(self, path, value):
        return swap_submodule(*self._owner(path), value)

    def get_tensor(self, name):
        mod, attr = self._owner(name)
        try:
            tensor = getattr(mod, attr)
        except AttributeError as ex:
            raise AttributeError(f"{mod._get_name()} has no attribute `{name}`") from ex
        if not isinstance(tensor, Tensor) and tensor is not None:
            raise TypeError(f"{tensor} is not an instance of torch.Tensor")
        return tensor

    def set_tensor(self, name, value):
        set_tensor(*self._owner(name), value)

    def del_tensor(self, name):
        mod, attr = self._owner(name)
        try:
            delattr(mod, attr)
        except AttributeError as ex:
            raise AttributeError(f"{mod._get_name()} has no attribute `{name}`") from ex

    def swap_tensor(self, name, value, allow_missing=False):
        return swap_tensor(*self._owner(name), value, allow_missing=allow_missing)

    @staticmethod
    def _pairs(names, values):
        names, values = list(names), list(values)
        if len(names) != len(values):
            raise AssertionError(f"names and values must have the same length, got "
                                 f"{len(names)} names and {len(values)} values")
        return zip(names, values)

    def get_tensors(self, names):
        return [self.get_tensor(n) for n in names]

    def set_tensors(self, names, values):
        for n, v in self._pairs(names, values):
            self.set_tensor(n, v)

    def set_tensors_dict(self, named_tensors):
        for n, v in named_tensors.items():
            self.set_tensor(n, v)

    def del_tensors(self, names):
        for n in names:
            self.del_tensor(n)

    def swap_tensors(self, names, values, allow_missing=False):
        return [self.swap_tensor(n, v, allow_missing=allow_missing)
                for n, v in self._pairs(names, values)]

    def swap_tensors_dict(self, named_tensors, allow_missing=False):
        """Swap every entry; on any failure (or a missing name, unless ``allow_missing``) put
        back what was swapped. (the originals by name, the missing names)"""
        orig, missing = {}, []
        try:
            for n, t in named_tensors.items():
                orig[n] = self.swap_tensor(n, t, allow_missing=True)
                if orig[n] is _MISSING:
                    missing.append(n)
        except Exception:
            self._swap_back(orig)
            raise
        if missing and not allow_missing:
            self._swap_back(orig)
            raise RuntimeError(f"Missing key(s): {', '.join(map(repr, missing))}.")
        return orig, missing

    def _swap_back(self, orig):
        for n, t in orig.items():
            self.swap_tensor(n, t, allow_missing=True)

    def check_keys(self, keys):
        """(missing names, unexpected names), each sorted."""
        keys = set(keys)
        valid = {n for n, _ in self.named_tensors(remove_duplicate=False)}
        return sorted(valid - keys), sorted(keys - valid)

    def named_parameters(self, remove_duplicate=True):
        yield from self.module.named_parameters(remove_duplicate=remove_duplicate)

    def named_buffers(self, remove_duplicate=True):
        yield from self.module.named_buffers(remove_duplicate=remove_duplicate)

    def named_tensors(self, remove_duplicate=True):
        yield from self.module.named_parameters(remove_duplicate=remove_duplicate)
        yield from self.module.named_buffers(remove_duplicate=remove_duplicate)

    def named_modules(self, remove_duplicate=True):
        yield from self.module.named_modules(remove_duplicate=remove_duplicate)
