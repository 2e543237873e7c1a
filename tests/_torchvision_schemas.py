"""The CPU oracle's torchvision wheel is a CUDA build whose operator library cannot load beside
it; its Python code then fails to import (transformers, diffusers, torchmetrics and timm import
it) on the fake kernels it registers for nms/qnms. :func:`install` makes the schemas of those two
be defined in PyTorch just before torchvision first imports in this process (``ember.as_torch``
defines torchvision's ops on ember's side). Used by tests/conftest.py and by the test programs
that run PyTorch in a process of their own. :func:`detection_ops` gives the oracle test-only
implementations of nms and roi_align for tests/test_vision_detection.py."""
import contextlib
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
            # (PyTorch only: ember under as_torch is named torch too, and defines the ops)
            if torch is not None and torch is not sys.modules.get("ember") and \
                    not hasattr(torch.ops.torchvision, "nms"):
                lib = _Finder.library = torch.library.Library("torchvision", "FRAGMENT")
                for op in ("nms", "qnms"):
                    lib.define(f"{op}(Tensor dets, Tensor scores, float iou_threshold) -> Tensor")
        return None  # the module itself is found by the next finder


_finder = _Finder()


def install():
    if _finder not in sys.meta_path:
        sys.meta_path.insert(0, _finder)


ROI_ALIGN = ("roi_align(Tensor input, Tensor rois, float spatial_scale, SymInt pooled_height, "
             "SymInt pooled_width, int sampling_ratio, bool aligned) -> Tensor")


def _nms_cpu(dets, scores, iou_threshold):
    """Test-only: torchvision's CPU nms kernel (csrc/ops/cpu/nms_kernel.cpp) transcribed, its
    inner loop over the later boxes in NumPy, in the boxes' dtype (a NaN coordinate aside:
    std::max keeps its first argument, np.maximum the NaN)."""
    import numpy as np
    import torch
    if dets.numel() == 0:
        return torch.empty(0, dtype=torch.long)
    b = dets.detach().numpy()
    x1, y1, x2, y2 = (np.ascontiguousarray(b[:, i]) for i in range(4))
    areas = (x2 - x1) * (y2 - y1)
    order = scores.sort(stable=True, dim=0, descending=True).indices.numpy()
    suppressed = np.zeros(len(order), dtype=bool)
    keep = []
    for _i, i in enumerate(order):
        if suppressed[i]:
            continue
        keep.append(i)
        j = order[_i + 1:]
        w = np.maximum(0, np.minimum(x2[i], x2[j]) - np.maximum(x1[i], x1[j]))
        h = np.maximum(0, np.minimum(y2[i], y2[j]) - np.maximum(y1[i], y1[j]))
        inter = w * h
        with np.errstate(invalid="ignore"):  # (0 / 0 for two empty boxes: never suppressed)
            iou = inter / (areas[i] + areas[j] - inter)
        suppressed[j] |= iou.astype(np.float64) > iou_threshold  # (C++ compares in double)
    return torch.tensor(keep, dtype=torch.long)


@contextlib.contextmanager
def detection_ops():
    """Test-only, for the PyTorch oracle whose torchvision cannot load its compiled ops: for
    the block, torchvision believes it has them (``extension._has_ops``) and gets the two its
    detection models call: nms (:func:`_nms_cpu`, on CPU) and roi_align, which runs
    torchvision's own pure-Python ``_roi_align`` eagerly (its fallback without ops, transcribed
    from the CUDA kernel; autograd through PyTorch's ops). Other ops stay missing."""
    import torch
    import torchvision.extension
    # (by importlib: the attribute torchvision.ops.roi_align is the function, not the module)
    roi_align_module = importlib.import_module("torchvision.ops.roi_align")
    lib = torch.library.Library("torchvision", "FRAGMENT")
    if not hasattr(torch.ops.torchvision, "roi_align"):
        lib.define(ROI_ALIGN)
    lib.impl("nms", _nms_cpu, "CPU")
    lib.impl("roi_align", roi_align_module._roi_align.__wrapped__, "CompositeImplicitAutograd")
    saved = torchvision.extension._has_ops, roi_align_module._has_ops
    torchvision.extension._has_ops = roi_align_module._has_ops = lambda: True
    try:
        yield
    finally:
        torchvision.extension._has_ops, roi_align_module._has_ops = saved
        lib._destroy()
