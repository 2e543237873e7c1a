"""Settings applied across a DataPipe graph (found with ``graph.traverse_dps``): sharding
(``apply_sharding`` on each ``sharding_filter``), shuffling on/off (``apply_shuffle_settings``)
and seeds (``apply_random_seed``: one draw from a generator per datapipe with ``set_seed``)."""
import inspect
import warnings
from typing import Any

from .datapipes.iter.sharding import SHARDING_PRIORITIES, _ShardingIterDataPipe
from .graph import DataPipe, DataPipeGraph, traverse_dps

__all__ = ["apply_random_seed", "apply_sharding", "apply_shuffle_seed",
           "apply_shuffle_settings", "get_all_graph_pipes"]


def get_all_graph_pipes(graph: DataPipeGraph) -> list[DataPipe]:
    """Every DataPipe of ``graph`` once, depth first."""
    return _get_all_graph_pipes_helper(graph, set())


def _get_all_graph_pipes_helper(graph: DataPipeGraph, id_cache: set[int]) -> list[DataPipe]:
    results: list[DataPipe] = []
    for dp_id, (datapipe, sub_graph) in graph.items():
        if dp_id in id_cache:
            continue
        id_cache.add(dp_id)
        results.append(datapipe)
        results.extend(_get_all_graph_pipes_helper(sub_graph, id_cache))
    return results


def _is_sharding_datapipe(datapipe: DataPipe) -> bool:
    return isinstance(datapipe, _ShardingIterDataPipe) or (
        hasattr(datapipe, "apply_sharding") and inspect.ismethod(datapipe.apply_sharding))


def apply_sharding(datapipe: DataPipe, num_of_instances: int, instance_id: int,
                   sharding_group=SHARDING_PRIORITIES.DEFAULT) -> DataPipe:
    """Call ``apply_sharding`` on the graph's sharding datapipes; ``RuntimeError`` if one
    branch has two (sharding twice loses data)."""
    graph = traverse_dps(datapipe)

    def _helper(graph, prev_applied=None):
        for dp, sub_graph in graph.values():
            applied = None
            if _is_sharding_datapipe(dp):
                if prev_applied is not None:
                    raise RuntimeError(
                        "Sharding twice on a single pipeline is likely unintended and will "
                        f"cause data loss. Sharding already applied to {prev_applied} while "
                        f"trying to apply to {dp}")
                # (older apply_sharding methods take no sharding_group)
                if len(inspect.signature(dp.apply_sharding).parameters) < 3:
                    dp.apply_sharding(num_of_instances, instance_id)
                else:
                    dp.apply_sharding(num_of_instances, instance_id,
                                      sharding_group=sharding_group)
                applied = dp
            _helper(sub_graph, applied if applied is not None else prev_applied)

    _helper(graph)
    return datapipe


def _is_shuffle_datapipe(datapipe: DataPipe) -> bool:
    return (hasattr(datapipe, "set_shuffle") and hasattr(datapipe, "set_seed")
            and inspect.ismethod(datapipe.set_shuffle) and inspect.ismethod(datapipe.set_seed))


def apply_shuffle_settings(datapipe: DataPipe, shuffle: bool | None = None) -> DataPipe:
    """``set_shuffle(shuffle)`` on each datapipe of the graph that has ``set_shuffle`` and
    ``set_seed``; ``None`` changes nothing. ``shuffle=True`` without one appends a
    ``.shuffle()`` (with a warning) and returns it."""
    if shuffle is None:
        return datapipe
    shufflers = [pipe for pipe in get_all_graph_pipes(traverse_dps(datapipe))
                 if _is_shuffle_datapipe(pipe)]
    if not shufflers and shuffle:
        warnings.warn(
            "`shuffle=True` was set, but the datapipe does not contain a `Shuffler`. Adding one "
            "at the end. Be aware that the default buffer size might not be sufficient for your "
            "task.", stacklevel=2)
        datapipe = datapipe.shuffle()
        shufflers = [datapipe]
    for shuffler in shufflers:
        shuffler.set_shuffle(shuffle)
    return datapipe


def apply_shuffle_seed(datapipe: DataPipe, rng: Any) -> DataPipe:
    """Deprecated: :func:`apply_random_seed`."""
    warnings.warn("`apply_shuffle_seed` is deprecated since 1.12 and will be removed in the "
                  "future releases. Please use `apply_random_seed` instead.", FutureWarning,
                  stacklevel=2)
    return apply_random_seed(datapipe, rng)


def _is_random_datapipe(datapipe: DataPipe) -> bool:
    return hasattr(datapipe, "set_seed") and inspect.ismethod(datapipe.set_seed)


def apply_random_seed(datapipe: DataPipe, rng) -> DataPipe:
    """``set_seed`` on each datapipe of the graph that has it, with one int64 drawn from the
    ``Generator`` ``rng`` for each, in graph order."""
    from ... import empty, int64
    cache = set()
    random_datapipes = []
    for pipe in get_all_graph_pipes(traverse_dps(datapipe)):
        if id(pipe) not in cache and _is_random_datapipe(pipe):
            random_datapipes.append(pipe)
            cache.add(id(pipe))
    for pipe in random_datapipes:
        pipe.set_seed(int(empty((), dtype=int64).random_(generator=rng).item()))
    return datapipe
