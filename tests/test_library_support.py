"""The small parts of PyTorch's surface that libraries (PyTorch Geometric, kornia) check before
they compute, against PyTorch: ``torch.torch``, ``torch.distributed.rpc.is_available``,
``torch.distributed.autograd`` (torchopt), ``torch.SymFloat``, ``torch._C._are_functorch_transforms_active``,
``torch._subclasses.fake_tensor.is_fake``, ``torch.fx.experimental.proxy_tensor.get_proxy_mode``,
and the printed forms of dtypes, layouts and sizes under ``ember.as_torch``."""
import os
import subprocess
import sys
import textwrap

import pytest

import ember
import ember.distributed.autograd
import ember.distributed.rpc
from ember._subclasses.fake_tensor import FakeTensorMode, is_fake
from ember.fx.experimental.proxy_tensor import get_proxy_mode, make_fx

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_module_attributes(torch):
    assert torch.torch is torch and ember.torch is ember
    assert isinstance(ember.distributed.rpc.is_available(), bool)
    assert ember.distributed.rpc.is_available() is False  # ember has no RPC framework
    # and so no distributed autograd: its context cannot open (in a PyTorch build without RPC
    # it fails too, on the missing _new_context)
    assert ember.distributed.autograd.is_available() is False
    with pytest.raises(RuntimeError, match="no RPC framework"):
        with ember.distributed.autograd.context():
            pass
    for lib in (ember, torch):
        assert not isinstance(1.5, lib.SymFloat) and not isinstance(3, lib.SymFloat)


def test_are_functorch_transforms_active(torch):
    for lib in (ember, torch):
        seen = []

        def f(x):
            seen.append(lib._C._are_functorch_transforms_active())
            return x.sin().sum()
        f(lib.ones(2))
        lib.func.grad(f)(lib.ones(2))
        lib.vmap(f)(lib.ones(2, 3))
        assert seen == [False, True, True]
        assert lib._C._are_functorch_transforms_active() is False


def test_is_fake_and_get_proxy_mode(torch):
    from torch._subclasses.fake_tensor import FakeTensorMode as TorchFakeTensorMode
    from torch._subclasses.fake_tensor import is_fake as torch_is_fake
    from torch.fx.experimental.proxy_tensor import get_proxy_mode as torch_get_proxy_mode
    from torch.fx.experimental.proxy_tensor import make_fx as torch_make_fx
    for lib, mode_cls, fake_test, proxy_mode, trace in (
            (ember, FakeTensorMode, is_fake, get_proxy_mode, make_fx),
            (torch, TorchFakeTensorMode, torch_is_fake, torch_get_proxy_mode, torch_make_fx)):
        real = lib.ones(2)
        with mode_cls() as mode:
            fake = mode.from_tensor(real)
        assert fake_test(fake) and not fake_test(real) and not fake_test(2.0)
        seen = []

        def f(x):
            seen.append(proxy_mode() is not None)
            return x * 2
        f(real)
        trace(f)(real)
        assert seen == [False, True] and proxy_mode() is None


def test_printed_names_under_as_torch(tmp_path):
    """A program that imports ember as ``torch`` sees PyTorch's printed forms (PyG compares
    ``str(layout) == 'torch.sparse_coo'``); plain ember keeps its own name."""
    script = tmp_path / "prog.py"
    script.write_text(textwrap.dedent("""
        import sys
        import torch
        assert torch is sys.modules["ember"] and torch.__name__ == "torch"
        print(torch.float32, torch.sparse_coo, torch.channels_last, torch.ones(2).shape,
              repr(torch.ones(1, dtype=torch.int32)))
        import ember.as_torch
        ember.as_torch.uninstall()
        print(torch.float32, torch.ones(2).shape, torch.__name__)
    """))
    p = subprocess.run([sys.executable, "-m", "ember.as_torch", str(script)], cwd=ROOT,
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert p.stdout.splitlines() == [
        "torch.float32 torch.sparse_coo torch.channels_last torch.Size([2]) "
        "tensor([1], dtype=torch.int32)",
        "ember.float32 ember.Size([2]) ember"]
    assert repr(ember.float32) == "ember.float32" and str(ember.Size([1])) == "ember.Size([1])"
