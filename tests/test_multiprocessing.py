"""ember.multiprocessing: PyTorch's launcher (spawn, start_processes, the errors a failed child
raises in the parent) and tensors in shared memory across a fork (share_memory_, Hogwild)."""
import multiprocessing
import os

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
