"""ember.utils.data against PyTorch: sampler and batch ordering, default_collate rules,
datasets, argument errors, and worker processes (seeding, worker_init_fn, iterable sharding,
persistent workers)."""
import collections

import numpy as np
import pytest

import ember
from ember.utils.data import (BatchSampler, ConcatDataset, DataLoader, Dataset,
                              IterableDataset, SequentialSampler, Subset, TensorDataset,
                              default_collate, get_worker_info, random_split)
from helpers import to_np

needs_randperm = pytest.mark.skipif(not hasattr(ember, "randperm"),
                                    reason="missing ops: randperm")
needs_stack = pytest.mark.skipif(not hasattr(ember, "stack"), reason="missing ops: stack")


def as_py(x):
    """Batches as plain Python (tensors -> nested lists), for comparing with PyTorch."""
    if hasattr(x, "tolist"):
        return x.tolist()
    if isinstance(x, dict):
        return {k: as_py(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return type(x)(as_py(v) for v in x) if not hasattr(x, "_fields") else \
            tuple(as_py(v) for v in x)
    return x


def test_batching_order_matches_torch(torch):
    data = list(range(10))
    for kw in (dict(batch_size=3), dict(batch_size=3, drop_last=True), dict(batch_size=None),
               dict(batch_sampler=[[3, 1], [0], [9, 8, 7]]),
               dict(sampler=[5, 4, 3, 2], batch_size=2)):
        e = [as_py(b) for b in DataLoader(data, **kw)]
        t = [as_py(b) for b in torch.utils.data.DataLoader(data, **kw)]
        assert e == t, kw
        assert len(DataLoader(data, **kw)) == len(torch.utils.data.DataLoader(data, **kw))


def test_batch_sampler_matches_torch(torch):
    for bs, dl in [(3, False), (3, True), (5, False)]:
        e = list(BatchSampler(SequentialSampler(range(11)), bs, dl))
        t = list(torch.utils.data.BatchSampler(torch.utils.data.SequentialSampler(range(11)),
                                               bs, dl))
        assert e == t
        assert len(BatchSampler(range(11), bs, dl)) == len(t)
    with pytest.raises(ValueError, match="batch_size should be a positive integer value"):
        BatchSampler(range(3), 0, False)


def test_default_collate_rules_match_torch(torch):
    Point = collections.namedtuple("Point", ["x", "y"])
    cases = [
        [1, 2, 3],
        [1.5, 2.5],
        [True, False],
        ["a", "b"],
        [{"a": 1, "b": 2.0}, {"a": 3, "b": 4.0}],
        [(1, 2.0), (3, 4.0)],
        [[1, 2], [3, 4]],
        [Point(1, 2.0), Point(3, 4.0)],
        [np.float64(1.0), np.float64(2.0)],
    ]
    if hasattr(ember, "stack"):
        cases += [[np.arange(3, dtype=np.int32), np.arange(3, dtype=np.int32)],
                  [{"t": np.ones(2, np.float32)}, {"t": np.zeros(2, np.float32)}]]
    for batch in cases:
        e = default_collate(batch)
        t = torch.utils.data.default_collate(batch)
        assert type(e).__name__ == type(t).__name__
        assert as_py(e) == as_py(t)
        if hasattr(t, "dtype"):
            assert str(e.dtype).split(".")[-1] == str(t.dtype).split(".")[-1]
    with pytest.raises(TypeError) as te:
        torch.utils.data.default_collate([object()])
    with pytest.raises(TypeError) as ee:
        default_collate([object()])
    assert str(ee.value).split(";")[0] == str(te.value).split(";")[0]
    with pytest.raises(RuntimeError, match="each element in list of batch should be of equal"):
        default_collate([[1, 2], [3]])


@needs_stack
def test_tensor_dataset_batches_match_torch(torch):
    x = np.arange(20, dtype=np.float32).reshape(10, 2)
    y = np.arange(10)
    e = [as_py(b) for b in DataLoader(TensorDataset(ember.tensor(x), ember.tensor(y)),
                                      batch_size=4)]
    t = [as_py(b) for b in torch.utils.data.DataLoader(
        torch.utils.data.TensorDataset(torch.tensor(x), torch.tensor(y)), batch_size=4)]
    assert e == t


def test_datasets():
    ds = TensorDataset(ember.arange(6), ember.arange(6) * 2)
    assert len(ds) == 6 and [int(v) for v in ds[2]] == [2, 4]
    with pytest.raises(AssertionError, match="Size mismatch between tensors"):
        TensorDataset(ember.ones(2), ember.ones(3))
    c = ConcatDataset([list(range(3)), list(range(10, 12))])
    assert len(c) == 5 and c[3] == 10 and c[-1] == 11
    c2 = Subset(list(range(10, 20)), [1, 3]) + Subset(list(range(5)), [4])
    assert [c2[i] for i in range(len(c2))] == [11, 13, 4]


@needs_randperm
def test_shuffle_is_reproducible_with_generator():
    def order(seed):
        g = ember.Generator().manual_seed(seed)
        return [b.tolist() for b in DataLoader(list(range(20)), batch_size=5, shuffle=True,
                                               generator=g)]
    a, b, c = order(0), order(0), order(1)
    assert a == b and a != c
    assert sorted(sum(a, [])) == list(range(20))


@needs_randperm
def test_random_split():
    g = ember.Generator().manual_seed(0)
    parts = random_split(range(10), [0.3, 0.7], generator=g)
    assert [len(p) for p in parts] == [3, 7]
    assert sorted(list(parts[0]) + list(parts[1])) == list(range(10))
    with pytest.raises(ValueError, match="Sum of input lengths does not equal"):
        random_split(range(10), [3, 3])


def test_argument_errors_match_torch(torch):
    class It(IterableDataset):
        def __iter__(self):
            return iter(range(3))
    cases = [
        dict(batch_sampler=[[0]], batch_size=2),
        dict(sampler=[0], shuffle=True),
        dict(batch_size=None, drop_last=True),
        dict(num_workers=-1),
        dict(persistent_workers=True),
        dict(prefetch_factor=2),
    ]
    for kw in cases:
        with pytest.raises(ValueError) as te:
            torch.utils.data.DataLoader(list(range(3)), **kw)
        with pytest.raises(ValueError) as ee:
            DataLoader(list(range(3)), **kw)
        assert str(ee.value) == str(te.value)
    with pytest.raises(ValueError, match="expected unspecified shuffle option"):
        DataLoader(It(), shuffle=True)


class Squares(Dataset):
    def __len__(self):
        return 12

    def __getitem__(self, i):
        info = get_worker_info()
        return {"i": i, "sq": i * i, "worker": -1 if info is None else info.id}


def test_workers_preserve_order_and_run_in_processes():
    e = list(DataLoader(Squares(), batch_size=2, num_workers=3))
    assert [b["i"].tolist() for b in e] == [[2 * k, 2 * k + 1] for k in range(6)]
    assert [b["sq"].tolist() for b in e] == [[(2 * k) ** 2, (2 * k + 1) ** 2] for k in range(6)]
    # Round-robin assignment: batch k goes to worker k % 3.
    assert [b["worker"].tolist()[0] for b in e] == [0, 1, 2, 0, 1, 2]
    single = list(DataLoader(Squares(), batch_size=2))
    assert all(b["worker"].tolist() == [-1, -1] for b in single)


def _init(worker_id):
    import random
    random.seed(1000 + worker_id)


class Seeds(Dataset):
    def __len__(self):
        return 4

    def __getitem__(self, i):
        import random
        info = get_worker_info()
        return [info.seed, random.random()]


def test_worker_seeding_and_init_fn():
    g = ember.Generator().manual_seed(7)
    a = [as_py(b) for b in DataLoader(Seeds(), batch_size=1, num_workers=2, generator=g,
                                      worker_init_fn=_init)]
    g.manual_seed(7)
    b = [as_py(b) for b in DataLoader(Seeds(), batch_size=1, num_workers=2, generator=g,
                                      worker_init_fn=_init)]
    assert a == b
    seeds = [x[0][0] for x in a]
    assert seeds[1] == seeds[0] + 1  # worker i gets base_seed + i


class Shards(IterableDataset):
    def __iter__(self):
        info = get_worker_info()
        if info is None:
            return iter(range(10))
        return iter(range(info.id, 10, info.num_workers))


def test_iterable_dataset_with_workers_matches_torch(torch):
    class TShards(torch.utils.data.IterableDataset):
        def __iter__(self):
            info = torch.utils.data.get_worker_info()
            return iter(range(info.id, 10, info.num_workers))
    e = [as_py(b) for b in DataLoader(Shards(), batch_size=2, num_workers=2)]
    t = [as_py(b) for b in torch.utils.data.DataLoader(TShards(), batch_size=2, num_workers=2)]
    assert e == t
    assert [as_py(b) for b in DataLoader(Shards(), batch_size=3)] == [[0, 1, 2], [3, 4, 5],
                                                                     [6, 7, 8], [9]]


def test_persistent_workers_reuse_processes():
    dl = DataLoader(list(range(6)), batch_size=2, num_workers=2, persistent_workers=True,
                    prefetch_factor=1, pin_memory=True)
    first = [b.tolist() for b in dl]
    it = dl._iterator
    pids = [w.pid for w in it._workers]
    second = [b.tolist() for b in dl]
    assert first == second == [[0, 1], [2, 3], [4, 5]]
    assert [w.pid for w in dl._iterator._workers] == pids and all(
        w.is_alive() for w in dl._iterator._workers)
    dl._iterator._shutdown_workers()


class Broken(Dataset):
    def __len__(self):
        return 4

    def __getitem__(self, i):
        if i == 2:
            raise KeyError("bad index")
        return i


def test_worker_exception_is_reraised():
    with pytest.raises(KeyError, match="Caught KeyError in DataLoader worker process"):
        list(DataLoader(Broken(), batch_size=1, num_workers=2))


def test_tensor_samples_cross_process_boundary():
    ds = [ember.tensor([float(i), float(i) + 0.5]) for i in range(4)]
    got = list(DataLoader(ds, batch_size=None, num_workers=2))
    assert [to_np(t).tolist() for t in got] == [[i, i + 0.5] for i in range(4)]


class _SlowFirst(ember.utils.data.Dataset):
    """Item 0 takes a while: with two workers, batch 1 is ready before batch 0."""

    def __len__(self):
        return 4

    def __getitem__(self, i):
        if i == 0:
            import time
            time.sleep(0.5)
        return i


def test_in_order_false_yields_batches_as_they_arrive():
    kw = dict(batch_size=1, num_workers=2, multiprocessing_context="fork")
    ordered = [int(b) for b in ember.utils.data.DataLoader(_SlowFirst(), **kw)]
    assert ordered == [0, 1, 2, 3]
    arrived = [int(b) for b in ember.utils.data.DataLoader(_SlowFirst(), in_order=False, **kw)]
    assert sorted(arrived) == [0, 1, 2, 3] and arrived[0] != 0
