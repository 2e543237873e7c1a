"""``ember.fx.experimental``: ``proxy_tensor.make_fx`` (aten-level tracing)."""
