"""ember.utils.tensorboard.SummaryWriter writes real event files: read back with TensorBoard's
EventAccumulator and compared with what torch.utils.tensorboard writes for the same values
(scalars, add_scalars runs, histograms, images, text), graphs from ember.fx, the default
runs/DATE_HOST directory, purge_step, flush/close, and the ImportError without tensorboard."""
import glob
import importlib
import io
import os
import re
import socket
import sys

import numpy as np
import pytest

tensorboard = pytest.importorskip("tensorboard")
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator  # noqa

import ember  # noqa: E402
import ember.nn as nn  # noqa: E402
from ember.utils.tensorboard import SummaryWriter  # noqa: E402


def _read(path):
    acc = EventAccumulator(str(path), size_guidance={"scalars": 0, "histograms": 0,
                                                     "images": 0, "tensors": 0})
    acc.Reload()
    return acc


def _both(torch, tmp_path, log):
    """Run ``log(writer, tensor_module)`` with ember's and torch's writers; their logs."""
    from torch.utils.tensorboard import SummaryWriter as TorchWriter
    out = []
    for name, writer_cls, mod in (("ember", SummaryWriter, ember),
                                  ("torch", TorchWriter, torch)):
        with writer_cls(str(tmp_path / name)) as w:
            log(w, mod)
        out.append(tmp_path / name)
    return out


def test_scalars_match_torch(torch, tmp_path):
    def log(w, mod):
        for step in range(5):
            w.add_scalar("loss", mod.tensor(1.0 / (step + 1)), step)
            w.add_scalar("lr", 0.1 * step, step, new_style=True)
            w.add_scalar("acc", np.float64(step / 4), step, new_style=True,
                          double_precision=True)
        w.add_scalars("run", {"a": 1.0, "b": mod.tensor(2.5)}, 7)
    e, t = _both(torch, tmp_path, log)
    ea, ta = _read(e), _read(t)
    got = [(s.step, s.value) for s in ea.Scalars("loss")]
    assert got == [(s.step, s.value) for s in ta.Scalars("loss")]
    assert [s.step for s in ea.Scalars("loss")] == list(range(5))
    np.testing.assert_allclose([s.value for s in ea.Scalars("loss")],
                               [1, 1 / 2, 1 / 3, 1 / 4, 1 / 5], rtol=1e-6)
    for tag in ("lr", "acc"):  # new-style scalars are tensors of the scalars plugin
        assert [tensorboard.util.tensor_util.make_ndarray(x.tensor_proto).item()
                for x in ea.Tensors(tag)] == \
            [tensorboard.util.tensor_util.make_ndarray(x.tensor_proto).item()
             for x in ta.Tensors(tag)]
    # add_scalars: one run per key, named <main_tag>_<key>
    runs = sorted(os.path.basename(p) for p in glob.glob(str(e / "run_*")))
    assert runs == sorted(os.path.basename(p) for p in glob.glob(str(t / "run_*"))) == \
        ["run_a", "run_b"]
    assert [(s.step, s.value) for s in _read(e / "run_b").Scalars("run")] == [(7, 2.5)]
    with pytest.raises(AssertionError, match="Tensor should contain one element"):
        SummaryWriter(str(tmp_path / "bad")).add_scalar("x", ember.ones(3))


def test_histograms_match_torch(torch, tmp_path):
    values = np.random.default_rng(0).standard_normal(1000)

    def log(w, mod):
        w.add_histogram("default_bins", mod.tensor(values.tolist()), 0)
        w.add_histogram("auto_bins", mod.tensor(values.tolist()), 1, bins="auto", max_bins=8)
        w.add_histogram_raw("raw", min=0.0, max=3.0, num=6, sum=9.0, sum_squares=19.0,
                            bucket_limits=[1.0, 2.0, 3.0], bucket_counts=[1, 2, 3],
                            global_step=2)
    e, t = _both(torch, tmp_path, log)
    ea, ta = _read(e), _read(t)
    for tag in ("default_bins", "auto_bins", "raw"):
        (he,), (ht,) = ea.Histograms(tag), ta.Histograms(tag)
        assert he.step == ht.step
        assert he.histogram_value == ht.histogram_value
    h = ea.Histograms("default_bins")[0].histogram_value
    assert h.num == 1000 and sum(h.bucket) == 1000
    assert np.isclose(h.sum, values.sum()) and np.isclose(h.min, values.min())
    assert sum(ea.Histograms("auto_bins")[0].histogram_value.bucket) == 1000
    with pytest.raises(ValueError, match=r"len\(bucket_limits\) != len\(bucket_counts\)"):
        SummaryWriter(str(tmp_path / "bad")).add_histogram_raw("r", 0, 1, 1, 1, 1, [1], [])


def _png(encoded):
    from PIL import Image
    return np.asarray(Image.open(io.BytesIO(encoded)))


def test_images_and_text_match_torch(torch, tmp_path):
    rng = np.random.default_rng(1)
    chw = rng.uniform(0, 1, (3, 8, 6)).astype(np.float32)
    hw = (rng.uniform(0, 255, (5, 7))).astype(np.uint8)
    batch = rng.uniform(0, 1, (5, 1, 4, 4)).astype(np.float32)

    def log(w, mod):
        w.add_image("chw", mod.tensor(chw), 0)
        w.add_image("hw", hw, 1, dataformats="HW")
        w.add_images("batch", mod.tensor(batch), 2)
        w.add_text("note", "hello *tensorboard*", 3)
    e, t = _both(torch, tmp_path, log)
    ea, ta = _read(e), _read(t)
    for tag in ("chw", "hw", "batch"):
        (ie,), (it,) = ea.Images(tag), ta.Images(tag)
        assert (ie.step, ie.width, ie.height) == (it.step, it.width, it.height)
        np.testing.assert_array_equal(_png(ie.encoded_image_string),
                                      _png(it.encoded_image_string))
    pixels = _png(ea.Images("chw")[0].encoded_image_string)
    assert pixels.shape == (8, 6, 3)
    np.testing.assert_array_equal(pixels, (chw.transpose(1, 2, 0) * 255).astype(np.uint8))
    assert _png(ea.Images("batch")[0].encoded_image_string).shape == (4, 20, 3)  # a 1x5 grid
    (te,), (tt,) = ea.Tensors("note/text_summary"), ta.Tensors("note/text_summary")
    assert te.tensor_proto == tt.tensor_proto
    assert te.tensor_proto.string_val == [b"hello *tensorboard*"]
    assert ea.summary_metadata["note/text_summary"].plugin_data.plugin_name == "text"


class _Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 4)
        self.seq = nn.Sequential(nn.ReLU(), nn.Linear(4, 2))

    def forward(self, x):
        return ember.sigmoid(self.seq(self.fc(x))).sum(-1)


def test_add_graph_from_fx(tmp_path):
    model = _Net()
    with SummaryWriter(str(tmp_path)) as w:
        w.add_graph(model, ember.randn(5, 3))
    assert model.training  # restored after the shape pass ran it in eval mode
    g = _read(tmp_path).Graph()
    nodes = {n.name: n for n in g.node}
    assert set(nodes) == {"input/x", "_Net/Linear[fc]/fc", "_Net/Sequential[seq]/ReLU[0]/seq_0",
                          "_Net/Sequential[seq]/Linear[1]/seq_1", "_Net/sigmoid",
                          "_Net/sum_1", "output/output.1"}
    assert nodes["input/x"].op == "IO Node" and nodes["output/output.1"].op == "IO Node"
    assert nodes["_Net/Linear[fc]/fc"].op == "Linear"
    assert list(nodes["_Net/Sequential[seq]/Linear[1]/seq_1"].input) == \
        ["_Net/Sequential[seq]/ReLU[0]/seq_0"]
    assert list(nodes["output/output.1"].input) == ["_Net/sum_1"]
    assert nodes["_Net/sum_1"].op == "Tensor.sum"
    assert b"-1" in nodes["_Net/sum_1"].attr["attr"].s

    def shape(name):
        return [d.size for d in nodes[name].attr["_output_shapes"].list.shape[0].dim]
    assert shape("input/x") == [5, 3] and shape("_Net/Linear[fc]/fc") == [5, 4]
    assert shape("_Net/sum_1") == [5] and shape("output/output.1") == [5]
    # without example inputs: the same graph, no shapes
    with SummaryWriter(str(tmp_path / "noshape")) as w:
        w.add_graph(ember.fx.symbolic_trace(model))
    g2 = _read(tmp_path / "noshape").Graph()
    assert len(g2.node) == len(g.node)
    assert all("_output_shapes" not in n.attr for n in g2.node)


def test_default_logdir_purge_flush_close(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    w = SummaryWriter(comment="_exp")
    logdir = w.get_logdir()
    assert re.fullmatch(r"runs/[A-Z][a-z]{2}\d{2}_\d{2}-\d{2}-\d{2}_" + re.escape(
        socket.gethostname()) + "_exp", logdir)
    w.add_scalar("x", 1.0, 0)
    w.flush()
    files = glob.glob(os.path.join(logdir, "events.out.tfevents.*"))
    assert len(files) == 1 and os.path.getsize(files[0]) > 0
    assert [s.value for s in _read(logdir).Scalars("x")] == [1.0]
    w.close()
    w.close()  # a second close is a no-op
    w.add_scalar("x", 2.0, 1)  # writing again opens a new event file
    w.close()
    assert len(glob.glob(os.path.join(logdir, "events.out.tfevents.*"))) == 2
    # purge_step: a restart at step 1 tells TensorBoard to drop the older steps >= 1
    with SummaryWriter(logdir, purge_step=1, filename_suffix=".restart") as w2:
        w2.add_scalar("x", 3.0, 1)
    assert glob.glob(os.path.join(logdir, "*.restart"))
    assert [(s.step, s.value) for s in _read(logdir).Scalars("x")] == [(0, 1.0), (1, 3.0)]


def test_import_error_names_the_package(monkeypatch):
    for name in [m for m in sys.modules if m.startswith("ember.utils.tensorboard")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "tensorboard", None)  # as if not installed
    with pytest.raises(ImportError, match="requires the `tensorboard` package.*pip install "
                                          "tensorboard"):
        importlib.import_module("ember.utils.tensorboard")


def test_hparams_and_pr_curves_match_torch(torch, tmp_path):
    rng = np.random.default_rng(2)
    labels = rng.integers(0, 2, 100)
    preds = rng.uniform(0, 1, 100)

    def log(w, mod):
        w.add_hparams({"lr": 0.1, "opt": "sgd", "bs": mod.tensor([32.0]), "flag": True},
                      {"hparam/loss": 0.25}, hparam_domain_discrete={"opt": ["sgd", "adam"]},
                      run_name="trial")
        w.add_pr_curve("pr", mod.tensor(labels.tolist()), mod.tensor(preds.tolist()), 4,
                       num_thresholds=11)
        w.add_pr_curve_raw("pr_raw", [5, 3], [2, 1], [1, 2], [0, 2], [0.7, 0.75], [1.0, 0.6],
                           5, num_thresholds=2)
    e, t = _both(torch, tmp_path, log)
    ea, ta = _read(e), _read(t)
    for tag in ("pr", "pr_raw"):
        (pe,), (pt,) = ea.Tensors(tag), ta.Tensors(tag)
        assert pe.step == pt.step and pe.tensor_proto == pt.tensor_proto
        assert ea.summary_metadata[tag] == ta.summary_metadata[tag]
    eh, th = _read(e / "trial"), _read(t / "trial")
    assert set(eh.summary_metadata) == set(th.summary_metadata) >= {
        "_hparams_/experiment", "_hparams_/session_start_info", "_hparams_/session_end_info"}
    for tag in ("_hparams_/experiment", "_hparams_/session_start_info",
                "_hparams_/session_end_info"):
        assert eh.summary_metadata[tag] == th.summary_metadata[tag]
    assert [s.value for s in eh.Scalars("hparam/loss")] == [0.25]
    with pytest.raises(TypeError, match="hparam_dict and metric_dict should be dictionary."):
        SummaryWriter(str(tmp_path / "bad")).add_hparams([], {})


class _Branchy(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 4)

    def forward(self, x):
        if x.sum() > 0:  # data-dependent: symbolic tracing cannot follow it
            return self.fc(x).relu()
        return self.fc(x)


def test_add_graph_with_control_flow_records_one_run(tmp_path):
    x = ember.ones(2, 3)
    with SummaryWriter(str(tmp_path)) as w:
        with pytest.warns(UserWarning, match="cannot trace _Branchy"):
            w.add_graph(_Branchy(), x)
    nodes = {n.name: n for n in _read(tmp_path).Graph().node}
    ops = sorted(n.op for n in nodes.values())
    assert "aten.addmm.default" in ops and "aten.relu.default" in ops  # the branch x took
    assert nodes["output/output.1"].op == "IO Node"
    assert [d.size for d in nodes["output/output.1"].attr["_output_shapes"].list.shape[0].dim] \
        == [2, 4]
    with pytest.raises(ember.fx.proxy.TraceError):
        SummaryWriter(str(tmp_path / "none")).add_graph(_Branchy())  # no inputs to run
