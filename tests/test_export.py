"""ember.export: a functional core-ATen forward graph with its state and signature, runnable
with .module(), saved and loaded; names and signature as torch.export's."""
import copy
import io

import pytest

import ember
import ember.nn as nn
from ember._decomp import is_core
from ember.export import (ExportedProgram, InputKind, OutputKind, export, load, save)


def _net(lib):
    lib.manual_seed(0)
    return lib.nn.Sequential(lib.nn.Conv2d(1, 4, 3, padding=1), lib.nn.BatchNorm2d(4),
                             lib.nn.ReLU(), lib.nn.Flatten(), lib.nn.Linear(64, 3))


def test_export_graph_signature_and_module():
    net = _net(ember)
    ref = copy.deepcopy(net)
    x = ember.randn(2, 1, 4, 4)
    ep = export(net, (x,))
    assert isinstance(ep, ExportedProgram)
    for n in ep.graph.nodes:
        if n.op == "call_function" and hasattr(n.target, "_schema"):
            assert is_core(n.target) and not n.target._schema.is_mutable, n.target
    sig = ep.graph_signature
    assert sig.parameters == ["0.weight", "0.bias", "1.weight", "1.bias", "4.weight", "4.bias"]
    assert sig.buffers == ["1.running_mean", "1.running_var", "1.num_batches_tracked"]
    assert sig.user_inputs == ["input"]
    assert sorted(sig.buffers_to_mutate.values()) == sorted(sig.buffers)
    assert [s.kind for s in sig.output_specs][-1] == OutputKind.USER_OUTPUT
    assert net[1].running_mean.abs().sum() == 0  # export does not run the module
    m = ep.module()
    for _ in range(2):
        assert ember.allclose(m(x), ref(x), atol=1e-6)
    assert ember.allclose(m.get_submodule("1").running_var, ref[1].running_var, atol=1e-6)
    assert int(m.get_submodule("1").num_batches_tracked) == 2
    with pytest.raises(RuntimeError, match="Unable to call ExportedProgram directly"):
        ep(x)


def test_names_match_torch_export():
    torch = pytest.importorskip("torch")
    # the functional core-ATen program PyTorch gives after run_decompositions()
    tep = torch.export.export(_net(torch), (torch.randn(2, 1, 4, 4),)).run_decompositions()
    eep = export(_net(ember), (ember.randn(2, 1, 4, 4),))
    t_in = [(s.kind.name, s.arg.name, s.target) for s in tep.graph_signature.input_specs]
    e_in = [(s.kind.name, s.arg.name, s.target) for s in eep.graph_signature.input_specs]
    assert e_in == t_in
    assert [s.kind.name for s in eep.graph_signature.output_specs] == \
        [s.kind.name for s in tep.graph_signature.output_specs]
    assert [s.target for s in eep.graph_signature.output_specs] == \
        [s.target for s in tep.graph_signature.output_specs]


def test_save_load_roundtrip(tmp_path):
    net = _net(ember).eval()
    x = ember.randn(3, 1, 4, 4)
    ep = export(net, (x,))
    buf = io.BytesIO()
    save(ep, buf, extra_files={"note": "hello"})
    buf.seek(0)
    extra = {"note": ""}
    ep2 = load(buf, extra_files=extra)
    assert extra["note"] == "hello"
    assert ember.allclose(ep2.module()(x), net(x), atol=1e-6)
    path = tmp_path / "prog.pt2"
    save(ep, str(path))
    ep3 = load(str(path))
    assert [n.op for n in ep3.graph.nodes] == [n.op for n in ep.graph.nodes]
    assert ep3.graph_signature == ep.graph_signature
    assert set(ep3.state_dict) == set(ep.state_dict)


def test_run_decompositions_and_gpt_block():
    import os
    import sys
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(
        __file__))), "examples"))
    from train_gpt import Block
    ember.manual_seed(0)
    block = Block(16, 2, 0.0).eval()
    x = ember.randn(2, 5, 16)
    ep = export(block, (x,)).run_decompositions()
    assert ember.allclose(ep.module()(x), block(x), atol=1e-6)
    assert ep.graph_signature.user_inputs == ["x"]
    assert {s.kind for s in ep.graph_signature.input_specs} == {InputKind.PARAMETER,
                                                                InputKind.USER_INPUT}


def test_ember_export_is_there_after_import_ember():
    """As torch.export after ``import torch``; imported on first use (it brings sympy)."""
    import subprocess
    import sys
    code = ("import sys, ember; assert 'ember.export' not in sys.modules; "
            "assert ember.export.export is sys.modules['ember.export'].export")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)
    with pytest.raises(AttributeError, match="module 'ember' has no attribute 'exporter'"):
        ember.exporter  # noqa: B018
