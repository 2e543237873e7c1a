"""``ember.distributed.pipelining``: the microbatch split and merge against PyTorch's functions;
a one-stage pipeline in a world of one beside PyTorch's (losses, gradients, outputs, errors);
the multi-stage schedules' action orders against PyTorch's; and one 2-rank run
(tests/_distributed_pipelining_worker.py) of an MLP cut into two stages (GPipe, 1F1B) and into
four (Interleaved 1F1B, Looped BFS), against the whole model run in one process by ember and by
PyTorch."""
import importlib
import json
import os

import pytest

import ember
import _distributed_pipelining_worker as W
from helpers import assert_same
from test_distributed import ROOT, launch, needs_mpi

WORKER = os.path.join(ROOT, "tests", "_distributed_pipelining_worker.py")


def _error(f):
    try:
        f()
    except Exception as e:  # noqa: BLE001  (the type and message are compared)
        return type(e).__name__, str(e).replace("torch.", "ember.")
    return None


def _mb(lib):
    return importlib.import_module(f"{lib.__name__}.distributed.pipelining.microbatch")


def _same_tree(a, b):
    """ember's value ``a`` and PyTorch's ``b``: the same structure, tensors and leaves."""
    assert type(a).__name__ == type(b).__name__, (a, b)
    if isinstance(a, (tuple, list)):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            _same_tree(x, y)
    elif isinstance(a, dict):
        assert list(a) == list(b)
        for k in a:
            _same_tree(a[k], b[k])
    elif isinstance(a, ember.Tensor):
        assert_same(a, b)
        assert a.requires_grad == b.requires_grad
    else:
        assert a == b


def test_split_and_merge_as_pytorch(torch):
    for lib in (ember, torch):
        mb = _mb(lib)
        spec = mb.TensorChunkSpec(1)
        assert (repr(spec).replace("torch.", "ember."), str(spec)) == (
            "ember.distributed.pipelining.microbatch.TensorChunkSpec(1)", "TensorChunkSpec(1)")
        assert [s.split_dim for s in mb.TensorChunkSpec.from_tuple((0, 1))] == [0, 1]
        assert {k: s.split_dim for k, s in mb.TensorChunkSpec.from_dict({"a": 1}).items()} \
            == {"a": 1}

    def cases(lib):
        mb = _mb(lib)
        x = lib.arange(30.0).reshape(10, 3)
        w = lib.arange(12.0).reshape(3, 4).requires_grad_()  # a leaf: its chunks retain grad
        S = mb.TensorChunkSpec
        return [
            # defaults: tensors along dim 0, the rest replicated; 10 rows in 4 (tensor_split)
            ((x, [x, 7], {"k": (x, "s")}), {"m": x, "n": None}, 4, None, None),
            # specs given: dim 1, and a replicated tensor (the class itself, as PyTorch allows)
            ((x, w), {"m": x}, 3, (S(1), mb._Replicate), {"m": S(0)}),
            # fewer rows than chunks: as many chunks as rows
            ((x[:2], w), {}, 4, None, None),
            # no tensor among the args: the kwargs decide
            ((5,), {"m": x[:3]}, 4, None, None),
            ((w,), None, 3, (S(1),), None),
        ]

    for ours, theirs in zip(cases(ember), cases(torch)):
        got = [_mb(lib).split_args_kwargs_into_chunks(*c)
               for lib, c in ((ember, ours), (torch, theirs))]
        _same_tree(*got)
        # merged back along dim 0: the keyword tensor "m" whole again
        merged = [_mb(lib).merge_chunks([c["m"] for c in kw], None)
                  for lib, (_, kw) in zip((ember, torch), got) if kw and "m" in kw[0]]
        if merged:
            _same_tree(*merged)
            assert merged[0].tolist() == ours[1]["m"].tolist()
    # merging: concatenation along a spec's dim, the sum reducer, equal values kept
    results = []
    for lib in (ember, torch):
        mb = _mb(lib)
        chunks = [(lib.full((2, i + 1), float(i)), lib.tensor(float(i)), "same")
                  for i in range(3)]
        spec = (mb.TensorChunkSpec(1), mb.sum_reducer, None)
        results.append(mb.merge_chunks(chunks, spec))
        assert results[-1][1].item() == 3.0
    _same_tree(*results)


def test_split_and_merge_errors_as_pytorch(torch):
    cases = [
        lambda lib, mb: mb.split_args_kwargs_into_chunks((lib.ones(4),), {}, 2, (1,)),
        lambda lib, mb: mb.split_args_kwargs_into_chunks((lib.ones(4), 3), {}, 2,
                                                         (mb.TensorChunkSpec(0),
                                                          mb.TensorChunkSpec(0))),
        lambda lib, mb: mb.split_args_kwargs_into_chunks((lib.ones(4),), {"a": lib.ones(2)},
                                                         2, None, {}),
        lambda lib, mb: mb._split_tensor(lib.ones(2), mb.TensorChunkSpec(0), 3),
        lambda lib, mb: mb.merge_chunks([(1, 2), (1,)], None),
        lambda lib, mb: mb.merge_chunks([(1,), (2,)], (None,)),
    ]
    for case in cases:
        ours = _error(lambda: case(ember, _mb(ember)))
        theirs = _error(lambda: case(torch, _mb(torch)))
        assert ours == theirs and ours is not None


def _one_stage_run(lib, schedule_name, n_microbatches=4):
    """A one-stage pipeline (first and last) in the current world of one: two steps, then an
    eval; the losses, outputs, gradients and eval output."""
    pp = importlib.import_module(f"{lib.__name__}.distributed.pipelining")
    m = W.model(lib)
    stage = pp.PipelineStage(m, 0, 1, lib.device("cpu"))
    schedule = getattr(pp, schedule_name)(stage, n_microbatches, loss_fn=W.loss_fn(lib))
    runs = []
    for step in range(2):
        x, y = W.batch(lib, step)
        x.requires_grad_()  # the first stage's input: its chunks retain their gradients
        losses = []
        for p in m.parameters():
            p.grad = None
        out = schedule.step(x, target=y, losses=losses)
        runs.append((losses, out.detach(), [p.grad for p in m.parameters()]))
    x, y = W.batch(lib, 2)
    eval_losses = []
    runs.append((eval_losses, schedule.eval(x, target=y, losses=eval_losses)))
    return runs


@needs_mpi
@pytest.mark.parametrize("schedule_name", ["ScheduleGPipe", "Schedule1F1B"])
def test_one_stage_world_of_one_as_pytorch(worlds, schedule_name):
    torch = worlds
    ours = _one_stage_run(ember, schedule_name)
    theirs = _one_stage_run(torch, schedule_name)
    close = dict(atol=1e-6, rtol=1e-5)
    for a, b in zip(ours, theirs):
        assert len(a[0]) == len(b[0]) == 4
        for la, lb in zip(a[0], b[0]):
            assert_same(la.detach(), lb.detach(), **close)
        assert_same(a[1].detach(), b[1].detach(), **close)
    for a, b in zip(ours[:2], theirs[:2]):  # the training steps' gradients
        for ga, gb in zip(a[2], b[2]):
            assert_same(ga, gb, **close)


def _kwargs_run(lib):
    """A stage taking a keyword tensor, with chunk specs given for both and a merge spec for
    its two outputs (dim 1 and the sum of the microbatches' second outputs)."""
    pp = importlib.import_module(f"{lib.__name__}.distributed.pipelining")
    mb = _mb(lib)

    class Scaled(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = lib.nn.Linear(3, 2)

        def forward(self, x, scale):
            out = self.lin(x.t()) * scale
            return out.t(), out.sum()

    lib.manual_seed(0)
    m = Scaled()
    stage = pp.PipelineStage(m, 0, 1, lib.device("cpu"))

    def loss(output, target):
        return ((output[0] - target.t()) ** 2).mean() + output[1] * 0.01

    schedule = pp.ScheduleGPipe(stage, 2, loss_fn=loss,
                                args_chunk_spec=(mb.TensorChunkSpec(1),),
                                kwargs_chunk_spec={"scale": mb.TensorChunkSpec(0)},
                                output_merge_spec=(mb.TensorChunkSpec(1), mb.sum_reducer))
    x = lib.linspace(-1, 1, 12).reshape(3, 4)
    scale = lib.arange(1.0, 5.0).reshape(4, 1)
    losses = []
    out = schedule.step(x, scale=scale, target=lib.ones(4, 2), losses=losses)
    return out, losses, [p.grad for p in m.parameters()]


@needs_mpi
def test_one_stage_kwargs_specs_and_forward_only_as_pytorch(worlds):
    torch = worlds
    (eo, el, eg), (to, tl, tg) = _kwargs_run(ember), _kwargs_run(torch)
    assert eo[0].shape == to[0].shape == (2, 4) and len(el) == len(tl) == 2
    for a, b in zip(list(eo) + el + eg, list(to) + tl + tg):
        assert_same(a.detach(), b.detach(), atol=1e-6, rtol=1e-5)
    # the forward-only schedule: the merged outputs; a target is refused
    outs = []
    for lib in (ember, torch):
        schedules = importlib.import_module(f"{lib.__name__}.distributed.pipelining.schedules")
        stage = importlib.import_module(f"{lib.__name__}.distributed.pipelining").PipelineStage(
            W.model(lib), 0, 1, lib.device("cpu"))
        sched = schedules._ScheduleForwardOnly(stage, 4)
        outs.append(sched.step(W.batch(lib, 0)[0]))
        with pytest.raises(RuntimeError, match="Forward-only schedule does not support loss"):
            sched.step(W.batch(lib, 0)[0], target=lib.ones(8, 4))
    assert_same(outs[0].detach(), outs[1].detach(), atol=1e-6, rtol=1e-5)


@needs_mpi
def test_stage_and_schedule_errors_as_pytorch(worlds):
    torch = worlds
    import torch.distributed.pipelining as tpp
    import ember.distributed.pipelining as epp
    from ember.distributed.pipelining import schedules as es
    from torch.distributed.pipelining import schedules as ts

    def stage(lib, pp, **kw):
        return pp.PipelineStage(lib.nn.Linear(2, 2), 0, kw.pop("num_stages", 2),
                                lib.device("cpu"), **kw)

    cases = [
        lambda lib, pp: pp.PipelineStage(lib.nn.Linear(2, 2), 2, 2, lib.device("cpu")),
        lambda lib, pp: pp.Schedule1F1B(stage(lib, pp, num_stages=3), 2),
        lambda lib, pp: stage(lib, pp, input_args=(lib.ones(1), 3)),
        lambda lib, pp: stage(lib, pp, input_args=[None]),
        lambda lib, pp: stage(lib, pp, output_args="x"),
        lambda lib, pp: pp.ScheduleGPipe(stage(lib, pp, num_stages=1), 2)._check_inputs(
            [()], None),
        lambda lib, pp: pp.ScheduleGPipe(stage(lib, pp, num_stages=1), 2)._check_inputs(
            None, None, None, ()),
        lambda lib, pp: pp.ScheduleGPipe(stage(lib, pp, num_stages=1), 2)._check_inputs(
            (), None),
    ]
    for case in cases:
        ours = _error(lambda: case(ember, epp))
        theirs = _error(lambda: case(torch, tpp))
        assert ours == theirs and ours is not None
    # step() under no_grad, with a loss: PyTorch's message
    for lib, pp in ((ember, epp), (torch, tpp)):
        sched = pp.ScheduleGPipe(stage(lib, pp, num_stages=1), 2, loss_fn=W.loss_fn(lib))
        with lib.no_grad(), pytest.raises(RuntimeError, match="Please call eval"):
            sched.step(lib.ones(2, 2), target=lib.ones(2, 2))
    assert es.get_schedule_class("gpipe") is es.ScheduleGPipe
    assert es.get_schedule_class("1f1b") is es.Schedule1F1B
    assert ts.get_schedule_class("gpipe").__name__ == "ScheduleGPipe"
    with pytest.raises(ValueError, match="Unknown schedule name 'nope'"):
        es.get_schedule_class("nope")


@pytest.mark.parametrize("name", ["ScheduleInterleaved1F1B", "ScheduleLoopedBFS"])
def test_multi_stage_orders_as_pytorch(torch, name):
    """Every rank's actions (stage, F/B, microbatch, and the bubbles) as PyTorch's schedules
    compute them, for several world sizes, stages per rank and microbatch counts."""
    import torch.distributed.pipelining.schedules as ts
    import ember.distributed.pipelining.schedules as es
    for world, local, n in ((2, 2, 4), (2, 2, 8), (4, 2, 8), (3, 3, 6), (4, 2, 3), (2, 3, 2)):
        orders = []
        for mod in (es, ts):
            s = object.__new__(getattr(mod, name))
            s._n_microbatches, s.pp_group_size, s.n_local_stages = n, world, local
            s._stages = [None] * local
            s.number_of_rounds = max(1, n // world)
            s.microbatches_per_round = n // s.number_of_rounds
            orders.append([[str(a) for a in s._calculate_single_rank_operations(r)]
                           for r in range(world)])
        assert orders[0] == orders[1], (world, local, n)


@needs_mpi
def test_two_ranks_as_whole_model(torch, tmp_path):
    """GPipe (shapes inferred) and 1F1B (shapes given) with a stage per rank, Interleaved 1F1B
    (inferred) and Looped BFS (given) with two stages per rank; 2 ranks, 4 microbatches, 3 SGD
    steps then an eval: the losses, the last stage's outputs and every parameter equal the
    whole model's in one process, in ember and in PyTorch."""
    p, _ = launch(2, str(tmp_path), worker=WORKER)
    out = p.stdout + p.stderr
    assert p.returncode == 0 and "PASS 0" in out and "PASS 1" in out, out
    ranks = [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in range(2)]
    refs = {"ember": W.reference(ember), "torch": W.reference(torch)}
    initial = [p.tolist() for p in W.model(torch).parameters()]
    close = dict(atol=1e-6, rtol=1e-5)
    for name, mode in (("gpipe", "dynamic"), ("1f1b", "static"), ("interleaved", "dynamic"),
                       ("looped_bfs", "static")):
        first, last = ranks[0][name], ranks[1][name]  # the last stage is on rank 1
        assert set(first["modes"] + last["modes"]) == {mode}, name
        assert first["initial"] == initial  # ember's manual_seed gives PyTorch's weights
        assert first["losses"] == [[]] * W.STEPS and first["outputs"] == []
        assert first["eval_output"] is None and first["eval_losses"] == []
        by_stage = {**first["params"], **last["params"]}
        params = [t for i in sorted(by_stage, key=int) for t in by_stage[i]]
        for ref in refs.values():
            for key in ("losses", "outputs", "eval_output", "eval_losses"):
                assert_same(ember.tensor(last[key]), ember.tensor(ref[key]), **close)
            assert len(params) == len(ref["params"])
            for got, want in zip(params, ref["params"]):
                assert_same(ember.tensor(got), ember.tensor(want), **close)
