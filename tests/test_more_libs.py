"""torch-optimizer, lion-pytorch, entmax, skorch, e3nn and torchcde on ember through
``ember.as_torch``: 27 of torch-optimizer's optimizers (several written against PyTorch's
deprecated positional ``add_(alpha, t)``/``addcmul_(value, t1, t2)`` signatures), Lion, entmax's
sparse mappings and Fenchel-Young losses with their custom backward passes, skorch's
scikit-learn estimators (a Pipeline, partial_fit, GridSearchCV), an e3nn equivariant layer
(tensor products generated with torch.fx on hand-built Proxies and optimised by opt_einsum_fx)
and a neural CDE on splines through torchdiffeq's solvers, each computing PyTorch's numbers. Each case of tests/_more_libs_programs.py runs in PyTorch and in ember, in two
subprocesses side by side, from the same seeds."""
import typing

import pytest

from _more_libs_programs import CASES
from helpers import (assert_saved_arrays_match, installed_cases_beside_ember,
                     libraries_installed)

# the libraries each case needs (import names)
LIBRARIES = {"torch_optimizer_adaptive": ["torch_optimizer"],
             "torch_optimizer_momentum": ["torch_optimizer"], "lion": ["lion_pytorch"],
             "entmax": ["entmax"], "skorch": ["skorch", "sklearn"],
             "e3nn": ["e3nn", "opt_einsum_fx"], "torchcde": ["torchcde", "torchdiffeq"]}
NAMES = list(CASES)


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    """Every case of tests/_more_libs_programs.py whose libraries are installed:
    name -> (PyTorch's result, ember's)."""
    directory = tmp_path_factory.mktemp("more_libs")
    return installed_cases_beside_ember("_more_libs_programs.py", directory, LIBRARIES)


@pytest.mark.parametrize("name", NAMES)
def test_library_program_matches_pytorch(results, name):
    """Losses, outputs, probabilities, scores, every gradient and the parameters after the
    optimizer steps equal PyTorch's."""
    if not libraries_installed(LIBRARIES[name]):  # (not imported here: skorch imports torch_geometric, whose
        # import replaces the torch.select the other tests compare with)
        pytest.skip(f"{', '.join(LIBRARIES[name])} not installed")
    theirs, mine = results[name]
    assert_saved_arrays_match(mine, theirs, rtol=1e-4, atol=2e-5)


def test_deprecated_signatures_and_numbers_as_input():
    """What torch-optimizer relies on, checked directly: PyTorch's deprecated positional
    scalar signatures give the current ones' results and warn once per process, and
    ``torch.div(1.0, t)`` (a number as ``input``) is a wrapped number."""
    torch = pytest.importorskip("torch")
    import subprocess
    import sys
    program = (
        "import warnings\n"
        "import {lib} as torch\n"
        "a, b = torch.tensor([1., -2.]), torch.tensor([3., 0.5])\n"
        "m = torch.tensor([[1., 2.], [3., 4.]])\n"
        "with warnings.catch_warnings(record=True) as w:\n"
        "    warnings.simplefilter('always')\n"
        "    r = [a.clone().add_(2, b), torch.add(a, 2, b), a.sub(0.5, b),\n"
        "         torch.addcmul(a, 0.5, b, b), a.clone().addcdiv_(-0.5, b, b + 1),\n"
        "         torch.addmm(0.5, m, m, m), torch.addmm(0.5, m, 2, m, m), m.addmm(3, m, m),\n"
        "         torch.baddbmm(2, m[None], m[None], m[None]), a.add(2, 3),\n"
        "         torch.div(1.0, b), torch.sub(2, b), torch.mul(3, b.int()),\n"
        "         torch.add(1.5, torch.tensor(2., dtype=torch.float16)), torch.add(1, 2),\n"
        "         torch.true_divide(1, torch.tensor([2, 4]))]\n"
        "print(repr([x.tolist() for x in r]))\n"
        "print(repr([str(x.dtype).split('.')[-1] for x in r]))\n"
        "print(repr([str(x.message).split(' (Triggered internally')[0] for x in w]))\n")
    outs = [subprocess.run([sys.executable, "-c", program.format(lib=lib)], capture_output=True,
                           text=True, check=True).stdout for lib in ("torch", "ember")]
    assert outs[1] == outs[0]
    assert "This overload of add_ is deprecated" in outs[0]
    import ember
    for lib in (torch, ember):
        with pytest.raises(TypeError, match="add\\(\\) takes 2 positional arguments but 3"):
            lib.add(lib.ones(2), lib.ones(2), 2)


def test_fx_hand_built_graph():
    """What e3nn's and opt_einsum_fx's code generators rely on: functions of torch/functional.py
    called on Proxies made outside a trace are recorded (einsum with its operands flattened,
    whether given one by one or as one sequence), and a ``typing.Tuple`` return annotation
    compiles."""
    torch = pytest.importorskip("torch")
    import ember
    seen = []
    # a hand-built Proxy makes ember consult __torch_function__ for the rest of the process:
    # undone at the end, for the tests that follow in this one
    from ember.fx import proxy
    saved = list(ember.overrides._TF_ON), list(proxy._BARE_PROXY_REGISTERED)
    try:
        _hand_built_graphs(torch, ember, seen)
    finally:
        ember.overrides._TF_ON[:], proxy._BARE_PROXY_REGISTERED[:] = saved
    assert seen[2:] == seen[:2]


def _hand_built_graphs(torch, ember, seen):
    for lib in (torch, ember):
        graph = lib.fx.Graph()
        x = lib.fx.Proxy(graph.placeholder("x", lib.Tensor))
        y = lib.fx.Proxy(graph.placeholder("y", lib.Tensor), x.tracer)
        outs = [lib.einsum("ij,jk->ik", x, y), lib.einsum("ij,jk->ik", (x, y)),
                lib.broadcast_tensors(x[:1], y.t())[0], lib.tensordot(x, y, 1),
                lib.atleast_3d(x), lib.cdist(x, y.t())]
        graph.output(tuple(o.node for o in outs),
                     typing.Tuple[(lib.Tensor,) * len(outs)])
        module = lib.fx.GraphModule({}, graph)
        assert "typing_Tuple[" in module.code
        nodes = [n for n in graph.nodes if n.op == "call_function" and "getitem" not in n.name]
        # (einsum's operands one by one: opt_einsum_fx reads them so)
        seen.append([(n.target.__name__, len(n.args) if n.target is lib.einsum else None)
                     for n in nodes])
        a = lib.arange(6.).reshape(2, 3)
        got = module(a, a.t().contiguous())
        seen.append([o.tolist() for o in got])
