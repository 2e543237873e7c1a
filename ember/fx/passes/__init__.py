"""``ember.fx.passes``: analyses and rewrites of FX graphs."""
from . import shape_prop  # noqa: F401
