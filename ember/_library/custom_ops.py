"""Registries the custom-op machinery shares with FakeTensorMode (filled by ember.library)."""

# "ns::name.overload" -> fake implementation (register_fake / Library._register_fake)
_fake_impls = {}


def fake_impl_for(op):
    """The registered fake implementation of an OpOverload, or None."""
    return _fake_impls.get(op._entry.qualname) if _fake_impls else None
