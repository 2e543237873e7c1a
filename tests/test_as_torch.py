"""ember.as_torch: ``import torch`` importing ember, so libraries written against PyTorch run
on ember unchanged; HuggingFace transformers models computing PyTorch's numbers through it."""
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from helpers import results_beside_pytorch

import ember
import ember.as_torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _python(*args, check=True):
    p = subprocess.run([sys.executable, *args], cwd=ROOT, capture_output=True, text=True,
                       timeout=300)
    if check and p.returncode:
        raise AssertionError(p.stderr[-4000:])
    return p


def test_import_torch_gives_embers_modules(tmp_path):
    script = tmp_path / "prog.py"
    script.write_text(textwrap.dedent("""
        import importlib.metadata, sys
        import ember.as_torch
        ember.as_torch.install()
        import ember, torch
        import torch.nn.functional as F
        from torch.utils.data import DataLoader
        from torch import nn
        assert torch is ember and F is ember.nn.functional and nn is ember.nn
        assert DataLoader is ember.utils.data.DataLoader
        assert sys.modules["torch.nn"] is ember.nn
        assert importlib.metadata.version("torch") == ember.version.pytorch_api
        try:
            import torch.no_such_module
        except ModuleNotFoundError as e:
            assert e.name == "torch.no_such_module", e.name
        else:
            raise AssertionError("imported a module ember lacks")
        ember.as_torch.uninstall()
        assert "torch" not in sys.modules and not ember.as_torch.is_installed()
        print("ok")
    """))
    assert _python(str(script)).stdout.strip() == "ok"


def test_command_line_runs_a_script_or_a_module(tmp_path):
    (tmp_path / "prog.py").write_text(
        "import sys, torch\nprint(torch is sys.modules['ember'], torch.__name__, "
        "torch.ones(2).sum().item(), sys.argv[1:])\n")
    out = _python("-m", "ember.as_torch", str(tmp_path / "prog.py"), "--lr", "3").stdout
    assert out.split() == ["True", "torch", "2.0", "['--lr',", "'3']"]
    env_path = os.environ.get("PYTHONPATH", "")
    p = subprocess.run([sys.executable, "-m", "ember.as_torch", "-m", "prog", "x"],
                       cwd=ROOT, capture_output=True, text=True, timeout=300,
                       env={**os.environ, "PYTHONPATH": f"{tmp_path}{os.pathsep}{env_path}"})
    assert p.returncode == 0, p.stderr
    assert p.stdout.split() == ["True", "torch", "2.0", "['x']"]
    assert _python("-m", "ember.as_torch", check=False).returncode == 2
    # nothing on stderr: retagging used to read distributed.reduce_op's __class__ (isinstance),
    # which PyTorch's deprecated object answers with a FutureWarning
    p = _python("-W", "default", "-m", "ember.as_torch", str(tmp_path / "prog.py"))
    assert p.stderr == ""


# objects whose module PyTorch names the same way ember's layout does, once spelled torch.*
NAMED = ["Tensor", "float32", "device", "Size", "nn.Linear", "nn.Tanh", "nn.Module",
         "nn.init.normal_", "nn.functional.relu", "nn.parameter.Parameter", "optim.Adam",
         "optim.lr_scheduler.StepLR", "utils.data.DataLoader", "autograd.Function",
         "no_grad", "amp.GradScaler", "nn.Linear.forward", "nn.Module.state_dict"]


def _module_names(torch):
    import functools
    return {n: functools.reduce(getattr, n.split("."), torch).__module__ for n in NAMED}


def test_objects_carry_pytorchs_module_names(torch, tmp_path):
    """While installed, ember's classes and functions say ``torch.<module>`` (libraries save
    ``__module__`` and trust only torch paths on reload); inspect and pickle still find them,
    and uninstall gives the ember names back."""
    script = tmp_path / "prog.py"
    script.write_text(textwrap.dedent("""
        import inspect, json, pickle, sys
        sys.path.insert(0, sys.argv[1])
        import ember, ember.as_torch
        from test_as_torch import _module_names
        ember.as_torch.install()
        import torch
        names = _module_names(torch)
        assert inspect.getsourcefile(torch.nn.Linear).endswith("linear.py")
        assert b"torch.nn.modules.linear" in pickle.dumps(torch.nn.Linear(2, 2))
        assert isinstance(pickle.loads(pickle.dumps(torch.nn.Linear(2, 2))), ember.nn.Linear)
        import torch.distributions.constraints  # imported after install: retagged as it loads
        assert torch.distributions.constraints.Constraint.__module__.startswith("torch.")
        ember.as_torch.uninstall()
        assert ember.nn.Linear.__module__ == "ember.nn.modules.linear"
        assert ember.float32.__module__ == "ember"
        print(json.dumps(names))
    """))
    import json
    mine = json.loads(_python(str(script), os.path.join(ROOT, "tests")).stdout)
    assert mine == _module_names(torch)


def test_spawned_children_import_ember(tmp_path):
    """spawn and forkserver children (Python 3.14's default) run the main module again: its
    ``import torch`` gives ember there too, for a Pool and for DataLoader workers."""
    (tmp_path / "prog.py").write_text(textwrap.dedent("""
        import sys
        import torch
        from torch.utils.data import DataLoader, Dataset

        class Rows(Dataset):
            def __len__(self):
                return 4

            def __getitem__(self, i):
                return torch.tensor([float(i), float(sys.modules.get("ember") is torch)])

        def which(_):
            import torch
            return sys.modules.get("ember") is torch

        if __name__ == "__main__":
            import multiprocessing as mp
            for method in ("spawn", "forkserver"):
                with mp.get_context(method).Pool(1) as p:
                    print(method, p.map(which, [0]))
                dl = DataLoader(Rows(), batch_size=2, num_workers=1,
                                multiprocessing_context=method)
                print(method, [b.tolist() for b in dl])
    """))
    out = _python("-m", "ember.as_torch", str(tmp_path / "prog.py")).stdout.splitlines()
    for i, method in enumerate(("spawn", "forkserver")):
        assert out[2 * i] == f"{method} [True]"
        assert out[2 * i + 1] == f"{method} [[[0.0, 1.0], [1.0, 1.0]], [[2.0, 1.0], [3.0, 1.0]]]"


def test_refuses_when_pytorch_is_already_imported(torch):
    assert sys.modules["torch"] is torch
    with pytest.raises(RuntimeError, match="already imported"):
        ember.as_torch.install()
    assert not ember.as_torch.is_installed()


@pytest.fixture(scope="module")
def hf_results(tmp_path_factory):
    """Every model of tests/_hf_models.py run in PyTorch here and in ember (one subprocess,
    PyTorch's weights): name -> (PyTorch's result, ember's)."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    import _hf_models
    directory = tmp_path_factory.mktemp("hf")
    names = list(_hf_models.MODELS)
    theirs = {}
    for name in names:
        state, theirs[name] = _hf_models.run(torch, transformers, name)
        np.savez(directory / f"{name}_weights.npz", **state)
    assert transformers  # (imported for the skip above)
    results = results_beside_pytorch("_hf_models.py", directory, theirs, timeout=300)
    for n in _hf_models.COMPILED:
        results[n + ":compiled"] = (
            {k: v for k, v in theirs[n].items() if k != "generated"},
            dict(np.load(directory / f"{n}_ember_compiled.npz")))
    return results


@pytest.mark.parametrize("name", ["gpt2", "llama", "mixtral", "bert", "t5", "whisper",
                                  "gpt2:compiled", "llama:compiled", "mixtral:compiled",
                                  "bert:compiled", "t5:compiled", "whisper:compiled"])
def test_transformers_model_matches_pytorch(hf_results, name):
    """Loss, logits, every parameter's gradient and greedy generation of a HuggingFace model
    equal PyTorch's (float32; attention through scaled_dot_product_attention). ``:compiled``:
    ember runs the model through ``torch.compile(model, fullgraph=True)`` (so the whole
    forward is one graph: no break in transformers' code), PyTorch eagerly."""
    theirs, mine = hf_results[name]
    assert sorted(mine) == sorted(theirs)  # the same parameters got gradients
    for key, ref in theirs.items():
        if ref.dtype.kind in "iu":
            np.testing.assert_array_equal(mine[key], ref, err_msg=key)
        else:
            # gradients that are zero in exact arithmetic (a key projection's bias under
            # softmax) are rounding noise in both libraries: the floor is relative to the loss
            np.testing.assert_allclose(mine[key], ref, rtol=2e-4, atol=2e-6, err_msg=key)
