"""Shared test fixtures. PyTorch is the oracle: tests that compare with it take the ``torch``
fixture and are skipped when it is not installed."""
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))

import _torchvision_schemas  # noqa: E402


def _no_gpu():
    try:
        import cupy
        return cupy.cuda.runtime.getDeviceCount() == 0
    except Exception:  # noqa: BLE001  (no CuPy, no driver, no device)
        return True


# Without a GPU, Triton kernels run under Triton's interpreter. Triton reads the switch when a
# kernel is decorated, its own library's kernels (tl.max, tl.sum, ...) included, so it is set
# before anything imports Triton.
if _no_gpu():
    os.environ.setdefault("TRITON_INTERPRET", "1")


@pytest.fixture(scope="session")
def torch():
    return pytest.importorskip("torch")


_torchvision_schemas.install()  # (see tests/_torchvision_schemas.py)


@pytest.fixture
def world(monkeypatch):
    """ember's default process group over one rank, for the test."""
    import ember.distributed as dist
    monkeypatch.setenv("RANK", "0")
    monkeypatch.setenv("WORLD_SIZE", "1")
    dist.init_process_group("gloo")
    yield
    dist.destroy_process_group()


@pytest.fixture
def worlds(world, torch):
    """ember's and PyTorch's 1-rank process groups side by side; gives PyTorch."""
    tdist = torch.distributed
    tdist.init_process_group("gloo", store=tdist.HashStore(), rank=0, world_size=1)
    yield torch
    tdist.destroy_process_group()


@pytest.fixture(scope="module")
def cuda_device():
    """A CUDA device for a test module: the real GPU when one is here (and the simulation is
    not asked for), else the simulated device, started for the module and forgotten after it so
    that later modules see this machine as it is (no CUDA)."""
    from helpers import real_gpu, simulated_cuda
    if real_gpu():
        yield "gpu"
        return
    with simulated_cuda():
        yield "simulated"


def pytest_collection_modifyitems(config, items):
    try:
        import cupy  # noqa: F401
        has_cuda = cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:
        has_cuda = False
    if not has_cuda:
        skip = pytest.mark.skip(reason="no CUDA device")
        for item in items:
            if item.get_closest_marker("cuda") is not None:
                item.add_marker(skip)
