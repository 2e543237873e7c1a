"""ember.multiprocessing: PyTorch's launcher (spawn, start_processes, the errors a failed child
raises in the parent) and tensors in shared memory across a fork (share_memory_, Hogwild) and
sent by handle under both sharing strategies (a Queue, a spawned Process's arguments)."""
import gc
import multiprocessing
import os
from multiprocessing.reduction import ForkingPickler

import pytest

import ember
import ember.multiprocessing as mp


def _record(i, folder, scale):
    """A child: writes what it computed with ember to a file of its own."""
    with open(os.path.join(folder, f"{i}.txt"), "w") as f:
        f.write(str(float(ember.arange(float(i + 1)).sum()) * scale))


def _fail(i):
    if i == 1:
        raise ValueError("bad shard 1")


def _exit(i, code):
    os._exit(code)


def test_spawn_runs_each_index_in_a_process_of_its_own(tmp_path):
    assert mp.spawn(_record, args=(str(tmp_path), 10.0), nprocs=2) is None
    assert sorted(os.listdir(tmp_path)) == ["0.txt", "1.txt"]
    assert [(tmp_path / f"{i}.txt").read_text() for i in range(2)] == ["0.0", "10.0"]
    context = mp.start_processes(_record, args=(str(tmp_path), 2.0), nprocs=1, join=False,
                                 start_method="fork")
    assert isinstance(context, mp.ProcessContext) and len(context.pids()) == 1
    while not context.join():
        pass
    assert (tmp_path / "0.txt").read_text() == "0.0"


def test_a_failed_child_is_raised_in_the_parent():
    with pytest.raises(mp.ProcessRaisedException) as err:
        mp.start_processes(_fail, nprocs=2, start_method="fork")
    assert err.value.error_index == 1
    assert "-- Process 1 terminated with the following error:" in str(err.value)
    assert "ValueError: bad shard 1" in str(err.value)
    with pytest.raises(mp.ProcessExitedException, match="process 0 terminated with exit code 3"):
        mp.start_processes(_exit, args=(3,), nprocs=1, start_method="fork")
    with pytest.warns(FutureWarning, match="only supports start_method=spawn"):
        with pytest.raises(mp.ProcessExitedException) as exited:
            mp.spawn(_exit, args=(5,), nprocs=1, start_method="fork")
    assert exited.value.exit_code == 5


def test_pythons_multiprocessing_and_pytorchs_strategies_are_there(torch):
    import torch.multiprocessing as tmp
    assert mp.__all__ == tmp.__all__
    assert mp.Queue is multiprocessing.Queue and ember.multiprocessing is mp
    assert (mp.get_sharing_strategy(), mp.get_all_sharing_strategies()) == \
        (tmp.get_sharing_strategy(), tmp.get_all_sharing_strategies())
    mp.set_sharing_strategy("file_system")
    try:
        assert mp.get_sharing_strategy() == "file_system"
        with pytest.raises(AssertionError, match="Invalid sharing strategy: shm"):
            mp.set_sharing_strategy("shm")
    finally:
        mp.set_sharing_strategy("file_descriptor")


def test_shared_parameters_are_one_memory_across_a_fork(torch):
    """Hogwild: the model's parameters moved to shared memory (Module.share_memory); a forked
    child's SGD step changes the parent's parameters. Views follow their storage; a shared
    storage is not resizable, as PyTorch's."""
    model = ember.nn.Linear(3, 2)
    view = model.weight.detach()[0]
    view.sum()  # (its cached array: share_memory_ must move it too)
    assert not model.weight.is_shared()
    assert model.share_memory() is model
    assert all(p.is_shared() for p in model.parameters()) and view.is_shared()
    before = model.weight.detach().clone()
    x = ember.ones(4, 3)

    def train():
        opt = ember.optim.SGD(model.parameters(), lr=0.5)
        model(x).sum().backward()
        opt.step()
    child = multiprocessing.get_context("fork").Process(target=train)
    child.start()
    child.join(120)
    if child.is_alive():  # (a hang must fail the test, not stall the run)
        child.kill()
    assert child.exitcode == 0
    assert ember.allclose(model.weight.detach(), before - 0.5 * 4)  # d(sum)/dW = 4 per entry
    assert ember.equal(view, model.weight.detach()[0])
    with pytest.raises(RuntimeError, match="Trying to resize storage that is not resizable"):
        model.weight.untyped_storage().resize_(100)
    t = torch.zeros(2)
    assert t.share_memory_() is t and t.is_shared()
    assert ember.zeros(2).share_memory_().is_shared() and not ember.zeros(2).is_shared()


@pytest.fixture(params=["file_descriptor", "file_system"])
def strategy(request):
    mp.set_sharing_strategy(request.param)
    yield request.param
    mp.set_sharing_strategy("file_descriptor")


def _shm_files():
    return {f for f in os.listdir("/dev/shm") if f.startswith("ember_")}


def test_a_pickled_storage_is_sent_by_its_handle(torch, strategy):
    """As PyTorch's reduce_storage: the storage moves into shared memory (not resizable any
    more), the handle of the strategy travels, and a storage received where it is known (here:
    the sender) is that storage (shared_cache). An empty storage travels as its class."""
    import torch.multiprocessing as tmp
    tmp.set_sharing_strategy(strategy)
    try:
        mine = ember.arange(6.0)
        theirs = torch.arange(6.0)
        received = {}
        for t, lib in ((mine, ember), (theirs, torch)):
            assert not t.is_shared()
            back = received[lib] = ForkingPickler.loads(ForkingPickler.dumps((t[1:], t)))
            assert t.is_shared() and back[1].is_shared()
            assert back[1].data_ptr() == t.data_ptr() and back[0].data_ptr() == t[1:].data_ptr()
            assert back[0].untyped_storage().data_ptr() == t.untyped_storage().data_ptr()
            empty = ForkingPickler.loads(ForkingPickler.dumps(lib.empty(0)))
            assert empty.shape == (0,) and empty.dtype == lib.float32
            fresh = lib.UntypedStorage._new_shared(8)
            assert fresh.is_shared() and fresh.nbytes() == 8 and fresh.tolist() == [0] * 8
        assert received[ember][1].untyped_storage() is mine.untyped_storage()
        # (tensors that cached an array over the memory before it moved write where it went now:
        # a tensor of its own storage, and a view of another tensor's)
        alone, base = ember.arange(4.0), ember.arange(4.0)
        view = base[1:]
        alone.add_(1), view.add_(1)
        got_alone, got_base = ForkingPickler.loads(ForkingPickler.dumps((alone, base)))
        alone.add_(1), view.add_(1)
        assert got_alone.tolist() == [2.0, 3.0, 4.0, 5.0]
        assert got_base.tolist() == [0.0, 3.0, 4.0, 5.0]
        handle = (mine.untyped_storage()._share_filename_cpu_() if strategy == "file_system"
                  else mine.untyped_storage()._share_fd_cpu_())
        assert handle[-1] == 24 == theirs.untyped_storage().nbytes()
        with pytest.raises(RuntimeError, match="Trying to resize storage that is not resizable"):
            mine.untyped_storage().resize_(100)
    finally:
        tmp.set_sharing_strategy("file_descriptor")


def test_a_received_storage_is_the_same_memory_and_its_file_goes_with_it(strategy):
    """Mapped in again (as a receiving process does), the memory is one; file_system's
    /dev/shm file is unlinked when its last user is gone."""
    before = _shm_files()
    t = ember.zeros(3).share_memory_()
    storage = t.untyped_storage()
    if strategy == "file_system":
        _, name, size = storage._share_filename_cpu_()
        other = ember.UntypedStorage._new_shared_filename_cpu(None, name, size)
        assert _shm_files() - before == {name.decode()[1:]}
    else:
        fd, size = storage._share_fd_cpu_()
        other = ember.UntypedStorage._new_shared_fd_cpu(fd, size)
        os.fstat(fd)  # (still open: the new storage holds a duplicate)
    assert other is not storage and other.is_shared() and not other.resizable()
    view = ember.empty(0).set_(other, 1, (2,), (1,))
    view.fill_(5.0)
    assert t.tolist() == [0.0, 5.0, 5.0]
    del t, storage, view, other
    gc.collect()
    assert _shm_files() == before


def _fill_from_queue(q, done):
    for _ in range(2):
        tensors = q.get()
        for x in tensors:
            x.add_(1)
    done.put(True)


def test_a_forked_child_writes_what_it_gets_through_a_queue(strategy):
    """Tensors that were not shared before they were put on the queue (and so were not there
    at the fork): their storage goes to shared memory as it is pickled."""
    ctx = multiprocessing.get_context("fork")
    q, done = ctx.Queue(), ctx.Queue()
    child = ctx.Process(target=_fill_from_queue, args=(q, done))
    child.start()
    base = ember.zeros(4)
    q.put((base[:2], base[1:]))
    q.put((base[3:],))
    assert done.get(timeout=60)
    child.join(60)
    assert child.exitcode == 0
    assert base.tolist() == [1.0, 2.0, 1.0, 2.0]


def _write_spawned(q, args_tensor, done):
    for _ in range(2):  # one message per strategy
        base, view = q.get()
        assert view.untyped_storage() is base.untyped_storage()
        view.fill_(7.0)
        base[0] = 3.0
    args_tensor.mul_(2)
    done.put(True)


def test_a_spawned_child_writes_what_it_gets_through_args_and_a_queue():
    """Under spawn nothing is inherited: each storage arrives as its handle (a descriptor sent
    through the sender's resource sharer, a /dev/shm name) and the child's writes are the
    parent's data. The arguments go by name, then one message per sharing strategy; the
    files are gone once both processes let go of them."""
    before = _shm_files()
    ctx = multiprocessing.get_context("spawn")
    # (a SimpleQueue pickles in put, under the strategy of the moment; a Queue's thread later)
    q, done = ctx.SimpleQueue(), ctx.Queue()
    weights = ember.ones(3)
    sent = []
    mp.set_sharing_strategy("file_system")
    try:
        child = ctx.Process(target=_write_spawned, args=(q, weights, done))
        child.start()
        for name in ("file_descriptor", "file_system"):
            mp.set_sharing_strategy(name)
            base = ember.zeros(4)
            q.put((base, base[2:]))
            sent.append(base)
        assert done.get(timeout=120)
    finally:
        mp.set_sharing_strategy("file_descriptor")
        child.join(120)
        if child.is_alive():
            child.kill()
    assert child.exitcode == 0
    assert [b.tolist() for b in sent] == [[3.0, 0.0, 7.0, 7.0]] * 2
    assert weights.tolist() == [2.0, 2.0, 2.0]
    assert len(_shm_files() - before) == 2
    del weights, sent, base
    gc.collect()
    assert _shm_files() == before


def _hogwild(rank, model, steps):
    x = ember.ones(4, 3)
    opt = ember.optim.SGD(model.parameters(), lr=0.25)
    for _ in range(steps):
        opt.zero_grad()
        model(x).sum().backward()
        opt.step()


def test_hogwild_workers_train_the_parents_model():
    """PyTorch's mnist_hogwild: a shared model given to spawned workers, each running SGD on
    it. The gradient of the sum is 4 for every entry, so each step takes 1.0 off each
    parameter; lock-free updates may lose some of the other worker's, never a worker's own."""
    model = ember.nn.Linear(3, 2)
    with ember.no_grad():
        for p in model.parameters():
            p.zero_()  # (whole steps from zero: exact)
    model.share_memory()
    steps = 3
    mp.spawn(_hogwild, args=(model, steps), nprocs=2)
    taken = (-model.weight.detach()).flatten().tolist() + (-model.bias.detach()).tolist()
    assert all(v == int(v) and steps <= v <= 2 * steps for v in taken), taken


class _Squares(ember.utils.data.Dataset):
    def __len__(self):
        return 7

    def __getitem__(self, i):
        return ember.tensor([float(i * i), 1.0]), i


def test_dataloader_workers_send_shared_batches(torch, strategy):
    """Batches from the workers arrive in shared memory (PyTorch's too) and are those of the
    main process."""
    from ember.utils.data import DataLoader
    serial = list(DataLoader(_Squares(), batch_size=2))
    workers = list(DataLoader(_Squares(), batch_size=2, num_workers=2))
    assert len(serial) == len(workers) == 4
    for (x0, i0), (x1, i1) in zip(serial, workers):
        assert ember.equal(x0, x1) and ember.equal(i0, i1)
        assert x1.is_shared() and not x0.is_shared()
    tbatch = next(iter(torch.utils.data.DataLoader(torch.arange(4.0), batch_size=2,
                                                   num_workers=2)))
    assert tbatch.is_shared()
