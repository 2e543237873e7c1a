"""The rest of ``torch.distributed``'s public API on ember: the exceptions, the debug level, the
availability queries, the stores' errors and queues and PrefixStore, group counting, subgroups
and split_group, objects point to point, the ``*_single`` collectives. In one process against
PyTorch; then one 2-rank run (tests/_distributed_api_worker.py) for what needs peers."""
import contextlib
import os
import warnings
from datetime import timedelta

import pytest

import ember
import ember.distributed as dist
from test_distributed import ROOT, launch, needs_mpi

WORKER = os.path.join(ROOT, "tests", "_distributed_api_worker.py")
ERRORS = ["DistError", "DistBackendError", "DistNetworkError", "DistStoreError",
          "QueueEmptyError"]


def _error(f):
    """``(exception type name, message)`` of calling ``f``, or ``("ok", result)``."""
    try:
        return "ok", f()
    except Exception as e:
        return type(e).__name__, str(e)


def test_exceptions_as_pytorch(torch):
    for name in ERRORS:
        ours, theirs = getattr(dist, name), getattr(torch.distributed, name)
        assert [c.__name__ for c in ours.__mro__] == [c.__name__ for c in theirs.__mro__]
        assert ours.__module__ == "ember.distributed"


def test_debug_level_as_pytorch(torch, monkeypatch):
    td = torch.distributed
    assert [m for m in dist.DebugLevel.__members__] == list(td.DebugLevel.__members__)
    assert [int(m) for m in dist.DebugLevel] == [0, 1, 2]
    assert repr(dist.DebugLevel.INFO) == repr(td.DebugLevel.INFO)
    assert str(dist.DebugLevel.DETAIL) == str(td.DebugLevel.DETAIL)
    try:
        for value in ["detail", "INFO", "off", "Info", "bogus", "", " INFO", None]:
            if value is None:
                monkeypatch.delenv("TORCH_DISTRIBUTED_DEBUG", raising=False)
            else:
                monkeypatch.setenv("TORCH_DISTRIBUTED_DEBUG", value)
            ours, theirs = _error(dist.set_debug_level_from_env), _error(
                td.set_debug_level_from_env)
            assert ours == theirs, value
            assert dist.get_debug_level().name == td.get_debug_level().name, value
        dist.set_debug_level(dist.DebugLevel.DETAIL)
        assert dist.get_debug_level() is dist.DebugLevel.DETAIL
        for bad in (1, "INFO"):
            with pytest.raises(TypeError, match="incompatible function arguments"):
                dist.set_debug_level(bad)
            with pytest.raises(TypeError, match="incompatible function arguments"):
                td.set_debug_level(bad)
    finally:
        dist.set_debug_level(dist.DebugLevel.OFF)
        td.set_debug_level(td.DebugLevel.OFF)


def test_availability_as_pytorch(torch, monkeypatch):
    td = torch.distributed
    assert dist.is_ucc_available() is td.is_ucc_available() is False
    assert dist.is_xccl_available() is td.is_xccl_available() is False
    for name in ["gloo", "GLOO", "ucc", "xccl", "undefined", "bogus", "cpu:gloo"]:
        assert dist.is_backend_available(name) == td.is_backend_available(name), name
    assert dist.is_backend_available("mpi") == dist.is_available()
    assert dist.is_backend_available("cpu:gloo,cuda:nccl") == dist.is_nccl_available()
    for device in ["cpu", "cuda:1", "meta", "cuda"]:
        ours = _error(lambda: dist.get_default_backend_for_device(device))
        assert ours == _error(lambda: td.get_default_backend_for_device(device)), device
    assert dist.get_default_backend_for_device(ember.device("cpu")) == "gloo"
    for op in ["SUM", "AVG", "PRODUCT", "MIN", "MAX", "BAND", "BOR", "BXOR", "PREMUL_SUM"]:
        ours = dist.supports_complex(getattr(dist.ReduceOp, op))
        assert ours == td.supports_complex(getattr(td.ReduceOp, op)), op
    monkeypatch.delenv("LOCAL_RANK", raising=False)
    assert _error(dist.get_node_local_rank) == _error(td.get_node_local_rank)
    assert dist.get_node_local_rank(fallback_rank=3) == 3
    monkeypatch.setenv("LOCAL_RANK", "2")
    assert dist.get_node_local_rank(fallback_rank=3) == td.get_node_local_rank(3) == 2


def test_hash_and_prefix_stores_as_pytorch(torch):
    td = torch.distributed
    stores = []
    for mod in (dist, td):
        h = mod.HashStore()
        h.set_timeout(timedelta(milliseconds=50))
        stores.append((mod, h, mod.PrefixStore("a", mod.PrefixStore("b", h))))
    for mod, h, p in stores:
        p.set("k", "v")
        assert h.get("b/a/k") == b"v" and p.get("k") == b"v" and p.check(["k"])
        assert p.add("n", 2) == 2 and h.get("b/a/n") == b"2"
        assert p.underlying_store.underlying_store is h
        p.set_timeout(timedelta(milliseconds=40))
        assert p.timeout == h.timeout == timedelta(milliseconds=40)
        p.queue_push("q", "x")
        p.queue_push("q", b"y")
        assert h.queue_len("b/a/q") == p.queue_len("q") == 2 and h.check(["b/a/q"])
        assert p.queue_pop("q") == b"x" and p.queue_pop("q", False) == b"y"
    (_, eh, ep), (_, th, tp) = stores
    for f in (lambda s: s.get("missing"), lambda s: s.wait(["k", "missing"]),
              lambda s: s.queue_pop("q"), lambda s: s.queue_pop("q", block=False)):
        assert _error(lambda: f(eh)) == _error(lambda: f(th))
        assert _error(lambda: f(ep)) == _error(lambda: f(tp))
    assert _error(lambda: dist.PrefixStore("p", None)) == _error(
        lambda: td.PrefixStore("p", None))
    with pytest.raises(dist.QueueEmptyError):
        ep.queue_pop("q", block=False)


def test_file_store_as_pytorch(torch, tmp_path):
    td = torch.distributed
    ours = dist.FileStore(str(tmp_path / "ours"), 1)
    theirs = td.FileStore(str(tmp_path / "theirs"), 1)
    for s in (ours, theirs):
        s.set_timeout(timedelta(milliseconds=50))
    # (PyTorch's FileStore takes a second to time out, whatever the timeout: its wait is
    # compared with the message it gives)
    for f in (lambda s: s.get("zz"), lambda s: s.queue_push("q", "v"),
              lambda s: s.queue_len("q")):
        assert _error(lambda: f(ours)) == _error(lambda: f(theirs))
    assert _error(lambda: ours.wait(["zz"])) == ("RuntimeError", "Wait timeout")


def test_tcp_store_errors_and_queues(torch):
    td = torch.distributed
    ours = dist.TCPStore("127.0.0.1", 0, 1, True, timeout=timedelta(milliseconds=100))
    theirs = td.TCPStore("127.0.0.1", 0, 1, True, timedelta(milliseconds=100))
    try:
        for s in (ours, theirs):
            s.set("a", "1")
            s.queue_push("q", "v")
            assert s.check(["q"]) and s.queue_len("q") == 1 and s.queue_pop("q") == b"v"
        for f in (lambda s: s.wait(["a", "b"]), lambda s: s.get("zz"),
                  lambda s: s.queue_pop("q"), lambda s: s.queue_pop("q", block=False)):
            assert _error(lambda: f(ours)) == _error(lambda: f(theirs))
        # the port is taken: PyTorch's (libuv) error
        with pytest.raises(dist.DistNetworkError,
                           match=f"The server socket has failed to listen on any local network "
                                 f"address. port: {ours.port}, useIpv6: false, code: -98, "
                                 f"name: EADDRINUSE, message: address already in use"):
            dist.TCPStore("127.0.0.1", ours.port, 1, True)
    finally:
        ours.close()
    # nobody listens any more
    with pytest.raises(dist.DistNetworkError,
                       match=rf"The client socket has timed out after 100ms while trying to "
                             rf"connect to \(127.0.0.1, {ours.port}\)."):
        dist.TCPStore("127.0.0.1", ours.port, 1, False, timeout=timedelta(milliseconds=100))


@needs_mpi
def test_groups_as_pytorch(worlds):
    td = worlds.distributed
    for mod in (dist, td):
        assert mod.get_pg_count() == 1
        g = mod.new_group([0])
        assert mod.get_pg_count() == 2 and g.group_name == "1" and g.group_desc == "undefined"
        assert mod.new_group([0], group_desc="d").group_desc == "d"
        local = mod.new_group([0], use_local_synchronization=True)
        assert mod.get_pg_count() == 3 and len(local.group_name) == 40  # a hashed name
        mod.destroy_process_group(g)
        assert mod.get_pg_count() == 3
        mine, every = mod.new_subgroups(1)
        assert every == [mine] and mod.get_process_group_ranks(mine) == [0]
        assert mod.group.WORLD.group_desc == "default_pg"
        assert mod.group.WORLD.bound_device_id is None
    for f in (lambda m: m.new_subgroups(), lambda m: m.new_subgroups(0),
              lambda m: m.new_subgroups(2), lambda m: m.new_subgroups_by_enumeration([]),
              lambda m: m.new_subgroups_by_enumeration([[0], [0]]),
              lambda m: m.new_group([0, 0]), lambda m: m.new_group([1]),
              lambda m: m.new_group([-1]), lambda m: m.new_group([0], backend="mpi",
                                                                 use_local_synchronization=True),
              lambda m: m.split_group(split_ranks=[[0]]), lambda m: m.split_group(),
              lambda m: m.get_pg_count()):
        assert _error(lambda: f(dist)) == _error(lambda: f(td))


@needs_mpi
def test_object_p2p_and_collective_errors_as_pytorch(worlds):
    td = worlds.distributed
    for f in (lambda m: m.send_object_list([1], 0), lambda m: m.send_object_list([1]),
              lambda m: m.recv_object_list([1]), lambda m: m.recv_object_list([1], 0),
              lambda m: m.recv_object_list([1], 0, group_src=0),
              lambda m: m.send_object_list([1], 0, group_dst=0)):
        assert _error(lambda: f(dist)) == _error(lambda: f(td))
    for lib, mod in ((ember, dist), (worlds, td)):
        t = lib.ones(2, dtype=lib.complex64)
        assert _error(lambda: mod.all_reduce(t, op=mod.ReduceOp.MAX)) == (
            "ValueError", "all_reduce does not support RedOpType.MAX on complex tensors")
        mod.all_reduce(t)
        out = lib.empty(3)
        mod.all_gather_single(out, lib.arange(3.0))
        assert out.tolist() == [0.0, 1.0, 2.0]
        out = lib.empty(3)
        mod.reduce_scatter_single(out, lib.arange(3.0))
        assert out.tolist() == [0.0, 1.0, 2.0]
    for name, new in (("all_gather_into_tensor", "all_gather_single"),
                      ("reduce_scatter_tensor", "reduce_scatter_single")):
        messages = []
        for lib, mod in ((ember, dist), (worlds, td)):
            with warnings.catch_warnings(record=True) as w:
                warnings.simplefilter("always")
                getattr(mod, name)(lib.empty(2), lib.ones(2))
            assert w[0].category is FutureWarning
            assert mod is td or w[0].filename == __file__  # the caller's line
            messages.append(str(w[0].message))
        assert messages[0] == messages[1] == (f"`torch.distributed.{name}` is deprecated. Please "
                                              f"use `torch.distributed.{new}` instead.")


@needs_mpi
def test_device_id_and_split_group(monkeypatch):
    from helpers import real_gpu, simulated_cuda
    for k, v in {"RANK": "0", "WORLD_SIZE": "1"}.items():
        monkeypatch.setenv(k, v)
    with contextlib.nullcontext() if real_gpu() else simulated_cuda():
        for bad, msg in ((ember.device("cpu"), "must be an accelerator with an index"),
                         (ember.device("cuda"), "Please use a device_id with index."),
                         (ember.device("cuda", 7), "device_id cuda:7 is out of range")):
            with pytest.raises(ValueError, match=msg):
                dist.init_process_group("gloo", device_id=bad)
        dist.init_process_group("gloo", device_id=0)
        try:
            world = dist.group.WORLD
            assert world.bound_device_id == ember.device("cuda", 0)
            assert dist.new_group([0]).bound_device_id == world.bound_device_id
            count = dist.get_pg_count()
            pg = dist.split_group(split_ranks=[[0]])
            assert dist.get_process_group_ranks(pg) == [0] and dist.get_pg_count() == count
            assert pg.bound_device_id == world.bound_device_id and pg.group_desc == "undefined"
            t = ember.arange(3.0, device="cuda")
            dist.all_reduce(t, group=pg)
            assert t.tolist() == [0.0, 1.0, 2.0]
            assert dist.split_group(pg, [[0]], group_desc="again").group_desc == "again"
            with pytest.raises(ValueError, match="Backend mismatch for device 'cpu': parent "
                                                 "has 'gloo', requested 'mpi'"):
                dist.split_group(split_ranks=[[0]], backend="cpu:mpi")
            for bad, msg in (([[]], "the split group cannot be empty"),
                             ([[0, 0]], "the split group's size should be less or equal")):
                with pytest.raises(ValueError, match=msg):
                    dist.split_group(split_ranks=bad)
            mpi = dist.new_group([0], backend="mpi")
            with pytest.raises(RuntimeError, match="its backend does not support splitting"):
                dist.split_group(mpi, [[0]])
        finally:
            dist.destroy_process_group()


@needs_mpi
def test_two_ranks():
    from helpers import real_gpu
    p, _ = launch(2, "api", worker=WORKER,
                  env={} if real_gpu() else {"EMBER_CUDA_SIMULATE": "1"})
    out = p.stdout + p.stderr
    assert p.returncode == 0 and "PASS 0" in out and "PASS 1" in out, out


def test_deprecated_reduce_op_as_pytorch(worlds):
    td = worlds.distributed
    for mod in (dist, td):
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            assert mod.reduce_op.SUM == mod.ReduceOp.SUM
        assert [(x.category, str(x.message)) for x in w] == [
            (FutureWarning, "`torch.distributed.reduce_op` is deprecated, please use "
                            "`torch.distributed.ReduceOp` instead")]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert list(dist.reduce_op.__members__) == list(td.reduce_op.__members__)
        assert list(dist.ReduceOp.RedOpType.__members__) == list(
            td.ReduceOp.RedOpType.__members__)
