"""The PyTorch names and behaviours that libraries built on torch (PyTorch Lightning,
torchmetrics) reach for, each as PyTorch has it: found while running Lightning on ember."""
import os
import subprocess
import sys
import textwrap
from datetime import timedelta
from importlib import import_module

import numpy as np
import pytest

import ember
import ember.distributed.constants
import ember.utils.data
from ember.utils.data import dataloader

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_data_exports_distributed_sampler_and_iterator_classes(torch):
    assert ember.utils.data.DistributedSampler is \
        ember.utils.data.distributed.DistributedSampler
    assert "DistributedSampler" in torch.utils.data.__all__
    ds = ember.utils.data.TensorDataset(ember.arange(4.0))
    tds = torch.utils.data.TensorDataset(torch.arange(4.0))
    for lib, mod, d in ((ember, dataloader, ds), (torch, torch.utils.data.dataloader, tds)):
        it = iter(lib.utils.data.DataLoader(d, batch_size=2))
        assert type(it) is mod._SingleProcessDataLoaderIter
        assert isinstance(it, mod._BaseDataLoaderIter)
        assert issubclass(mod._MultiProcessingDataLoaderIter, mod._BaseDataLoaderIter)


def test_tensor_metaclass(torch):
    assert type(ember.Tensor) is ember._C._TensorMeta
    assert type(torch.Tensor) is torch._C._TensorMeta
    assert isinstance(ember.nn.Parameter, ember._C._TensorMeta)
    assert isinstance(torch.nn.Parameter, torch._C._TensorMeta)


@pytest.mark.parametrize("args,kwargs", [
    (("cpu",), {}), (("float64",), {}), (("cpu", "float16"), {"non_blocking": True}),
    (("tensor_int32",), {}), ((), {"memory_format": "channels_last"}),
    ((), {"device": "cpu"}), ((), {}), (("cpu", "cpu"), {}), (("cpu", 1), {}),
    (("cpu",), {"copy": False}),
])
def test_parse_to(torch, args, kwargs):
    """``_C._nn._parse_to``: Module.to's argument reader, which Lightning calls itself."""
    def resolve(lib, v):
        if v == "tensor_int32":
            return lib.ones(2, dtype=lib.int32)
        return getattr(lib, v) if v in ("float64", "float16", "channels_last") else v

    def parse(lib):
        a = [resolve(lib, v) for v in args]
        kw = {k: resolve(lib, v) for k, v in kwargs.items()}
        try:
            return [None if v is None else str(v).split(".")[-1]
                    for v in lib._C._nn._parse_to(*a, **kw)]
        except (TypeError, RuntimeError) as e:
            return type(e), str(e).split(" - ")[0]

    assert parse(ember) == parse(torch)


def test_script_module_and_function_types(torch):
    """``torch.ScriptModule`` is the C++ object under a scripted module, not
    ``torch.jit.ScriptModule``: no Python module is one; ``torch.ScriptFunction`` is jit's."""
    assert ember.ScriptModule is ember._C.ScriptModule
    assert ember.ScriptFunction is ember.jit.ScriptFunction
    assert torch.ScriptFunction is torch.jit.ScriptFunction
    for lib in (ember, torch):
        scripted = lib.jit.script(lib.nn.Linear(2, 2))
        assert isinstance(scripted, lib.jit.ScriptModule)
        assert not isinstance(scripted, lib.ScriptModule)
        with pytest.raises(TypeError, match="incompatible constructor arguments"):
            lib.ScriptModule()


def test_file_reader_reads_pytorch_and_ember_checkpoints(torch, tmp_path):
    """``torch.PyTorchFileReader``: a checkpoint's records by name; on PyTorch's file ember's
    reader gives PyTorch's answers, and PyTorch's reads ember's file."""
    theirs = tmp_path / "t.pt"
    torch.save({"w": torch.arange(6.0).reshape(2, 3), "n": 3}, theirs)
    ref, got = torch.PyTorchFileReader(str(theirs)), ember.PyTorchFileReader(str(theirs))
    assert got.get_all_records() == ref.get_all_records()
    for name in ref.get_all_records():
        assert got.get_record(name) == ref.get_record(name)
        assert got.get_record_size(name) == ref.get_record_size(name)
        assert got.get_record_offset(name) == ref.get_record_offset(name)
    assert got.has_record("data.pkl") and not got.has_record("nope")
    assert got.serialization_id() == ref.serialization_id()
    for reader in (ref, got):
        with pytest.raises(RuntimeError, match="PytorchStreamReader failed locating file nope"):
            reader.get_record("nope")
    with pytest.raises(RuntimeError, match="No such file or directory"):
        ember.PyTorchFileReader(str(tmp_path / "missing.pt"))
    mine = tmp_path / "e.pt"
    ember.save({"w": ember.arange(6.0).reshape(2, 3)}, mine)
    ref, got = torch.PyTorchFileReader(str(mine)), ember.PyTorchFileReader(open(mine, "rb"))
    assert got.get_all_records() == ref.get_all_records()
    assert got.get_record("data/0") == ref.get_record("data/0") == \
        torch.arange(6.0).numpy().tobytes()
    assert got.get_record_offset("data/0") == ref.get_record_offset("data/0")


def test_profiler_kineto_and_emit_nvtx(torch):
    assert ember.profiler.kineto_available() is torch.profiler.kineto_available() is True
    for lib in (ember, torch):
        with lib.autograd.profiler.emit_nvtx(enabled=False):  # does nothing
            assert (lib.ones(2) + 1).sum().item() == 4.0
    with pytest.raises(RuntimeError, match="no NVTX library"):
        with ember.autograd.profiler.emit_nvtx():
            pass


def test_distributed_constants(torch):
    import torch.distributed.constants as theirs
    assert ember.distributed.constants.__all__ == theirs.__all__
    assert ember.distributed.constants.default_pg_timeout == theirs.default_pg_timeout \
        == timedelta(minutes=30)
    if not ember.distributed.is_nccl_available() and not torch.distributed.is_nccl_available():
        assert ember.distributed.constants.default_pg_nccl_timeout is None
        assert theirs.default_pg_nccl_timeout is None


def test_as_torch_submodule_of_replaced_module_and_version(tmp_path):
    """``import torch.backends.cudnn`` under the alias (``ember.backends`` replaces itself in
    sys.modules with a module object without ``__spec__``, as PyTorch's does), and
    ``torch.__version__`` reporting the PyTorch release while installed, ember's after."""
    script = tmp_path / "prog.py"
    script.write_text(textwrap.dedent("""
        import ember.as_torch, ember
        ours = ember.__version__
        ember.as_torch.install()
        import torch, torch.backends.cudnn, torch.version
        assert torch.backends.cudnn is ember.backends.cudnn
        assert torch.__version__ == torch.version.__version__ == ember.version.pytorch_api
        ember.as_torch.uninstall()
        assert ember.__version__ == ember.version.__version__ == ours
        print("ok")
    """))
    p = subprocess.run([sys.executable, str(script)], cwd=ROOT, capture_output=True, text=True,
                       timeout=300)
    assert p.stdout.strip() == "ok", p.stderr[-3000:]


def test_backend_device_maps(torch):
    ours, theirs = ember.distributed.Backend, torch.distributed.Backend
    for device in ("cpu", "cuda"):
        assert ours.default_device_backend_map[device] == \
            theirs.default_device_backend_map[device]
    for name, devices in ours.backend_capability.items():
        assert devices == theirs.backend_capability[name]


def test_post_local_sgd_hook(worlds):
    """Global all-reduce for ``start_localSGD_iter`` iterations (counted on the last bucket),
    then none without ``post_local_gradient_allreduce``: the gradients and the count as
    PyTorch's, on one rank."""
    torch = worlds
    w = np.arange(6, dtype=np.float32).reshape(2, 3) / 10
    results = []
    for lib in (ember, torch):
        hooks = import_module(f"{lib.__name__}.distributed.algorithms.ddp_comm_hooks."
                              f"post_localSGD_hook")
        model = lib.nn.Linear(3, 2, bias=False)
        with lib.no_grad():
            model.weight.copy_(lib.from_numpy(w))
        ddp = lib.nn.parallel.DistributedDataParallel(model)
        state = hooks.PostLocalSGDState(None, None, start_localSGD_iter=2,
                                        post_local_gradient_allreduce=False)
        ddp.register_comm_hook(state, hooks.post_localSGD_hook)
        grads = []
        for step in range(3):
            ddp.zero_grad()
            ddp(lib.ones(4, 3) * (step + 1)).pow(2).sum().backward()
            grads.append(model.weight.grad.numpy().copy())
        results.append((state.iter, grads))
    (it, mine), (their_it, theirs) = results
    assert it == their_it == 2
    np.testing.assert_allclose(np.stack(mine), np.stack(theirs), rtol=1e-6)
