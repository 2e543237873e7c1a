"""``ember.backends.xeon``: ``run_cpu``, the launcher that runs a program as core-bound
instances (``python -m ember.backends.xeon.run_cpu``)."""
