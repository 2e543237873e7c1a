"""``ember._library``: the machinery behind ``ember.library.custom_op`` (schema inference, the
CustomOpDef object, fake/autograd/kernel registrations, opcheck)."""
