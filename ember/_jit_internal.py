"""``torch._jit_internal``, the part of it Python code uses outside TorchScript: the
``BroadcastingList`` annotations (``BroadcastingList2[int]``: an int or a list of two;
subscripting gives None, as in PyTorch), re-exported by ``ember.jit.annotations`` and
``ember.nn.functional``; and the markers ``ember.jit`` defines (``ember/jit/_internal.py``),
which libraries import from here (looked up when asked for: ``ember.jit`` imports ``nn``,
which imports this module)."""

_FROM_JIT = ("FunctionModifiers", "_copy_to_script_wrapper", "_overload", "_overload_method",
             "export", "get_torchscript_modifier", "ignore", "is_scripting", "unused")


def __getattr__(name):
    if name in _FROM_JIT:
        from .jit import _internal
        return getattr(_internal, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class BroadcastingListCls:
    def __getitem__(self, types):
        return None


BroadcastingList1 = BroadcastingList2 = BroadcastingList3 = BroadcastingListCls()
