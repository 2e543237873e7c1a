"""The graph of a DataPipe pipeline, read out of the pickler: while a DataPipe is pickled with
the class-wide reduce hook set, every other DataPipe reached through its state is recorded
and replaced by a stub instead of being pickled, which gives the DataPipe's direct inputs;
the graph is built by repeating that on each of them."""
import io
import pickle
import warnings
from collections.abc import Collection

from .datapipes.datapipe import IterDataPipe, MapDataPipe
from .datapipes.utils.common import dill_available

__all__ = ["traverse", "traverse_dps"]

DataPipe = IterDataPipe | MapDataPipe
DataPipeGraph = dict[int, tuple[DataPipe, "DataPipeGraph"]]


def _stub_unpickler():
    return "STUB"


def _list_connected_datapipes(scan_obj: DataPipe, only_datapipe: bool, cache: set[int]):
    """The DataPipes that pickling ``scan_obj`` reaches first (not already in ``cache``).
    ``only_datapipe``: look only into attributes that are DataPipes or collections."""
    f = io.BytesIO()
    p = pickle.Pickler(f)  # lambdas fail here; dill loops forever on typing objects
    if dill_available():
        from dill import Pickler as dill_Pickler
        d = dill_Pickler(f)
    else:
        d = None
    captured_connections = []

    def getstate_hook(ori_state):
        state = None
        if isinstance(ori_state, dict):
            state = {k: v for k, v in ori_state.items()
                     if isinstance(v, (IterDataPipe, MapDataPipe, Collection))}
        elif isinstance(ori_state, (tuple, list)):
            state = [v for v in ori_state
                     if isinstance(v, (IterDataPipe, MapDataPipe, Collection))]
        elif isinstance(ori_state, (IterDataPipe, MapDataPipe, Collection)):
            state = ori_state
        return state

    def reduce_hook(obj):
        if obj == scan_obj or id(obj) in cache:
            raise NotImplementedError  # pickle it normally: descend into its state
        captured_connections.append(obj)
        cache.add(id(obj))  # once per level, however often it is referenced
        return _stub_unpickler, ()

    datapipe_classes = (IterDataPipe, MapDataPipe)
    try:
        for cls in datapipe_classes:
            cls.set_reduce_ex_hook(reduce_hook)
            if only_datapipe:
                cls.set_getstate_hook(getstate_hook)
        try:
            p.dump(scan_obj)
        except (pickle.PickleError, AttributeError, TypeError):
            if not dill_available():
                raise
            d.dump(scan_obj)
    finally:
        for cls in datapipe_classes:
            cls.set_reduce_ex_hook(None)
            if only_datapipe:
                cls.set_getstate_hook(None)
        if dill_available():
            from dill import extend as dill_extend
            dill_extend(False)  # undo dill's change to the standard pickler's dispatch table
    return captured_connections


def traverse_dps(datapipe: DataPipe) -> DataPipeGraph:
    """The graph ending at ``datapipe``, through attributes that are DataPipes or collections
    (list, tuple, set, dict): ``{id(dp): (dp, {id(input): (input, {...}), ...})}``."""
    return _traverse_helper(datapipe, only_datapipe=True, cache=set())


def traverse(datapipe: DataPipe, only_datapipe: bool | None = None) -> DataPipeGraph:
    """Deprecated: :func:`traverse_dps`; ``only_datapipe=False`` (the default) looks into
    every attribute."""
    msg = ("`traverse` function is deprecated and will be removed after 1.13. "
           "Please use `traverse_dps` instead.")
    if not only_datapipe:
        msg += " And, the behavior will be changed to the equivalent of `only_datapipe=True`."
    warnings.warn(msg, FutureWarning, stacklevel=2)
    if only_datapipe is None:
        only_datapipe = False
    return _traverse_helper(datapipe, only_datapipe, set())


def _traverse_helper(datapipe: DataPipe, only_datapipe: bool, cache: set[int]) -> DataPipeGraph:
    if not isinstance(datapipe, (IterDataPipe, MapDataPipe)):
        raise RuntimeError(
            f"Expected `IterDataPipe` or `MapDataPipe`, but {type(datapipe)} is found")
    dp_id = id(datapipe)
    if dp_id in cache:  # a cycle on this path
        return {}
    cache.add(dp_id)
    # copies: the cache guards one path, a DataPipe may appear on several
    items = _list_connected_datapipes(datapipe, only_datapipe, cache.copy())
    d: DataPipeGraph = {dp_id: (datapipe, {})}
    for item in items:
        d[dp_id][1].update(_traverse_helper(item, only_datapipe, cache.copy()))
    return d
