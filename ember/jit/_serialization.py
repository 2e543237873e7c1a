"""``ember.jit.save`` / ``ember.jit.load``: a script module or function is written as an
``ember.export`` program (``ember.export.save``'s zip) with a marker naming what it was;
``load`` gives back a ``RecursiveScriptModule`` running that program."""
import json
import warnings

__all__ = ["save", "load"]

_MARKER = "ember_jit.json"


def save(m, f, _extra_files=None):
    """Write ``m`` (a ``ScriptModule`` or ``ScriptFunction``) to the path or file ``f``."""
    from ..export import save as export_save
    from ._script import ScriptFunction, ScriptModule
    warnings.warn("`torch.jit.save` is deprecated. Please switch to `torch.export`.",
                  DeprecationWarning)
    if not isinstance(m, (ScriptModule, ScriptFunction)):
        raise AttributeError(f"'{type(m).__name__}' object has no attribute 'save'")
    if hasattr(f, "__fspath__"):
        f = f.__fspath__()
    extra = dict(_extra_files or {})
    extra[_MARKER] = json.dumps({"kind": type(m).__name__,
                                 "name": getattr(m, "original_name", getattr(m, "name", ""))})
    export_save(m._program(), f, extra_files=extra)


def load(f, map_location=None, _extra_files=None, _restore_shapes=False):
    """Read what :func:`save` wrote; ``_extra_files`` (a dict of names) is filled in."""
    import zipfile
    from ..export import load as export_load
    from ._script import RecursiveScriptModule
    warnings.warn("`torch.jit.load` is deprecated. Please switch to `torch.export`.",
                  DeprecationWarning)
    if hasattr(f, "__fspath__"):
        f = f.__fspath__()
    if isinstance(f, str):
        import os
        if not os.path.exists(f):
            raise ValueError(f"The provided filename {f} does not exist")
        if os.path.isdir(f):
            raise ValueError(f"The provided filename {f} is a directory")
    extra = {k: "" for k in (_extra_files or {})}
    extra[_MARKER] = ""
    try:
        program = export_load(f, extra_files=extra)
    except (KeyError, zipfile.BadZipFile) as e:
        raise RuntimeError(f"ember.jit.load: not a file written by ember.jit.save ({e})") from e
    if _extra_files is not None:
        for k in _extra_files:
            _extra_files[k] = extra[k]
    module = program.module()
    if map_location is not None:
        module = module.to(map_location)
    loaded = RecursiveScriptModule(module, capture=False, program=program)
    object.__setattr__(loaded, "_original_name", json.loads(extra[_MARKER]).get("name", ""))
    return loaded
