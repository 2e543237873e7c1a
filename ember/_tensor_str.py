"""Printing tensors in PyTorch's format."""


def _str(self, tensor_contents=None):
    return f"tensor(<{tuple(self._size)}, {self._dtype}>)"


def set_printoptions(precision=None, threshold=None, edgeitems=None, linewidth=None, profile=None,
                     sci_mode=None):
    raise NotImplementedError
