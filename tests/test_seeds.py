"""The seeds' examples that the foundation covers, run with ``import ember as torch``, checked
against what the seeds say (and against PyTorch itself where it is installed)."""
import io

import pytest

import ember as torch_like


def test_seed002_section_3_2_three_views():
    torch = torch_like
    a = torch.arange(24, dtype=torch.float32).view(2, 3, 4)
    assert a.stride() == (12, 4, 1)
    b = a.transpose(0, 2)
    assert b.shape == torch.Size([4, 3, 2]) and b.stride() == (1, 4, 12)
    assert b.is_contiguous() is False
    assert b.data_ptr() == a.data_ptr()
    c = a.narrow(1, 1, 2)
    assert c.shape == torch.Size([2, 2, 4]) and c.stride() == (12, 4, 1) and c.storage_offset() == 4
    d = a.unsqueeze(0)
    assert d.shape == torch.Size([1, 2, 3, 4]) and d.stride()[1:] == (12, 4, 1)


def test_seed002_section_3_4_channels_last():
    torch = torch_like
    x = torch.empty(2, 3, 4, 5).contiguous(memory_format=torch.channels_last)
    assert x.shape == (2, 3, 4, 5) and x.stride() == (60, 1, 15, 3)
    assert not x.is_contiguous() and x.is_contiguous(memory_format=torch.channels_last)


def test_seed002_exercise_1_stride_sleuthing():
    torch = torch_like
    a = torch.arange(60).view(3, 4, 5)
    b = a.permute(2, 0, 1)
    assert a.shape == (3, 4, 5) and a.stride() == (20, 5, 1)
    assert b.shape == (5, 3, 4) and b.stride() == (1, 20, 5) and b.storage_offset() == 0
    assert not b.is_contiguous()


def test_seed003_section_6_dispatch_keys(torch):
    x = torch_like.randn(3, 3)
    assert str(x._dispatch_key_set()) == str(torch._C._dispatch_keys(torch.randn(3, 3)))
    y = x.detach()
    assert str(y._dispatch_key_set()) == str(torch._C._dispatch_keys(torch.randn(3, 3).detach()))
    table = torch_like._C._dispatch_dump("aten::addmm")
    assert table.startswith("name: aten::addmm\nschema: aten::addmm(Tensor self, Tensor mat1, "
                            "Tensor mat2, *, Scalar beta=1, Scalar alpha=1) -> Tensor")
    assert "CPU:" in table and "Meta:" in table


def test_seed002_in_place_through_view_changes_base():
    torch = torch_like
    x = torch.zeros(4)
    y = x[:2]
    y.add_(2)
    assert x.tolist() == [2.0, 2.0, 0.0, 0.0]
    assert x._version == y._version == 1
