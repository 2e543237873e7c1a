"""``torch._jit_internal``, the part of it Python code uses outside TorchScript: the
``BroadcastingList`` annotations (``BroadcastingList2[int]``: an int or a list of two;
subscripting gives None, as in PyTorch). Re-exported by ``ember.jit.annotations`` and
``ember.nn.functional``."""


class BroadcastingListCls:
    def __getitem__(self, types):
        return None


BroadcastingList1 = BroadcastingList2 = BroadcastingList3 = BroadcastingListCls()
