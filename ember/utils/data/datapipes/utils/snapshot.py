"""Restoring an IterDataPipe graph to a point of its iteration the simple way: reset, reseed
from the RNG first given to the DataLoader, and read the samples again."""
from ...graph_settings import apply_random_seed
from .._hook_iterator import _SnapshotState
from ..datapipe import IterDataPipe


def _simple_graph_snapshot_restoration(datapipe: IterDataPipe, n_iterations: int, rng=None):
    """Fast-forward ``datapipe`` (and so its graph) by ``n_iterations`` samples, e.g. its
    ``_number_of_samples_yielded`` after unpickling; its next iterator continues from there.
    ``rng``: the ``Generator`` in the state it was first handed to the DataLoader. A graph
    cannot be restored twice without iterating in between."""
    if datapipe._snapshot_state == _SnapshotState.Restored:
        raise RuntimeError(
            "Snapshot restoration cannot be applied. You can only restore simple snapshot to "
            "the graph if your graph has not been restored.")
    # a first reset() leaves Restored for Iterating, so that iter() below really resets
    datapipe.reset()
    apply_random_seed(datapipe, rng)
    remainder = n_iterations
    it = iter(datapipe)
    while remainder > 0:
        try:
            next(it)
            remainder -= 1
        except StopIteration as e:
            raise RuntimeError(f"Fast-forward {datapipe} by {n_iterations} iterations "
                               "exceeds the number of samples available.") from e
    # the next iter() hands out this iterator instead of resetting
    datapipe._fast_forward_iterator = it
    datapipe._snapshot_state = _SnapshotState.Restored
