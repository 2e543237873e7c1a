"""Small models of e3nn, timm, x-transformers, vector-quantize-pytorch and entmax compiled with
``torch.compile`` (Inductor, graph breaks allowed), run the same way in PyTorch and in ember
(through ``ember.as_torch``): tests/test_compile_libs.py runs
``python tests/_compile_libs_programs.py torch DIR NAMES`` and
``python -m ember.as_torch tests/_compile_libs_programs.py ember DIR NAMES`` side by side
(``helpers.pytorch_beside_ember``), and each writes DIR/NAME_<library>.npz: the eager and the
compiled program's outputs and gradients, and the graphs and graph breaks that
``torch._dynamo.explain`` counts in it.

Every case seeds torch's generator itself (ember's CPU generator draws PyTorch's numbers, so the
initial weights are the same on both sides); inputs are fixed NumPy arrays."""
import os
import sys

import numpy as np


def _x(rs, *shape):
    return rs.randn(*shape).astype(np.float32)


def _run(torch, model, inputs, loss_fn=lambda out: out.float().pow(2).sum()):
    """The program ``loss_fn(model(*inputs))`` with its backward, eagerly and compiled: the
    outputs, the gradients of the parameters and of the floating inputs, and the explain
    counts."""
    result = {}
    floating = [i for i, t in enumerate(inputs) if t.is_floating_point()]
    # each run starts from the same parameters and buffers (a codebook's moving averages)
    state = {k: v.clone() for k, v in model.state_dict().items()}

    def step(fn, prefix):
        model.load_state_dict(state)
        args = [t.detach().clone().requires_grad_(i in floating) for i, t in enumerate(inputs)]
        for p in model.parameters():
            p.grad = None
        out = fn(*args)
        loss_fn(out).backward()
        outs = out if isinstance(out, (tuple, list)) else (out,)
        for i, o in enumerate(outs):
            if isinstance(o, torch.Tensor):
                result[f"{prefix}.out{i}"] = o.detach().float().numpy()
        for name, p in model.named_parameters():
            if p.grad is not None:
                result[f"{prefix}.grad.{name}"] = p.grad.numpy().copy()
        for i in floating:
            result[f"{prefix}.grad.input{i}"] = args[i].grad.numpy().copy()

    step(model, "eager")
    explained = torch._dynamo.explain(model)(*inputs)
    result["graph_count"] = np.array(explained.graph_count)
    result["graph_break_count"] = np.array(explained.graph_break_count)
    torch._dynamo.reset()
    step(torch.compile(model), "compiled")
    return result


def _e3nn(torch):
    """An o3.Linear and a FullyConnectedTensorProduct (e3nn builds both as torch.fx
    GraphModules, whose ``__call__`` Dynamo inlines)."""
    from e3nn import o3
    rs = np.random.RandomState(0)
    torch.manual_seed(0)

    class Block(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = o3.Linear("2x0e + 1x1o", "3x0e + 2x1o")
            self.tp = o3.FullyConnectedTensorProduct("3x0e + 2x1o", "1x0e + 1x1o", "2x0e + 1x1e")

        def forward(self, x, y):
            return self.tp(self.lin(x), y)

    return _run(torch, Block(), [torch.from_numpy(_x(rs, 6, 5)), torch.from_numpy(_x(rs, 6, 4))])


def _timm(torch):
    """timm's resnet10t (deep stem, average-pool downsampling, batch norms in training mode)
    on 32x32 images."""
    import timm
    rs = np.random.RandomState(0)
    torch.manual_seed(0)
    model = timm.create_model("resnet10t", pretrained=False, num_classes=5)
    return _run(torch, model, [torch.from_numpy(_x(rs, 2, 3, 32, 32))])


def _x_transformers(torch):
    """An x-transformers TransformerWrapper: token and absolute position embeddings, a
    two-layer causal decoder, logits."""
    from x_transformers import Decoder, TransformerWrapper
    rs = np.random.RandomState(0)
    torch.manual_seed(0)
    model = TransformerWrapper(num_tokens=20, max_seq_len=16,
                               attn_layers=Decoder(dim=16, depth=2, heads=2))
    return _run(torch, model, [torch.from_numpy(rs.randint(0, 20, (2, 12)))])


def _vector_quantize(torch):
    """lucidrains' VectorQuantize in training mode: nearest codes, the commitment loss and the
    codebook's exponential moving averages (buffers written in place)."""
    from vector_quantize_pytorch import VectorQuantize
    rs = np.random.RandomState(0)
    torch.manual_seed(0)
    model = VectorQuantize(dim=8, codebook_size=16, decay=0.8, commitment_weight=1.0)
    return _run(torch, model, [torch.from_numpy(_x(rs, 2, 10, 8))],
                loss_fn=lambda out: out[0].pow(2).sum() + out[2].sum())


def _entmax(torch):
    """entmax's sort-based 1.5-entmax and sparsemax and its bisection entmax (custom autograd
    Functions: sorting, cumulative sums, thresholds, a bisection loop) on a linear layer's
    scores."""
    import entmax
    rs = np.random.RandomState(0)

    class Head(torch.nn.Module):
        def __init__(self):
            super().__init__()
            torch.manual_seed(0)
            self.proj = torch.nn.Linear(6, 7)

        def forward(self, x):
            z = self.proj(x)
            return (entmax.entmax15(z, dim=-1), entmax.sparsemax(z, dim=-1),
                    entmax.entmax_bisect(z, alpha=1.7, dim=-1, n_iter=30))

    weight = torch.from_numpy(_x(rs, 5, 7))
    return _run(torch, Head(), [torch.from_numpy(_x(rs, 5, 6))],
                loss_fn=lambda out: sum((p * weight).sum() for p in out))


CASES = {"e3nn": _e3nn, "timm": _timm, "x_transformers": _x_transformers,
         "vector_quantize": _vector_quantize, "entmax": _entmax}


def run(torch, name):
    """Case ``name``'s results, as arrays keyed by name."""
    return {k: np.asarray(v) for k, v in CASES[name](torch).items()}


if __name__ == "__main__":
    library, directory, names = sys.argv[1], sys.argv[2], sys.argv[3].split(",")
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import _torchvision_schemas
    _torchvision_schemas.install()  # (timm imports torchvision)
    import torch
    # under ember.as_torch, torch *is* the ember module
    assert (sys.modules.get("ember") is torch) == (library == "ember"), library
    for name in names:
        np.savez(os.path.join(directory, f"{name}_{library}.npz"), **run(torch, name))
