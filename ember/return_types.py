"""``torch.return_types``: the namedtuple classes of ops with named results (``sort`` gives
``values`` and ``indices``), one per op name. ``ember/_ops/bindings.py`` creates them as it
generates the bindings and places them here, so that ``ember.return_types.sort`` names the class
and pickle finds it."""
