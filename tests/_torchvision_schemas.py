"""The CPU oracle's torchvision wheel is a CUDA build whose operator library cannot load beside
it; its Python code then fails to import (transformers, diffusers, torchmetrics and timm import
it) on the fake kernels it registers for nms/qnms. :func:`install` makes the schemas of those two
be defined in PyTorch just before torchvision first imports in this process, as
``ember.as_torch`` does on ember's side. Used by tests/conftest.py and by the test programs that
run PyTorch in a process of their own."""
import importlib
import importlib.abc
import importlib.util
import sys


class _Finder(importlib.abc.MetaPathFinder):
    library = None  # the Library defining the schemas, kept for the process

    def find_spec(self, name, path=None, target=None):
        # (it stays on sys.meta_path: removing itself while the import system iterates over
        # the list would skip the finder after it)
        if name == "torchvision" and self.library is None:
            torch = sys.modules.get("torch") or (
                importlib.import_module("torch") if importlib.util.find_spec("torch") else None)
            if getattr(torch, "__name__", None) == "torch" and \
                    not hasattr(torch.ops.torchvision, "nms"):
                lib = _Finder.library = torch.library.Library("torchvision", "FRAGMENT")
                for op in ("nms", "qnms"):
                    lib.define(f"{op}(Tensor dets, Tensor scores, float iou_threshold) -> Tensor")
        return None  # the module itself is found by the next finder


_finder = _Finder()


def install():
    if _finder not in sys.meta_path:
        sys.meta_path.insert(0, _finder)
