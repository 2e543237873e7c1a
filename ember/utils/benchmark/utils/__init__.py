"""The modules of ``ember.utils.benchmark``: ``common`` (``TaskSpec``, ``Measurement``, unit and
significant-figure helpers), ``timer`` (``Timer``) and ``compare`` (``Compare``)."""
