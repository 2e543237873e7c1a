"""``reduction=`` of the losses as ATen's enum (``at::Reduction``: none 0, mean 1, sum 2), and
the legacy ``size_average``/``reduce`` pair mapped onto it (``torch.nn._reduction``, which
``F._Reduction`` names and custom losses call)."""
import warnings

__all__ = ["get_enum", "legacy_get_string", "legacy_get_enum"]

_ENUM = {"none": 0, "mean": 1, "sum": 2}


def get_enum(reduction):
    if reduction == "elementwise_mean":
        warnings.warn("reduction='elementwise_mean' is deprecated. Please use reduction='mean' "
                      "instead.", stacklevel=2)
        return 1
    try:
        return _ENUM[reduction]
    except (KeyError, TypeError):
        raise ValueError(f"{reduction} is not a valid value for reduction") from None


def legacy_get_string(size_average, reduce, emit_warning=True):
    """The ``reduction`` string the legacy flags mean (both default to True)."""
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    if size_average and reduce:
        ret = "mean"
    elif reduce:
        ret = "sum"
    else:
        ret = "none"
    if emit_warning:
        warnings.warn(f"size_average and reduce args will be deprecated, please use "
                      f"reduction='{ret}' instead.", stacklevel=2)
    return ret


def legacy_get_enum(size_average, reduce, emit_warning=True):
    return get_enum(legacy_get_string(size_average, reduce, emit_warning))
