"""The ATen op surface: ``native_functions.yaml`` loaded into the dispatcher, the ``ember.ops``
namespaces of ``OpOverload`` objects, and the Python bindings generated from the schemas."""
