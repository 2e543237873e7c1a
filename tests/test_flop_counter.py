"""ember.utils.flop_counter against PyTorch: total and per-module counts of the same models
(Linear MLP and conv net, forward and backward; bmm/baddbmm/mm; the attention ops on meta
tensors), the printed table (PyTorch's text with tabulate 0.9, which keeps the modules'
indentation), and registration of formulas."""
import pytest

import ember
from ember.utils.flop_counter import FlopCounterMode, register_flop_formula


def counts(fc):
    """{module: {op name: count}}, comparable across the two libraries."""
    return {mod: {str(op): n for op, n in ops.items()} for mod, ops in fc.get_flop_counts().items()}


def run_both(torch, build, step):
    """``step(lib, model)`` under each library's FlopCounterMode; models built from one seed."""
    from torch.utils.flop_counter import FlopCounterMode as TorchFCM
    result = []
    for lib, fcm in ((torch, TorchFCM), (ember, FlopCounterMode)):
        lib.manual_seed(0)
        model = build(lib)
        with fcm(display=False) as fc:
            step(lib, model)
        result.append(fc)
    return result


def mlp(lib):
    nn = lib.nn
    return nn.Sequential(nn.Linear(16, 32), nn.ReLU(),
                         nn.Sequential(nn.Linear(32, 8), nn.Linear(8, 4)))


def convnet(lib):
    nn = lib.nn
    return nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(),
                         nn.ConvTranspose2d(8, 4, 3, stride=2), nn.Flatten(),
                         nn.Linear(4 * 17 * 17, 10))


def fwd_bwd(shape):
    def step(lib, model):
        x = lib.randn(*shape, requires_grad=True)
        model(x).sum().backward()
    return step


@pytest.mark.parametrize("build,shape", [(mlp, (4, 16)), (convnet, (2, 3, 8, 8))])
def test_model_counts_match_pytorch(torch, build, shape):
    t, e = run_both(torch, build, fwd_bwd(shape))
    assert e.get_total_flops() == t.get_total_flops() > 0
    assert counts(e) == counts(t)


def test_linear_mlp_numbers():
    ember.manual_seed(0)
    model = mlp(ember)
    with FlopCounterMode(display=False) as fc:
        model(ember.randn(4, 16, requires_grad=True)).sum().backward()
    # forward 2*4*(16*32 + 32*8 + 8*4); backward twice that (grad input and grad weight), except
    # the first layer's input gradient (x requires grad, so it is computed too)
    fwd = 2 * 4 * (16 * 32 + 32 * 8 + 8 * 4)
    assert fc.get_total_flops() == 3 * fwd
    assert counts(fc)["Sequential.2.1"] == {"aten.addmm": 2 * 4 * 8 * 4, "aten.mm": 4 * 4 * 8 * 4}


def test_matmul_ops_match_pytorch(torch):
    def step(lib, _):
        a, b = lib.randn(3, 4, 5), lib.randn(3, 5, 6)
        lib.bmm(a, b)
        lib.baddbmm(lib.randn(3, 4, 6), a, b)
        lib.mm(a[0], b[0])
        lib.addmm(lib.randn(4, 6), a[0], b[0])
        a @ b  # matmul decomposes to bmm
    t, e = run_both(torch, lambda lib: None, step)
    assert counts(e) == counts(t)
    assert counts(e)["Global"] == {"aten.bmm": 1440, "aten.baddbmm": 720, "aten.mm": 240,
                                   "aten.addmm": 240}


def test_attention_ops_match_pytorch(torch):
    # the flash / memory-efficient kernels are CUDA ops: meta tensors run them anywhere
    def step(lib, _):
        q = lib.randn(2, 4, 6, 8, device="meta", requires_grad=True)
        k = lib.randn(2, 4, 10, 8, device="meta", requires_grad=True)
        v = lib.randn(2, 4, 10, 8, device="meta", requires_grad=True)
        out = lib.ops.aten._scaled_dot_product_efficient_attention(q, k, v, None, True)
        out[0].sum().backward()
        out = lib.ops.aten._scaled_dot_product_flash_attention(q, k, v)
        out[0].sum().backward()
    t, e = run_both(torch, lambda lib: None, step)
    assert counts(e) == counts(t)
    g = counts(e)["Global"]
    assert g["aten._scaled_dot_product_efficient_attention"] == 2 * (2 * 4) * 6 * 10 * 8 * 2
    assert g["aten._scaled_dot_product_flash_attention_backward"] == 5 * 2 * 8 * 6 * 10 * 8


def test_cpu_sdpa_matches_pytorch(torch):
    # on the CPU both dispatch the flash kernel "for_cpu", which has no formula in PyTorch
    def step(lib, _):
        q = lib.randn(2, 3, 5, 8, requires_grad=True)
        lib.nn.functional.scaled_dot_product_attention(q, q, q).sum().backward()
    t, e = run_both(torch, lambda lib: None, step)
    assert counts(e) == counts(t)
    assert e.get_total_flops() == t.get_total_flops()


class _Block:
    @staticmethod
    def build(lib):
        nn = lib.nn

        class Block(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc1 = nn.Linear(16, 32)
                self.fc2 = nn.Linear(32, 16)

            def forward(self, x):
                return self.fc2(self.fc1(x).relu())

        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.block = Block()
                self.head = nn.Linear(16, 4)

            def forward(self, x):
                return self.head(self.block(x))
        return Net()


# PyTorch 2.13's get_table for _Block (tabulate 0.9): flops outside any module put "Global" first
NET_TABLE_1 = """\
Module             FLOP    % Total
--------------  -------  ---------
Global          52.736K    100.00%
 - aten.addmm   17.408K     33.01%
 - aten.mm      35.328K     66.99%
 Net            52.224K     99.03%
  - aten.addmm  17.408K     33.01%
  - aten.mm     34.816K     66.02%"""

NET_TABLE_3 = """\
Module               FLOP    % Total
----------------  -------  ---------
Global            52.736K    100.00%
 - aten.addmm     17.408K     33.01%
 - aten.mm        35.328K     66.99%
 Net              52.224K     99.03%
  - aten.addmm    17.408K     33.01%
  - aten.mm       34.816K     66.02%
  Net.block       49.152K     93.20%
   - aten.addmm   16.384K     31.07%
   - aten.mm      32.768K     62.14%
   Net.block.fc1  24.576K     46.60%
    - aten.addmm   8.192K     15.53%
    - aten.mm     16.384K     31.07%
   Net.block.fc2  24.576K     46.60%
    - aten.addmm   8.192K     15.53%
    - aten.mm     16.384K     31.07%
  Net.head         3.072K      5.83%
   - aten.addmm    1.024K      1.94%
   - aten.mm       2.048K      3.88%"""


def test_table_matches_pytorch(torch):
    def step(lib, net):
        y = net(lib.randn(8, 16, requires_grad=True))
        (y @ lib.randn(4, 4)).sum().backward()
    t, e = run_both(torch, _Block.build, step)
    assert counts(e) == counts(t)
    assert e.get_table(1) == NET_TABLE_1
    assert e.get_table(3) == NET_TABLE_3
    assert e.get_table() == e.get_table(2)  # the mode's depth
    lines = e.get_table(2).splitlines()
    assert [line.split()[0] for line in lines[2:]] == [
        "Global", "-", "-", "Net", "-", "-", "Net.block", "-", "-", "Net.head", "-", "-"]


def test_table_small_and_empty_counts(capsys):
    with FlopCounterMode() as fc:
        pass
    assert capsys.readouterr().out == ("Module      FLOP    % Total\n"
                                       "--------  ------  ---------\n"
                                       "Global         0         0%\n")
    with FlopCounterMode(display=False) as fc:
        ember.mm(ember.randn(2, 3), ember.randn(3, 4))
    assert capsys.readouterr().out == ""
    # under 10000 flops the numbers have no suffix, and tabulate reprints them with "g"
    assert fc.get_table() == ("Module        FLOP    % Total\n"
                              "----------  ------  ---------\n"
                              "Global          48    100.00%\n"
                              " - aten.mm      48    100.00%")


def test_custom_mapping_and_register_formula():
    aten = ember.ops.aten

    def relu_flop(x_shape, out_shape=None, **kwargs):
        return x_shape[0] * x_shape[1]

    with FlopCounterMode(display=False, custom_mapping={aten.relu: relu_flop}) as fc:
        ember.relu(ember.randn(3, 5))
        ember.mm(ember.randn(2, 3), ember.randn(3, 4))
    assert counts(fc)["Global"] == {"aten.relu": 15, "aten.mm": 48}

    with pytest.raises(ValueError, match="expected each target to be OpOverloadPacket"):
        register_flop_formula(aten.relu.default)(relu_flop)
    with pytest.raises(RuntimeError, match="duplicate registrations for aten.mm"):
        register_flop_formula(aten.mm)(relu_flop)
    with pytest.warns(UserWarning, match="mods argument is not needed anymore"):
        FlopCounterMode(ember.nn.Linear(2, 2))


def test_raw_formula_gets_values():
    from ember.utils import flop_counter
    aten = ember.ops.aten
    seen = []

    @register_flop_formula(aten.dot, get_raw=True)
    def dot_flop(a, b, *args, out_val=None, **kwargs):
        seen.append((type(a).__name__, tuple(out_val.shape)))
        return 2 * a.numel()
    try:
        with FlopCounterMode(display=False) as fc:
            ember.dot(ember.randn(5), ember.randn(5))
        assert fc.get_total_flops() == 10
        assert seen == [("Tensor", ())]
    finally:
        del flop_counter.flop_registry[aten.dot]


def test_cuda_sdpa_counts_attention_kernel(cuda_device):
    # on CUDA, scaled_dot_product_attention runs the memory-efficient kernel, whose formula
    # gives the counts test_attention_ops_match_pytorch checks against PyTorch
    q = ember.randn(2, 4, 6, 8, device="cuda", requires_grad=True)
    k = ember.randn(2, 4, 10, 8, device="cuda", requires_grad=True)
    with FlopCounterMode(display=False) as fc:
        ember.nn.functional.scaled_dot_product_attention(q, k, k).sum().backward()
    assert counts(fc) == {"Global": {
        "aten._scaled_dot_product_efficient_attention": 2 * (2 * 4) * 6 * 10 * 8 * 2,
        "aten._scaled_dot_product_efficient_attention_backward": 5 * 2 * 8 * 6 * 10 * 8}}
