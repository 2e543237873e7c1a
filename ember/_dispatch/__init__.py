"""The dispatcher: dispatch keys, key sets, thread-local include/exclude sets, operator schemas,
per-operator kernel tables, fallthroughs, boxed fallbacks, redispatch and the dispatch trace."""
