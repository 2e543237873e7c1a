"""The program that tests/test_distributed_api.py runs on 2 ranks through
``python -m ember.distributed.run``: objects point to point, subgroups, the ``*_single``
collectives, split_group (on the simulated CUDA device the launch gives each rank, or a real
one) and a PrefixStore over the job's TCPStore, each checked against what every rank knows.
Prints ``PASS <rank>``."""
import os
import sys
import warnings

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import ember as torch  # noqa: E402
import ember.distributed as dist  # noqa: E402


def check_objects(rank):
    sent = [{"from": 0}, "x" * 1000, None, torch.arange(3)]
    got = [object()] * len(sent)
    if rank == 0:
        dist.send_object_list(sent, dst=1)
        dist.send_object_list(sent[:2], group_dst=1, use_batch=True)
    else:
        assert dist.recv_object_list(got, src=0) == 0
        assert got[:3] == sent[:3] and got[3].tolist() == [0, 1, 2], got
        got = [None, None]
        assert dist.recv_object_list(got, group_src=0, use_batch=True) == 0
        assert got == sent[:2], got
    # on a group whose rank order is not the global one: group_dst names a rank of the group
    g = dist.new_group([1, 0], sort_ranks=False)
    assert dist.get_process_group_ranks(g) == [1, 0] and dist.get_rank(g) == 1 - rank
    if rank == 1:
        dist.send_object_list([("hi", rank)], group=g, group_dst=1)
    else:
        box = [None]
        assert dist.recv_object_list(box, group=g, group_src=0) == 1
        assert box == [("hi", 1)], box


def check_subgroups(rank):
    count = dist.get_pg_count()
    mine, every = dist.new_subgroups(1)
    assert len(every) == 2 and mine is every[rank]
    assert dist.get_process_group_ranks(mine) == [rank]
    t = torch.full((2,), float(rank + 1))
    dist.all_reduce(t, group=mine)
    assert t.tolist() == [rank + 1.0] * 2
    mine, every = dist.new_subgroups(2)
    assert len(every) == 1 and dist.get_world_size(mine) == 2
    # rank 0 is in no subgroup: it gets None, and a non-member marker in the list
    mine, every = dist.new_subgroups_by_enumeration([[1]])
    assert (mine is None) == (rank == 0) and len(every) == 1
    assert every[0] is (dist.GroupMember.NON_GROUP_MEMBER if rank == 0 else mine)
    try:
        dist.new_subgroups_by_enumeration([[0, 1], [1]])
        raise AssertionError("overlapping subgroups were accepted")
    except ValueError as e:
        assert str(e) == "Rank 1 has appeared in both subgroup [0, 1] and [1]", str(e)
    # 2 + 1 + 1 + 2 groups since the first call (the overlapping list made both), on every rank
    assert dist.get_pg_count() == count + 6, dist.get_pg_count()
    # made by its members alone: rank 0 does not take part and gets None
    if rank == 1:
        solo = dist.new_group([1], use_local_synchronization=True)
        assert dist.get_world_size(solo) == 1
    else:
        assert dist.new_group([1], use_local_synchronization=True) is None
    assert dist.get_pg_count() == count + 6  # such groups are not counted


def check_split(rank):
    """split_group on the world bound to this rank's (simulated) CUDA device."""
    count = dist.get_pg_count()
    solo = dist.split_group(split_ranks=[[0], [1]])
    assert dist.get_process_group_ranks(solo) == [rank]
    pair = dist.split_group(split_ranks=[[1, 0]])
    assert dist.get_process_group_ranks(pair) == [0, 1] and dist.get_rank(pair) == rank
    t = torch.full((2,), float(rank + 1), device="cuda")
    dist.all_reduce(t, group=pair)
    assert t.tolist() == [3.0, 3.0]
    # rank 0 is in none of the lists
    only = dist.split_group(pair, [[1]])
    assert (only is None) == (rank == 0)
    assert dist.get_pg_count() == count  # split groups are not counted


def check_singles(rank):
    out = torch.empty(2, 3)
    dist.all_gather_single(out, torch.full((3,), float(rank)))
    assert out.tolist() == [[0.0] * 3, [1.0] * 3]
    out = torch.empty(2)
    dist.reduce_scatter_single(out, torch.arange(4.0).reshape(2, 2) * (rank + 1))
    assert out.tolist() == [[0.0, 3.0], [6.0, 9.0]][rank]
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        dist.all_gather_into_tensor(torch.empty(2), torch.ones(1))
    assert w and w[0].category is FutureWarning and "all_gather_single" in str(w[0].message)


def check_prefix_store(rank):
    store = dist.PrefixStore("api", dist._get_default_group().store)
    if rank == 0:
        store.set("k", "v0")
        store.queue_push("q", b"first")
        store.queue_push("q", b"second")
    assert store.get("k") == b"v0"
    assert dist._get_default_group().store.get("api/k") == b"v0"
    dist.barrier()
    if rank == 1:
        assert store.queue_len("q") == 2
        assert store.queue_pop("q") == b"first" and store.queue_pop("q") == b"second"
        try:
            store.queue_pop("q", block=False)
            raise AssertionError("popped an empty queue")
        except dist.QueueEmptyError as e:
            assert str(e) == "queue is empty"
    dist.barrier()


def main():
    dist.init_process_group("gloo", device_id=0)  # the launch gives each rank a simulated GPU
    rank = dist.get_rank()
    assert dist.get_pg_count() == 1 and dist.group.WORLD.bound_device_id.type == "cuda"
    check_objects(rank)
    check_subgroups(rank)
    check_split(rank)
    check_singles(rank)
    check_prefix_store(rank)
    print(f"PASS {rank}", flush=True)
    dist.destroy_process_group()
    assert dist.get_pg_count() == 0


if __name__ == "__main__":
    main()
