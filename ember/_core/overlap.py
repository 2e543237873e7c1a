"""Memory overlap between tensors, as ATen's MemoryOverlap.cpp decides it.

An op that writes into a tensor must not write one memory location twice (an expanded tensor:
*internal* overlap), nor write where an input it still reads lies partly (*partial* overlap:
``a[1:].add_(a[:-1])``). PyTorch refuses both in every TensorIterator op (pointwise in-place and
``out=``, ``copy_``) and a few others (``cat``, ``stack``), with the messages below. Like
PyTorch, a layout too irregular to decide cheaply counts as "too hard" and is let through.
"""
from . import strides as _st

NO, YES, TOO_HARD = "no", "yes", "too_hard"             # internal overlap
NO_OVERLAP, FULL, PARTIAL = "no", "full", "partial"     # overlap between two tensors

_INTERNAL = ("unsupported operation: more than one element of the written-to tensor refers to a "
             "single memory location. Please clone() the tensor before performing the operation.")
_PARTIAL = ("unsupported operation: some elements of the input tensor and the written-to tensor "
            "refer to a single memory location. Please clone() the tensor before performing the "
            "operation.")


def has_internal_overlap(t):
    """YES when a dimension of size > 1 has stride 0; NO when non-overlapping and dense."""
    size, stride = t._size, t._stride
    if _st.is_contiguous(size, stride) or _st.is_non_overlapping_and_dense(size, stride):
        return NO
    for sz, st in zip(size, stride):
        if sz > 1 and st == 0:
            return YES
    return TOO_HARD


def get_overlap_status(a, b):
    """FULL when a and b cover the same bytes, PARTIAL when their byte ranges intersect
    otherwise, NO_OVERLAP when they do not; TOO_HARD for a layout with gaps or repeats."""
    if a is b:
        return FULL
    sa, sb = a._storage_, b._storage_
    # a tensor still holding its fresh NumPy array has no storage anyone else could share
    if sa is not sb or sa.__class__ is not sb.__class__ or not hasattr(sa, "nbytes"):
        return NO_OVERLAP
    if 0 in a._size or 0 in b._size:
        return NO_OVERLAP
    if not (_st.is_non_overlapping_and_dense(a._size, a._stride)
            and _st.is_non_overlapping_and_dense(b._size, b._stride)):
        return TOO_HARD
    a_start = a._offset * a._dtype.itemsize
    b_start = b._offset * b._dtype.itemsize
    a_end = a_start + _st.numel(a._size) * a._dtype.itemsize
    b_end = b_start + _st.numel(b._size) * b._dtype.itemsize
    if a_start < b_end and b_start < a_end:
        if a_start == b_start and a_end == b_end and a._stride == b._stride:
            return FULL
        return PARTIAL
    return NO_OVERLAP


def assert_no_internal_overlap(t):
    if has_internal_overlap(t) == YES:
        raise RuntimeError(_INTERNAL)


def assert_no_partial_overlap(a, b):
    """A written tensor may be its own input (``a.add_(a)``), not part of another input."""
    if get_overlap_status(a, b) == PARTIAL:
        raise RuntimeError(_PARTIAL)


def assert_no_overlap(a, b):
    """For ops that read inputs while writing (``cat``, ``stack``): not even full overlap."""
    if get_overlap_status(a, b) in (PARTIAL, FULL):
        raise RuntimeError(_PARTIAL)


def check_no_overlap(out, inputs):
    """An op that reads its inputs while writing ``out`` (cat, gather, ...): out may not repeat
    locations nor touch any input."""
    assert_no_internal_overlap(out)
    for t in inputs:
        if hasattr(t, "_keyset"):
            assert_no_overlap(out, t)


def check_write(out, inputs):
    """TensorIterator's check on an op writing ``out`` and reading ``inputs`` (tensors or not)."""
    assert_no_internal_overlap(out)
    for t in inputs:
        if hasattr(t, "_keyset"):
            assert_no_partial_overlap(out, t)
