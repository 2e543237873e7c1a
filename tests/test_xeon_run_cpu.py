"""``python -m ember.backends.xeon.run_cpu``: the instances' core binding against PyTorch's
launcher on the same (simulated) topology and options, and a real run on this machine."""
import os
import subprocess
import sys
from argparse import ArgumentParser

import pytest

from ember.backends.xeon import run_cpu

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# two NUMA nodes of 4 physical cores with 2 hyperthreads each: CPU,Core,Socket,Node
LSCPU = "\n".join(["# CPU,Core,Socket,Node"] + [
    f"{core + 8 * ht},{core},{core // 4},{core // 4}" for ht in (0, 1) for core in range(8)])

OPTIONS = [
    [],
    ["--ninstances", "2"],
    ["--ncores-per-instance", "3"],
    ["--ncores-per-instance", "3", "--skip-cross-node-cores"],
    ["--ninstances", "2", "--ncores-per-instance", "2"],
    ["--node-id", "1"],
    ["--use-logical-core"],
    ["--use-logical-core", "--node-id", "0", "--ninstances", "2"],
    ["--multi-instance"],
    ["--latency-mode"],
    ["--throughput-mode"],
    ["--core-list", "1,2,3,6", "--ncores-per-instance", "2"],
    ["--ninstances", "4", "--rank", "2"],
    ["--disable-numactl", "--ninstances", "2"],
    ["-m", "--ninstances", "2"],
]


def _args(module, argv):
    parser = ArgumentParser()
    module.create_args(parser)
    return parser.parse_args(argv + ["prog.py", "--flag", "x"])


def _pytorch_commands(torch_run_cpu, argv, monkeypatch):
    captured = {}

    def start_processes(name, entrypoint, args, envs, logs_specs):
        captured.update({i: [entrypoint] + list(a) for i, a in args.items()})

        class Context:
            def wait(self):
                return None
        return Context()

    monkeypatch.setattr(torch_run_cpu, "start_processes", start_processes)
    launcher = torch_run_cpu._Launcher()
    launcher.cpuinfo = torch_run_cpu._CPUinfo(LSCPU)
    monkeypatch.setattr(launcher, "is_numactl_available", lambda: True)
    args = _args(torch_run_cpu, argv)
    args.log_path = os.devnull
    launcher.launch(args)
    return [captured[i] for i in sorted(captured)]


@pytest.mark.parametrize("argv", OPTIONS, ids=lambda a: " ".join(a) or "default")
def test_binding_matches_pytorch(torch, monkeypatch, argv):
    torch_run_cpu = pytest.importorskip("torch.backends.xeon.run_cpu")
    for var in ("OMP_NUM_THREADS", "LD_PRELOAD", "KMP_AFFINITY", "KMP_BLOCKTIME",
                "LOCAL_WORLD_SIZE", "LOCAL_RANK"):
        monkeypatch.delenv(var, raising=False)
    theirs = _pytorch_commands(torch_run_cpu, argv, monkeypatch)
    their_threads = os.environ.get("OMP_NUM_THREADS")
    monkeypatch.delenv("OMP_NUM_THREADS")

    launcher = run_cpu._Launcher(run_cpu._CPUinfo(LSCPU))
    monkeypatch.setattr(launcher, "is_numactl_available", lambda: True)
    ours = [cmd for cmd, _cores in launcher.commands(_args(run_cpu, argv))]
    assert ours == theirs
    assert os.environ["OMP_NUM_THREADS"] == their_threads


def test_cpuinfo_reads_the_topology():
    info = run_cpu._CPUinfo(LSCPU)
    assert info.node_nums == 2
    assert info.get_node_physical_cores(1) == [4, 5, 6, 7]
    assert info.get_node_logical_cores(0) == [0, 1, 2, 3, 8, 9, 10, 11]
    assert info.numa_aware_check([3, 4]) == [0, 1]
    with pytest.raises(ValueError, match=r"Invalid node id: 2. Valid node ids: \[0, 1\]"):
        info.get_node_physical_cores(2)


def test_bad_options_raise_pytorch_errors():
    launcher = run_cpu._Launcher(run_cpu._CPUinfo(LSCPU))
    with pytest.raises(RuntimeError, match="please specify the \"--ncores-per-instance\""):
        launcher.commands(_args(run_cpu, ["--core-list", "1,2"]))
    with pytest.raises(RuntimeError, match="there are 8 total cores but you specify 9"):
        launcher.commands(_args(run_cpu, ["--ninstances", "9"]))
    with pytest.raises(RuntimeError, match="Either args.latency_mode or args.throughput_mode"):
        run_cpu.main(_args(run_cpu, ["--latency-mode", "--throughput-mode"]))
    args = _args(run_cpu, [])
    args.program = "prog"
    with pytest.raises(RuntimeError, match='you should use "--no-python" parameter'):
        run_cpu.main(args)


def _launch(tmp_path, *options):
    script = tmp_path / "show.py"
    # one write per line: the instances share the pipe, and print() writes each piece
    # separately when the output is unbuffered (PYTHONUNBUFFERED), so lines could interleave
    script.write_text("import os, sys, ember\n"
                      "sys.stdout.write(f'cores {sorted(os.sched_getaffinity(0))} threads "
                      "{ember.get_num_threads()}\\n')\n"
                      "sys.stdout.flush()\n"
                      "raise SystemExit(int(os.environ.get('FAIL', '0')))\n")
    env = dict(os.environ, PYTHONPATH=ROOT)
    env.pop("OMP_NUM_THREADS", None)
    return subprocess.run([sys.executable, "-m", "ember.backends.xeon.run_cpu", *options,
                           str(script)], capture_output=True, text=True, env=env, timeout=120)


def test_instances_are_bound_and_threads_follow(tmp_path):
    if len(os.sched_getaffinity(0)) < 2 or not os.path.exists("/usr/bin/taskset"):
        pytest.skip("needs two cores and taskset")
    logs = tmp_path / "logs"
    run = _launch(tmp_path, "--ninstances", "2", "--ncores-per-instance", "1",
                  "--log-path", str(logs))
    assert run.returncode == 0, run.stderr
    lines = sorted(line for line in run.stdout.splitlines() if line.startswith("cores"))
    assert lines == ["cores [0] threads 1", "cores [1] threads 1"]
    assert sorted(p.name for p in logs.iterdir()) == ["run_instance_0_cores_0-0.log",
                                                      "run_instance_1_cores_1-1.log"]
    assert (logs / "run_instance_1_cores_1-1.log").read_text().strip() == "cores [1] threads 1"


def test_a_failing_instance_fails_the_launch(tmp_path, monkeypatch):
    if not os.path.exists("/usr/bin/taskset"):
        pytest.skip("needs taskset")
    monkeypatch.setenv("FAIL", "3")
    run = _launch(tmp_path, "--ncores-per-instance", "1", "--ninstances", "1")
    assert run.returncode == 3
    assert "instance 0 failed with exit status 3" in run.stderr
