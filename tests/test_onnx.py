"""ember.onnx.export: models exported to ONNX run in ONNX Runtime as ember runs them eagerly;
the model passes onnx.checker; names, dynamic axes, saving and unsupported ops as PyTorch's."""
import io
import subprocess
import sys

import numpy as np
import pytest

import ember
import ember.nn as nn
import ember.nn.functional as F

onnx = pytest.importorskip("onnx", reason="ember.onnx.export needs the onnx package")
ort = pytest.importorskip("onnxruntime", reason="running exported models needs onnxruntime")


def _run(program, *args):
    session = ort.InferenceSession(program.model_proto.SerializeToString(),
                                   providers=["CPUExecutionProvider"])
    return session.run(None, {i.name: x.numpy() for i, x in zip(session.get_inputs(), args)})


def _check(model, args, *, atol=1e-5, other_args=(), **kw):
    """Export, check the model, and compare ONNX Runtime with ember's eager outputs on
    ``args`` and on each of ``other_args`` (other sizes along the dynamic axes)."""
    program = ember.onnx.export(model, args, **kw)
    onnx.checker.check_model(program.model_proto, full_check=True)
    for a in (args, *other_args):
        expect = model(*a)
        expect = expect if isinstance(expect, tuple) else (expect,)
        got = _run(program, *a)
        assert len(got) == len(expect)
        for g, e in zip(got, expect):
            e = e.detach().numpy()
            assert g.shape == e.shape and g.dtype == e.dtype
            np.testing.assert_allclose(g, e, atol=atol, rtol=1e-5)
    return program


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(4, 16), nn.Linear(16, 3)

    def forward(self, x):
        return F.log_softmax(self.fc2(F.silu(self.fc1(x))), dim=-1)


class CNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 6, 3, padding=1)
        self.bn = nn.BatchNorm2d(6)
        self.conv1d = nn.Conv1d(6, 4, 3, stride=2, padding=1)
        self.fc = nn.Linear(8, 5)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.bn(self.conv(x))), 2)
        y = F.avg_pool2d(x, 2)
        g = F.adaptive_avg_pool2d(x, 1)
        z = self.conv1d(torch_flatten(x, 2))  # (N, 4, 8)
        return self.fc(F.dropout(z, 0.5, self.training)).sum(1) + g.flatten(1).mean(1, True) \
            + y.amax(dim=(1, 2, 3)).unsqueeze(1)


def torch_flatten(x, start):
    return ember.flatten(x, start)


class Block(nn.Module):
    """A GPT-like block: token and position embeddings, pre-LN causal attention, GELU MLP."""

    def __init__(self, vocab=11, dim=8, heads=2):
        super().__init__()
        self.heads = heads
        self.tok, self.pos = nn.Embedding(vocab, dim), nn.Embedding(16, dim)
        self.ln1, self.ln2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.qkv, self.proj = nn.Linear(dim, 3 * dim), nn.Linear(dim, dim)
        self.up, self.down = nn.Linear(dim, 4 * dim), nn.Linear(4 * dim, dim)
        self.head = nn.Linear(dim, vocab, bias=False)

    def forward(self, idx):
        B, T = idx.shape
        x = self.tok(idx) + self.pos(ember.arange(T))
        q, k, v = self.qkv(self.ln1(x)).split(x.shape[-1], dim=2)
        q, k, v = (t.view(B, T, self.heads, -1).transpose(1, 2) for t in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(y.transpose(1, 2).contiguous().view(B, T, -1))
        x = x + self.down(F.gelu(self.up(self.ln2(x)), approximate="tanh"))
        return self.head(x)


def test_mlp():
    ember.manual_seed(0)
    _check(MLP(), (ember.randn(2, 4),))


def test_cnn_eval():
    ember.manual_seed(0)
    model = CNN()
    model.bn.running_mean.uniform_()
    model.bn.running_var.uniform_(0.5, 2.0)
    model.eval()
    program = _check(model, (ember.randn(2, 3, 8, 8),), other_args=[(ember.randn(5, 3, 8, 8),)],
                     dynamic_axes={"x": {0: "batch"}})
    ops = {n.op_type for n in program.model_proto.graph.node}
    assert {"Conv", "MaxPool", "AveragePool", "GlobalAveragePool", "Gemm"} <= ops


def test_gpt_block_dynamic_batch_and_sequence():
    ember.manual_seed(0)
    model = Block()
    program = _check(model, (ember.randint(0, 11, (2, 5)),),
                     other_args=[(ember.randint(0, 11, (3, 7)),)],
                     input_names=["tokens"], output_names=["logits"],
                     dynamic_axes={"tokens": {0: "batch", 1: "seq"}, "logits": {0: "batch"}})
    graph = program.model_proto.graph
    dims = lambda v: [d.dim_param or d.dim_value for d in v.type.tensor_type.shape.dim]  # noqa
    assert [i.name for i in graph.input] == ["tokens"]
    assert [o.name for o in graph.output] == ["logits"]
    assert dims(graph.input[0]) == ["batch", "seq"]
    assert dims(graph.output[0]) == ["batch", "seq", 11]
    # the weights are initializers under their state-dict names; no input is a weight
    names = {t.name for t in graph.initializer}
    assert {"tok.weight", "pos.weight", "ln1.weight"} <= names


def test_mlp_dynamic_batch_and_list_axes():
    ember.manual_seed(0)
    program = _check(MLP(), (ember.randn(2, 4),), other_args=[(ember.randn(7, 4),)],
                     input_names=["x"], output_names=["y"], dynamic_axes={"x": [0], "y": [0]})
    graph = program.model_proto.graph
    assert graph.input[0].type.tensor_type.shape.dim[0].dim_param == "x_dynamic_axes_1"
    assert graph.output[0].type.tensor_type.shape.dim[0].dim_param == "y_dynamic_axes_1"


def test_static_shape_is_kept():
    program = ember.onnx.export(MLP(), (ember.randn(2, 4),))
    dims = program.model_proto.graph.input[0].type.tensor_type.shape.dim
    assert [d.dim_value for d in dims] == [2, 4]
    assert program.model_proto.opset_import[0].version == 18


@pytest.mark.parametrize("mode", ["LSTM", "GRU", "RNN"])
def test_recurrent(mode):
    ember.manual_seed(0)
    cls = getattr(nn, mode)
    model = cls(4, 5, num_layers=2, batch_first=True, bidirectional=mode == "GRU")
    # a dynamic batch (a dynamic sequence length is specialized by export, as PyTorch's)
    out = _check(model if mode != "LSTM" else _FirstOutput(model), (ember.randn(3, 6, 4),),
                 other_args=[(ember.randn(5, 6, 4),)], input_names=["x"],
                 dynamic_axes={"x": {0: "batch"}})
    assert mode in {n.op_type for n in out.model_proto.graph.node}


class _FirstOutput(nn.Module):
    def __init__(self, rnn):
        super().__init__()
        self.rnn = rnn

    def forward(self, x):
        y, (h, c) = self.rnn(x)
        return y, h, c


class Ops(nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, *args):
        return self.fn(*args)


X = ember.randn(2, 3, 4)
IDX = ember.tensor([1, 0])

OPS = {
    "matmul_bmm": (lambda a, b: a @ b + ember.bmm(a, b), (X, ember.randn(2, 4, 5))),
    "matmul_vec": (lambda a, b: ember.matmul(a, b), (X, ember.randn(4))),
    "views": (lambda a: a[0].t().transpose(0, 1).reshape(-1).flatten().view(3, 4)
              .permute(1, 0).contiguous().detach(), (X,)),
    "expand_squeeze": (lambda a: a[:, :1].expand(2, 5, 4).unsqueeze(0).squeeze(0)
                       .squeeze(1), (X,)),
    "cat_stack_split": (lambda a: ember.cat([ember.stack([a, a], 1).split(1, dim=1)[1]
                                             .squeeze(1), a], 2).chunk(2, 0)[1], (X,)),
    "select_slice_index": (lambda a, i: a.select(1, 1)[..., 1:3].index_select(0, i)
                           + a[i][:, 0, ::2], (X, IDX)),
    "gather_embedding": (lambda a, i: ember.gather(a, 2, ember.zeros(2, 3, 1, dtype=ember.long))
                         .sum() + F.embedding(i, a[0]), (X, IDX)),
    "arith": (lambda a: (-a * 2 + 1 - a / 3).pow(2).add(1).sqrt().rsqrt().exp().log().abs()
              .relu() + a ** 2 - ember.sub(a, a, alpha=2), (X,)),
    "activations": (lambda a: F.silu(a) + ember.sigmoid(a) + ember.tanh(a) + F.softmax(a, -1)
                    + F.log_softmax(a, 1) + F.gelu(a) + F.gelu(a, approximate="tanh")
                    + F.leaky_relu(a, 0.1) + F.elu(a) + F.hardtanh(a), (X,)),
    "where_clamp_compare": (lambda a: ember.where(a > 0, a, ember.zeros_like(a)).clamp(-1, 0.5)
                            + ember.maximum(a, -a) + ember.minimum(a, -a) + (a == a).float()
                            + ((a < 0) & (a >= 0) | ~(a != 0) ^ (a <= 1)).to(ember.float32),
                            (X,)),
    "factories": (lambda a: a + ember.full((4,), 2.0) + ember.ones(4) + ember.zeros(4)
                  + ember.arange(4) + ember.arange(1, 9, 2).float(), (X,)),
    "reductions": (lambda a: a.mean((1, 2)) + a.sum(-1).sum(-1) + a.amax(dim=(1, 2))
                   + a.mean() + a.amin(1).sum(1) + a.var(1).sum(1) + a.max(2).values.sum(1),
                   (X,)),
    "layer_norm": (lambda a: F.layer_norm(a, (4,)) + F.layer_norm(a, (3, 4), ember.ones(3, 4),
                                                                    ember.zeros(3, 4)), (X,)),
    "int_math": (lambda a, i: a[0, :2, 0] * i + 1.5 * i + (i // 2) + (i % 2), (X, IDX)),
    "to_dtype": (lambda a: a.to(ember.float64) * 2 + a.long(), (X,)),
    "constant_tensor": (lambda a: a + ember.tensor([1.0, 2.0, 3.0, 4.0]), (X,)),
    "sdpa_masks": (lambda q: F.scaled_dot_product_attention(q, q, q, attn_mask=ember.tril(
        ember.ones(3, 3, dtype=ember.bool))) + F.scaled_dot_product_attention(
        q, q, q, attn_mask=ember.zeros(3, 3), scale=0.3), (ember.randn(1, 2, 3, 4),)),
    "pad_flip_repeat_cumsum": (lambda a: F.pad(a, (1, 2)).flip(0).repeat(1, 2, 1).cumsum(1),
                               (X,)),
    "group_norm_upsample": (lambda a: F.interpolate(F.group_norm(a, 2), scale_factor=2)
                            + F.interpolate(a, size=(6, 6), mode="bilinear"),
                            (ember.randn(2, 4, 3, 3),)),
}


@pytest.mark.parametrize("name", list(OPS))
def test_ops(name):
    fn, args = OPS[name]
    _check(Ops(fn), args)


def test_function_and_kwargs():
    def f(x, y, *, scale):
        return (x * scale + y).relu()
    x, y = ember.randn(3), ember.randn(3)
    program = ember.onnx.export(f, (x, y), kwargs={"scale": 2.0})
    assert [i.name for i in program.model_proto.graph.input] == ["x", "y"]
    got = _run(program, x, y)[0]
    np.testing.assert_allclose(got, f(x, y, scale=2.0).numpy(), atol=1e-6)


def test_save_paths_and_file_objects(tmp_path):
    ember.manual_seed(0)
    model, x = MLP(), ember.randn(2, 4)
    expect = model(x).detach().numpy()
    path = tmp_path / "mlp.onnx"
    program = ember.onnx.export(model, (x,), str(path), external_data=False)
    assert isinstance(program, ember.onnx.ONNXProgram)
    got = ort.InferenceSession(str(path)).run(None, {"x": x.numpy()})[0]
    np.testing.assert_allclose(got, expect, atol=1e-5)
    # weights beside the model, as PyTorch's default external_data=True
    ember.onnx.export(model, (x,), tmp_path / "ext.onnx")
    assert (tmp_path / "ext.onnx.data").exists()
    got = ort.InferenceSession(str(tmp_path / "ext.onnx")).run(None, {"x": x.numpy()})[0]
    np.testing.assert_allclose(got, expect, atol=1e-5)
    buf = io.BytesIO()
    ember.onnx.export(model, (x,), buf)
    loaded = onnx.load_from_string(buf.getvalue())
    assert len(loaded.graph.initializer) == len(program.model_proto.graph.initializer)
    # export_params=False leaves the weights out; keep_initializers_as_inputs lists them
    ember.onnx.export(model, (x,), tmp_path / "bare.onnx", export_params=False,
                      external_data=False)
    assert len(onnx.load(str(tmp_path / "bare.onnx")).graph.initializer) == 0
    ember.onnx.export(model, (x,), tmp_path / "inputs.onnx", keep_initializers_as_inputs=True,
                      external_data=False)
    inputs = [i.name for i in onnx.load(str(tmp_path / "inputs.onnx")).graph.input]
    assert inputs[0] == "x" and "fc1.weight" in inputs
    # ONNXProgram runs itself in ONNX Runtime
    np.testing.assert_allclose(program(x)[0].numpy(), expect, atol=1e-5)


def test_constant_folding():
    ember.manual_seed(0)
    model, x = MLP(), ember.randn(2, 4)
    folded = ember.onnx.export(model, (x,)).model_proto.graph
    unfolded = ember.onnx.export(model, (x,), do_constant_folding=False).model_proto.graph
    # the transposes of the weights run at export time, or in the graph
    assert "Transpose" not in {n.op_type for n in folded.node}
    assert "Transpose" in {n.op_type for n in unfolded.node}
    np.testing.assert_allclose(_run(ember.onnx.export(model, (x,), do_constant_folding=False),
                                    x)[0], model(x).detach().numpy(), atol=1e-5)


def test_opset_version_and_verbose(capsys):
    program = ember.onnx.export(MLP(), (ember.randn(2, 4),), opset_version=17, verbose=True)
    assert program.model_proto.opset_import[0].version == 17
    onnx.checker.check_model(program.model_proto)
    assert "Gemm" in capsys.readouterr().out


def test_dynamo_false_returns_none(tmp_path):
    with pytest.warns(DeprecationWarning):
        out = ember.onnx.export(MLP(), (ember.randn(2, 4),), tmp_path / "m.onnx", dynamo=False,
                                external_data=False)
    assert out is None and (tmp_path / "m.onnx").exists()


def test_is_in_onnx_export():
    seen = []

    class M(nn.Module):
        def forward(self, x):
            seen.append(ember.onnx.is_in_onnx_export())
            return x + 1
    ember.onnx.export(M(), (ember.randn(2),))
    assert seen and all(seen) and not ember.onnx.is_in_onnx_export()


def test_unsupported_operator():
    from ember.onnx.errors import OnnxExporterError, UnsupportedOperatorError
    with pytest.raises(UnsupportedOperatorError,
                       match=r"Exporting the operator 'aten::sort.default' to ONNX opset "
                             r"version 18 is not supported"):
        ember.onnx.export(Ops(lambda a: ember.sort(a).values), (ember.randn(5),))
    assert issubclass(UnsupportedOperatorError, OnnxExporterError)
    assert issubclass(OnnxExporterError, RuntimeError)
    with pytest.raises(ValueError, match="dynamic_axes keys"):
        ember.onnx.export(MLP(), (ember.randn(2, 4),), dynamic_axes={"nope": [0]})


def test_import_ember_does_not_import_onnx():
    code = ("import sys, ember, ember.onnx, ember.onnx.errors; "
            "assert 'onnx' not in sys.modules and 'onnxruntime' not in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_missing_onnx_is_a_clear_import_error():
    code = ("import sys; sys.modules['onnx'] = None; import ember\n"
            "try:\n    ember.onnx.export(lambda x: x + 1, (ember.ones(2),))\n"
            "except ImportError as e:\n    assert \"'onnx' package\" in str(e), e\n"
            "else:\n    raise AssertionError('no ImportError')")
    subprocess.run([sys.executable, "-c", code], check=True)
