"""``ThroughputBenchmark``: a module run as an inference server runs it, by several calling
threads on inputs drawn at random from a set, timed together (``torch.utils.
throughput_benchmark``; PyTorch's runner is C++, ``torch._C.ThroughputBenchmark``, and this is
its logic in Python threads)."""
import random
import threading
import time

__all__ = ["ThroughputBenchmark", "ExecutionStats", "format_time"]


def format_time(time_us=None, time_ms=None, time_s=None):
    """A duration given in exactly one unit, printed in the largest of s, ms and us that it
    reaches."""
    if sum([time_us is not None, time_ms is not None, time_s is not None]) != 1:
        raise AssertionError("Expected only one of time_us, time_ms, time_s is given.")
    us_in_second, us_in_ms = 1e6, 1e3
    if time_us is None:
        time_us = time_ms * us_in_ms if time_ms is not None else time_s * us_in_second
    if time_us >= us_in_second:
        return f"{time_us / us_in_second:.3f}s"
    if time_us >= us_in_ms:
        return f"{time_us / us_in_ms:.3f}ms"
    return f"{time_us:.3f}us"


class BenchmarkConfig:
    """``torch._C.BenchmarkConfig``: how a benchmark runs."""

    def __init__(self):
        self.num_calling_threads = 1
        self.num_worker_threads = 1
        self.num_warmup_iters = 1
        self.num_iters = 100
        self.profiler_output_path = ""


class BenchmarkExecutionStats:
    """``torch._C.BenchmarkExecutionStats``: a benchmark's measurements."""

    def __init__(self, latency_avg_ms=-1.0, num_iters=-1):
        self.latency_avg_ms = latency_avg_ms
        self.num_iters = num_iters


class ExecutionStats:
    """A benchmark's results: average latency per call, iterations, throughput."""

    def __init__(self, c_stats, benchmark_config):
        self._c_stats = c_stats
        self.benchmark_config = benchmark_config

    @property
    def latency_avg_ms(self):
        return self._c_stats.latency_avg_ms

    @property
    def num_iters(self):
        return self._c_stats.num_iters

    @property
    def iters_per_second(self):
        """Iterations per second across all calling threads."""
        return self.num_iters / self.total_time_seconds

    @property
    def total_time_seconds(self):
        return self.num_iters * (self.latency_avg_ms / 1000.0) / \
            self.benchmark_config.num_calling_threads

    def __str__(self):
        return "\n".join([
            "Average latency per example: " + format_time(time_ms=self.latency_avg_ms),
            f"Total number of iterations: {self.num_iters}",
            f"Total number of iterations per second (across all threads): "
            f"{self.iters_per_second:.2f}",
            "Total time: " + format_time(time_s=self.total_time_seconds)])


class _Runner:
    """The benchmark itself (PyTorch's ``throughput_benchmark::BenchmarkHelper``): each
    calling thread runs its warmup iterations, all wait at a barrier, then they share
    ``num_iters`` timed calls."""

    def __init__(self, module):
        self.module = module
        self.inputs = []

    def run_once(self, *args, **kwargs):
        return self.module(*args, **kwargs)

    def add_input(self, *args, **kwargs):
        self.inputs.append((args, kwargs))

    def benchmark(self, config):
        if config.num_worker_threads != 1:
            raise RuntimeError("Only parallelization by callers is supported")
        if not self.inputs:
            raise RuntimeError("Please provide benchmark inputs.Did you forget to call "
                               "add_input()? ")
        threads = config.num_calling_threads
        # each thread's inputs drawn before the clock starts: enough for one thread doing
        # every iteration
        rng = random.Random()
        per_thread = [[rng.choice(self.inputs)
                       for _ in range(config.num_iters + config.num_warmup_iters)]
                      for _ in range(threads)]
        ready = threading.Barrier(threads + 1) if threads else None
        attempted = iter(range(config.num_iters))  # next() on it is atomic under the GIL
        errors = []

        def caller(thread_id):
            inputs = iter(per_thread[thread_id])
            try:
                for _ in range(config.num_warmup_iters):
                    args, kwargs = next(inputs)
                    self.module(*args, **kwargs)
            except BaseException as e:
                errors.append(e)
            ready.wait()  # the timed part starts when every thread has warmed up
            ready.wait()
            if errors:
                return
            try:
                for _ in attempted:
                    args, kwargs = next(inputs)
                    self.module(*args, **kwargs)
            except BaseException as e:
                errors.append(e)

        workers = [threading.Thread(target=caller, args=(i,), daemon=True)
                   for i in range(threads)]
        for w in workers:
            w.start()
        profiler = None
        if ready is not None:
            ready.wait()
        if config.profiler_output_path:
            from ..autograd.profiler import profile
            profiler = profile()
            profiler.__enter__()
        start = time.perf_counter_ns()
        if ready is not None:
            ready.wait()
        for w in workers:
            w.join()
        end = time.perf_counter_ns()
        if profiler is not None:
            profiler.__exit__(None, None, None)
            profiler.export_chrome_trace(config.profiler_output_path)
        if errors:
            raise errors[0]
        total_time_ms = (end - start) / 1e6
        # per call: the wall time times the threads that shared it, over the calls made
        latency = total_time_ms * threads / config.num_iters if config.num_iters else 0.0
        return BenchmarkExecutionStats(latency, config.num_iters)


class ThroughputBenchmark:
    """Runs a module (an ``nn.Module`` or ``ScriptModule``, or any callable) under an
    inference-server-like load: :meth:`add_input` fills the set of inputs, :meth:`benchmark`
    has ``num_calling_threads`` threads call the module on inputs picked at random from it."""

    def __init__(self, module):
        self._benchmark = _Runner(module)

    def run_once(self, *args, **kwargs):
        """The module's output on these inputs (checks that the benchmark runs what it
        should)."""
        return self._benchmark.run_once(*args, **kwargs)

    def add_input(self, *args, **kwargs):
        """Keep one set of call arguments for the benchmark to pick from."""
        self._benchmark.add_input(*args, **kwargs)

    def benchmark(self, num_calling_threads=1, num_warmup_iters=10, num_iters=100,
                  profiler_output_path=""):
        """Run ``num_warmup_iters`` untimed calls per thread, then ``num_iters`` timed calls
        shared by the threads (with ``profiler_output_path``: profiled, the trace written
        there). Returns :class:`ExecutionStats`."""
        config = BenchmarkConfig()
        config.num_calling_threads = num_calling_threads
        config.num_warmup_iters = num_warmup_iters
        config.num_iters = num_iters
        config.profiler_output_path = profiler_output_path
        return ExecutionStats(self._benchmark.benchmark(config), config)
