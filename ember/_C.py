"""``ember._C``: the inspection entry points PyTorch exposes from its C extension."""
from ._dispatch import dispatcher as _d
from ._dispatch import tls as _tls
from ._dispatch.keys import DispatchKey, DispatchKeySet  # noqa: F401
from ._dispatch.tls import (ExcludeDispatchKeyGuard as _ExcludeDispatchKeyGuard,  # noqa: F401
                            ForceDispatchKeyGuard as _ForceDispatchKeyGuard,
                            IncludeDispatchKeyGuard as _IncludeDispatchKeyGuard,
                            _dispatch_tls_is_dispatch_key_excluded,
                            _dispatch_tls_is_dispatch_key_included,
                            _dispatch_tls_local_exclude_set, _dispatch_tls_local_include_set,
                            _dispatch_tls_set_dispatch_key_excluded,
                            _dispatch_tls_set_dispatch_key_included)


def _dispatch_dump(name):
    """Registrations of an operator: schema, then each kernel with where it was registered."""
    return _d.dump(name)


def _dispatch_dump_table(name):
    """The computed table: the kernel each runtime key resolves to, tagged as PyTorch tags it."""
    return _d.dump_table(name)


def _dispatch_keys(tensor):
    return DispatchKeySet(tensor._keyset)


def _dispatch_has_kernel_for_dispatch_key(name, key):
    from ._dispatch.keys import parse_key
    return _d._lookup(name).has_kernel(parse_key(key))


def _set_dispatch_trace(enabled, stream=None):
    _d.set_dispatch_trace(enabled, stream)


def _dispatch_find_schema_or_throw(name, overload=""):
    return _d._lookup(f"{name}.{overload}" if overload else name).schema
