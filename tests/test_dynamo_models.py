"""The examples' models compiled with ember.compile (backend "eager") train exactly as eager:
same losses step by step, one graph per model, no graph breaks."""
import os
import sys

import pytest

import ember
from ember._dynamo.testing import CompileCounter

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples"))
import train_digits  # noqa: E402
import train_gpt  # noqa: E402


@pytest.fixture(autouse=True)
def _reset():
    ember._dynamo.reset()
    yield
    ember._dynamo.reset()


def _gpt_losses(compiled, steps=4, dropout=0.1, backend=None):
    ember.manual_seed(7)
    model = train_gpt.GPT(40, context=16, width=32, n_layer=2, n_head=4, dropout=dropout)
    opt = train_gpt.configure_optimizer(model, 3e-3, weight_decay=0.1)
    cnt = CompileCounter()
    run = ember.compile(model, backend=backend or cnt) if compiled else model
    data = ember.randint(40, (2000,))
    losses = []
    for _ in range(steps):
        x, y = train_gpt.get_batch(data, 4, 16)
        _, loss = run(x, y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        ember.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        losses.append(loss.item())
    model.eval()
    with ember.no_grad():
        _, val = run(*train_gpt.get_batch(data, 4, 16))
    losses.append(val.item())
    return losses, cnt


def test_train_gpt_compiled_same_losses():
    eager, _ = _gpt_losses(False)
    compiled, cnt = _gpt_losses(True)
    assert compiled == eager
    # one graph for training, one for evaluation (training flag and grad mode guards)
    assert cnt.frame_count == 2


def test_gpt_forward_is_one_graph():
    ember.manual_seed(0)
    model = train_gpt.GPT(40, context=16, width=32, n_layer=2, n_head=4)
    idx = ember.randint(40, (2, 16))
    e = ember._dynamo.explain(model)(idx, idx)
    assert e.graph_count == 1 and e.graph_break_count == 0


def _digits_losses(compiled, steps=5, backend=None):
    ember.manual_seed(0)
    train, _ = train_digits.load_digits()
    model = train_digits.DigitsCNN(width=8)
    opt = ember.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    cnt = CompileCounter()
    run = ember.compile(model, backend=backend or cnt) if compiled else model
    loader = ember.utils.data.DataLoader(train, batch_size=32, shuffle=True,
                                         generator=ember.Generator().manual_seed(0))
    losses = []
    for i, (images, labels) in enumerate(loader):
        if i == steps:
            break
        loss = ember.nn.functional.cross_entropy(run(images), labels)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses, cnt


def test_train_digits_compiled_same_losses():
    eager, _ = _digits_losses(False)
    compiled, cnt = _digits_losses(True)
    assert compiled == eager
    assert cnt.frame_count == 1


def test_train_gpt_aot_eager_20_steps_within_1e5():
    """Issue 13's check: AOTAutograd (joint graph, partitioned) trains as eager, dropout on."""
    eager, _ = _gpt_losses(False, steps=20)
    compiled, _ = _gpt_losses(True, steps=20, backend="aot_eager")
    assert max(abs(a - b) for a, b in zip(compiled, eager)) < 1e-5


def test_train_digits_aot_eager_decomp_partition_same_losses():
    eager, _ = _digits_losses(False, steps=20)
    compiled, _ = _digits_losses(True, steps=20, backend="aot_eager_decomp_partition")
    assert max(abs(a - b) for a, b in zip(compiled, eager)) < 1e-5


def test_examples_with_compile_flag_print_eager_losses(capsys):
    """``--compile eager`` on the examples' own training loops: the same printed losses."""
    gpt_args = ["--steps", "4", "--eval-batches", "1", "--sample-chars", "5", "--width", "32",
                "--context", "16", "--batch-size", "4"]
    eager = train_gpt.main(gpt_args)
    out_eager = capsys.readouterr().out
    compiled = train_gpt.main(gpt_args + ["--compile", "eager"])
    out_compiled = capsys.readouterr().out
    assert (compiled["first_val"], compiled["val"], compiled["sample"]) == \
        (eager["first_val"], eager["val"], eager["sample"])
    strip = lambda s: [ln.split(" ms/step")[0].rsplit(" ", 1)[0] if "ms/step" in ln else ln  # noqa: E731
                       for ln in s.splitlines() if "loss" in ln]
    assert strip(out_compiled) == strip(out_eager)

    d_eager = train_digits.main(["--epochs", "1", "--width", "4"])
    d_compiled = train_digits.main(["--epochs", "1", "--width", "4", "--compile", "eager"])
    assert d_compiled["losses"] == d_eager["losses"]
    assert d_compiled["accuracy"] == d_eager["accuracy"]


def _step_losses(compiled):
    ember.manual_seed(0)
    m = train_gpt.GPT(40, context=16, width=32, n_layer=1, n_head=2)
    opt = ember.optim.AdamW(m.parameters(), lr=1e-3)
    data = ember.randint(40, (500,))

    def step(x, y):
        _, loss = m(x, y)
        opt.zero_grad()
        loss.backward()
        ember.nn.utils.clip_grad_norm_(m.parameters(), 1.0)
        opt.step()
        return loss
    run = ember.compile(step, backend="eager") if compiled else step
    out = []
    for _ in range(3):
        x, y = train_gpt.get_batch(data, 2, 16)
        out.append(run(x, y).item())
    return out


def test_whole_training_step_compiled():
    """forward captured; backward, zero_grad and the optimizer break or run eagerly."""
    assert _step_losses(True) == _step_losses(False)
