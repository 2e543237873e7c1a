"""``Tensor.__getitem__`` / ``__setitem__``."""


def getitem(self, index):
    raise NotImplementedError


def setitem(self, index, value):
    raise NotImplementedError
