"""``ember.version``, as ``torch.version``: the release this tree is (``pyproject.toml``'s)."""
__version__ = "0.1.0"
