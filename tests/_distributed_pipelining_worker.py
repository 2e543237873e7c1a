"""The program that tests/test_distributed_pipelining.py runs on 2 ranks through
``python -m ember.distributed.run``: a small MLP cut into two ``PipelineStage``s (rank 0 runs
the first half, rank 1 the rest) trained for a few steps by ``ScheduleGPipe`` (shapes
inferred) and by ``Schedule1F1B`` (shapes given), then cut into four stages (two per rank) and
trained by ``ScheduleInterleaved1F1B`` and ``ScheduleLoopedBFS``; 4 microbatches each, then an
eval. Each rank writes what it saw (losses, outputs, its stages' parameters) to
``<dir>/rank<r>.json`` for the test to compare with whole-model runs in ember and PyTorch, and
prints ``PASS <rank>``.

``model``, ``batch`` and ``reference`` are written for either library (the test runs them on
PyTorch too)."""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import ember  # noqa: E402

STEPS, MICROBATCHES = 3, 4
# the model's modules of each stage, for two and for four stages
CUTS = {2: [(0, 4), (4, 7)], 4: [(0, 2), (2, 4), (4, 6), (6, 7)]}


def model(lib):
    lib.manual_seed(0)
    nn = lib.nn
    return nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 16), nn.Tanh(),
                         nn.Linear(16, 12), nn.ReLU(), nn.Linear(12, 4))


def batch(lib, step):
    """Step ``step``'s inputs (8 x 8) and targets (8 x 4), the same numbers in both libraries."""
    x = lib.linspace(-2.0, 2.0, 64).reshape(8, 8).sin() * (step + 1)
    y = lib.linspace(-1.0, 1.0, 32).reshape(8, 4).cos() - step * 0.25
    return x, y


def optimizer(lib, params):
    return lib.optim.SGD(params, lr=0.1, momentum=0.9)


def loss_fn(lib):
    return lib.nn.MSELoss()


def reference(lib):
    """The whole model in one process, with the pipeline's arithmetic: each microbatch's
    mean loss backpropagated into the accumulated gradients, divided by the number of
    microbatches before the step. Returns (losses per step, outputs per step, eval output,
    final parameters)."""
    m = model(lib)
    opt, crit = optimizer(lib, m.parameters()), loss_fn(lib)
    losses, outputs = [], []
    for step in range(STEPS):
        x, y = batch(lib, step)
        opt.zero_grad()
        step_losses, outs = [], []
        for xm, ym in zip(x.tensor_split(MICROBATCHES), y.tensor_split(MICROBATCHES)):
            out = m(xm)
            loss = crit(out, ym)
            loss.backward()
            step_losses.append(loss.item())
            outs.append(out.detach())
        for p in m.parameters():
            p.grad.div_(MICROBATCHES)
        opt.step()
        losses.append(step_losses)
        outputs.append(lib.cat(outs).tolist())
    with lib.no_grad():
        x, y = batch(lib, STEPS)
        eval_out = m(x)
        eval_losses = [crit(o, t).item() for o, t in zip(eval_out.tensor_split(MICROBATCHES),
                                                          y.tensor_split(MICROBATCHES))]
    return {"losses": losses, "outputs": outputs, "eval_output": eval_out.tolist(),
            "eval_losses": eval_losses, "params": [p.tolist() for p in m.parameters()]}


def run(schedule_cls, rank, num_stages, static=False):
    """Train and evaluate with this rank's stages (stage i on rank i % 2)."""
    from ember.distributed.pipelining import PipelineStage
    whole = model(ember)
    initial = [p.detach().clone().tolist() for p in whole.parameters()]
    mine = [i for i in range(num_stages) if i % 2 == rank]
    submods = {i: whole[slice(*CUTS[num_stages][i])] for i in mine}
    stages = []
    for i in mine:
        kw = {}
        if static:
            # the shapes given rather than inferred, as PyTorch's examples do: an example
            # input (taking a gradient where one flows back to the previous stage) and the
            # output the submodule makes of it
            width = submods[i][0].in_features
            example = ember.zeros(8 // MICROBATCHES, width, requires_grad=i > 0)
            kw = dict(input_args=example, output_args=submods[i](example))
        stages.append(PipelineStage(submods[i], i, num_stages, ember.device("cpu"), **kw))
    schedule = schedule_cls(stages[0] if num_stages == 2 else stages, MICROBATCHES,
                            loss_fn=loss_fn(ember))
    opt = optimizer(ember, [p for i in mine for p in submods[i].parameters()])
    has_last = num_stages - 1 in mine
    losses, outputs = [], []
    for step in range(STEPS):
        x, y = batch(ember, step)
        opt.zero_grad()
        step_losses = []
        out = schedule.step(x, target=y, losses=step_losses)
        assert (out is not None) == has_last
        assert len(step_losses) == (MICROBATCHES if has_last else 0)
        if has_last:
            assert all(loss.shape == () for loss in step_losses)
            outputs.append(out.tolist())
        opt.step()
        losses.append([loss.item() for loss in step_losses])
    x, y = batch(ember, STEPS)
    eval_losses = []
    eval_out = schedule.eval(x, target=y, losses=eval_losses)
    return {"initial": initial, "losses": losses, "outputs": outputs,
            "eval_output": eval_out.tolist() if eval_out is not None else None,
            "eval_losses": [loss.item() for loss in eval_losses],
            "params": {i: [p.tolist() for p in submods[i].parameters()] for i in mine},
            "modes": [stage._inference_mode.value for stage in stages]}


def main():
    import ember.distributed as dist
    from ember.distributed.pipelining import (Schedule1F1B, ScheduleGPipe,
                                              ScheduleInterleaved1F1B, ScheduleLoopedBFS)
    out_dir = sys.argv[1]
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    assert dist.get_world_size() == 2
    results = {"gpipe": run(ScheduleGPipe, rank, 2),
               "1f1b": run(Schedule1F1B, rank, 2, static=True),
               "interleaved": run(ScheduleInterleaved1F1B, rank, 4),
               "looped_bfs": run(ScheduleLoopedBFS, rank, 4, static=True)}
    with open(os.path.join(out_dir, f"rank{rank}.json"), "w") as f:
        json.dump(results, f)
    print(f"PASS {rank}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
