"""``ember.version``, as ``torch.version``: the release this tree is (``pyproject.toml``'s)."""
from .torch_version import TorchVersion

__version__ = TorchVersion("0.1.0")
# The PyTorch release whose API and behaviour ember follows (its tests' oracle): the version
# ``ember.as_torch`` reports for the ``torch`` distribution, which libraries check.
pytorch_api = "2.13.0"

# What a CPU build of PyTorch reports: no CUDA/HIP it was compiled against (ember's CUDA is
# CuPy's, found at run time: ``cuda`` then names the CUDA runtime CuPy uses).
hip = None
debug = False
git_version = "Unknown"


def __getattr__(name):
    if name == "cuda":
        try:
            import cupy
        except ImportError:
            return None
        v = cupy.cuda.runtime.runtimeGetVersion()
        return f"{v // 1000}.{v % 1000 // 10}"
    raise AttributeError(f"module 'ember.version' has no attribute '{name}'")
