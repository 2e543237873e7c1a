"""ember.cuda.tunable (TunableOp) on the CUDA device — the simulated one in CI: PyTorch's API and
environment variables, GEMM keys in PyTorch's naming, tuning with numerical checks, the results
CSV written, re-read and refused under other validators, offline tuning from an untuned file."""
import os
import re

import numpy as np
import pytest

import ember
from ember.cuda import tunable

pytestmark = pytest.mark.usefixtures("cuda_device")


@pytest.fixture(autouse=True)
def fresh(tmp_path, monkeypatch):
    """A clean tuning context writing into tmp_path; no PYTORCH_TUNABLEOP_* from outside."""
    for k in list(os.environ):
        if k.startswith("PYTORCH_TUNABLEOP_"):
            monkeypatch.delenv(k)
    monkeypatch.setattr(tunable, "_ctx", tunable._TuningContext())
    monkeypatch.chdir(tmp_path)
    tunable.enable()
    yield tmp_path


def _mats(*shapes):
    return [ember.randn(*s, device="cuda") for s in shapes]


def _tuned(solution):
    """A solution the tuner may choose: the default, or on a GPU a cuBLAS algorithm that was
    faster (the simulated device has no algorithms to choose from)."""
    from helpers import real_gpu
    return solution == "Default" or bool(real_gpu() and re.fullmatch(r"Gemm_Cublas_\d+",
                                                                      solution))


def test_api_defaults_and_environment():
    ctx = tunable._TuningContext()
    assert (ctx.tuning, ctx.max_duration_ms, ctx.max_iterations) == (True, 30, 100)
    assert tunable.get_filename() == "tunableop_results0.csv"  # the device ordinal inserted
    tunable.set_filename("mine.csv")
    assert tunable.get_filename() == "mine.csv"
    tunable.set_filename("mine.csv", insert_device_ordinal=True)
    assert tunable.get_filename() == "mine0.csv"
    tunable.set_max_tuning_iterations(7)
    tunable.set_max_tuning_duration(3)
    assert (tunable.get_max_tuning_iterations(), tunable.get_max_tuning_duration()) == (7, 3)
    os.environ["PYTORCH_TUNABLEOP_ENABLED"] = "0"  # the environment wins over the calls
    os.environ["PYTORCH_TUNABLEOP_MAX_TUNING_ITERATIONS"] = "2"
    try:
        tunable.enable(True)
        assert not tunable.is_enabled() and tunable.get_max_tuning_iterations() == 2
    finally:
        del os.environ["PYTORCH_TUNABLEOP_ENABLED"], os.environ["PYTORCH_TUNABLEOP_MAX_TUNING_ITERATIONS"]


def test_tuning_records_gemms_in_pytorchs_naming():
    a, b, c, d = _mats((8, 4), (4, 5), (5, 8), (5, 3))
    want = (a.cpu() @ b.cpu()).numpy()
    np.testing.assert_allclose((a @ b).cpu().numpy(), want, rtol=1e-5, atol=1e-6)
    c.t() @ d  # a transposed operand: T
    ember.bmm(*_mats((3, 2, 4), (3, 4, 6)))
    ember.addmm(ember.zeros(8, 5, device="cuda"), a, b)  # the same GEMM: no new entry
    results = {(op, params): sol for op, params, sol, ms in tunable.get_results()}
    assert set(results) == {("GemmTunableOp_float_NN", "nn_8_5_4"),
                            ("GemmTunableOp_float_TN", "tn_8_3_5"),
                            ("GemmStridedBatchedTunableOp_float_NN", "nn_2_6_4_B_3")}
    assert all(_tuned(sol) for sol in results.values()), results
    assert all(ms > 0 for *_, ms in tunable.get_results())


def test_results_file_round_trip_and_refusal(fresh):
    a, b = _mats((6, 3), (3, 2))
    a @ b
    assert tunable.write_file()
    lines = (fresh / "tunableop_results0.csv").read_text().splitlines()
    names = [line.split(",")[1] for line in lines if line.startswith("Validator")]
    assert names == ["PT_VERSION", "CUDA_VERSION", "CUBLAS_VERSION", "GPU_NAME"]
    op, params, solution, ms = lines[4].split(",")
    assert (op, params) == ("GemmTunableOp_float_NN", "nn_6_2_3") and _tuned(solution)
    assert float(ms) > 0
    tunable._ctx.results.clear()
    assert tunable.read_file() and len(tunable.get_results()) == 1
    other = fresh / "other.csv"  # tuned under another ember: refused
    other.write_text("\n".join(line.replace(ember.__version__, "9.9.9") for line in lines))
    tunable._ctx.results.clear()
    with pytest.warns(UserWarning, match="PT_VERSION='9.9.9'"):
        assert not tunable.read_file(str(other))
    assert tunable.get_results() == ()
    (fresh / "bad.csv").write_text("Validator,PT_VERSION\nnot,a\n")
    with pytest.warns(UserWarning, match="not a results line"):
        assert not tunable.read_file(str(fresh / "bad.csv"))


def test_candidates_are_checked_and_the_fastest_wins(monkeypatch):
    """A candidate computing something else is never chosen, however fast; the fastest correct
    one is, and later calls run it."""
    calls = []

    def wrong(a, b):
        return a @ b + 1

    def right(a, b):
        calls.append(1)
        return a @ b
    monkeypatch.setattr(tunable, "_cublas_candidates",
                        lambda xp, a, b: {"Gemm_Cublas_7": right, "Gemm_Cublas_3": wrong})
    speed = {"matmul": 1.0, "right": 0.5, "wrong": 0.01}
    monkeypatch.setattr(tunable, "_time", lambda fn, a, b, sync: speed[fn.__name__])
    a, b = _mats((4, 4), (4, 4))
    np.testing.assert_allclose((a @ b).cpu().numpy(), (a.cpu() @ b.cpu()).numpy(), rtol=1e-5,
                               atol=1e-6)
    assert tunable.get_results()[0][2:] == ("Gemm_Cublas_7", 0.5)
    calls.clear()
    a @ b
    assert calls == [1]  # the recorded solution runs


def test_tuning_off_runs_default_and_records_untuned(fresh):
    tunable.tuning_enable(False)
    tunable.record_untuned_enable(True)
    a, b = _mats((3, 5), (5, 2))
    a @ b
    assert tunable.get_results() == ()
    untuned = (fresh / "tunableop_untuned0.csv").read_text()
    assert untuned == "GemmTunableOp_float_NN,nn_3_2_5\n"
    tunable.tuning_enable(True)
    tunable.tune_gemm_in_file(str(fresh / "tunableop_untuned0.csv"))  # offline tuning
    [(op, params, solution, _)] = tunable.get_results()
    assert (op, params) == ("GemmTunableOp_float_NN", "nn_3_2_5") and _tuned(solution)


def test_disabled_tunable_is_not_consulted(monkeypatch):
    tunable.enable(False)
    monkeypatch.setattr(tunable, "matmul", None)  # would fail if called
    a, b = _mats((2, 3), (3, 2))
    assert (a @ b).shape == (2, 2) and tunable._ctx.results == {}
