"""``Timer``: ``timeit.Timer`` made aware of ember (PyTorch's
``torch.utils.benchmark.Timer``): it runs the statement with the thread count asked for
(``num_threads``, 1 by default, restored afterwards), synchronizes the accelerator around each
timing, warms up, and returns ``Measurement`` objects with the labels that ``Compare`` groups
by. Statements are Python; ``torch`` in them is ember unless ``globals`` says otherwise.
"""
import enum
import textwrap
import timeit

import ember

from . import common

__all__ = ["Timer", "timer", "Language"]


def timer():
    if ember.accelerator.is_available():
        ember.accelerator.synchronize()
    return timeit.default_timer()


class Language(enum.Enum):
    PYTHON = 0
    CPP = 1


class Timer:
    """Measures the execution time of ``stmt`` (a string of Python code) after ``setup``.

    ``stmt``, ``setup``, ``timer`` and ``globals`` are ``timeit.Timer``'s (a copy of
    ``globals`` is used; ``torch`` is added as ember when absent). ``label``, ``sub_label``,
    ``description`` and ``env`` tag the measurements for printing and for ``Compare``: rows by
    label and sub_label, columns by description, ``env`` separating otherwise equal tasks.
    ``num_threads`` is ember's intra-op thread count while the statement runs.
    ``global_setup`` and ``language="c++"`` belong to C++ statements, which ember does not
    time."""

    _timer_cls = timeit.Timer

    def __init__(self, stmt="pass", setup="pass", global_setup="", timer=timer, globals=None,
                 label=None, sub_label=None, description=None, env=None, num_threads=1,
                 language=Language.PYTHON):
        if not isinstance(stmt, str):
            raise ValueError("Currently only a `str` stmt is supported.")

        # a copy, so that what exec adds (__builtins__) does not leak into the caller's dict
        self._globals = dict(globals or {})

        if language in (Language.PYTHON, "py", "python"):
            self._globals.setdefault("torch", ember)
            self._language = Language.PYTHON
            if global_setup:
                raise ValueError(f"global_setup is C++ only, got `{global_setup}`. Most likely "
                                 "this code can simply be moved to `setup`.")
        elif language in (Language.CPP, "cpp", "c++"):
            raise NotImplementedError("ember's Timer times Python statements only: C++ timing "
                                      "(language='c++', compiled from PyTorch's timeit "
                                      "template) is not supported.")
        else:
            raise ValueError(f"Invalid language `{language}`.")

        # Multi-line snippets defined inside functions are dedented, and the first newline of a
        # block string dropped, so that they run and print as written.
        stmt = textwrap.dedent(stmt)
        stmt = (stmt[1:] if stmt and stmt[0] == "\n" else stmt).rstrip()
        setup = textwrap.dedent(setup)
        setup = (setup[1:] if setup and setup[0] == "\n" else setup).rstrip()

        self._timer = self._timer_cls(stmt=stmt, setup=setup, timer=timer,
                                      globals=self._globals)
        self._task_spec = common.TaskSpec(stmt=stmt, setup=setup, global_setup=global_setup,
                                          label=label, sub_label=sub_label,
                                          description=description, env=env,
                                          num_threads=num_threads)

    def _timeit(self, number):
        # no real operation takes under 1 ns (a timer call alone takes tens), and this keeps
        # divisions by the time finite
        return max(self._timer.timeit(number), 1e-9)

    def timeit(self, number=1000000):
        """``timeit.Timer.timeit``: run ``stmt`` ``number`` times (after a warmup of
        ``number // 100``, at least 2) and return one measurement."""
        with common.set_torch_threads(self._task_spec.num_threads):
            self._timeit(number=max(int(number // 100), 2))
            return common.Measurement(number_per_run=number,
                                      raw_times=[self._timeit(number=number)],
                                      task_spec=self._task_spec)

    def repeat(self, repeat=-1, number=-1):
        raise NotImplementedError("See `Timer.blocked_autorange.`")

    def autorange(self, callback=None):
        raise NotImplementedError("See `Timer.blocked_autorange.`")

    def _threaded_measurement_loop(self, number, time_hook, stop_hook, min_run_time,
                                   max_run_time=None, callback=None):
        total_time = 0.0
        can_stop = False
        times = []
        with common.set_torch_threads(self._task_spec.num_threads):
            while (total_time < min_run_time) or (not can_stop):
                time_spent = time_hook()
                times.append(time_spent)
                total_time += time_spent
                if callback:
                    callback(number, time_spent)
                can_stop = stop_hook(times)
                if max_run_time and total_time > max_run_time:
                    break
        return times

    def _estimate_block_size(self, min_run_time):
        """The number of executions per timed block that makes the timer's own overhead
        negligible (also the warmup)."""
        with common.set_torch_threads(self._task_spec.num_threads):
            overhead = ember.tensor([self._timeit(0) for _ in range(5)]).median().item()
            number = 1
            while True:
                time_taken = self._timeit(number)
                relative_overhead = overhead / time_taken
                if relative_overhead <= 1e-4 and time_taken >= min_run_time / 1000:
                    break
                if time_taken > min_run_time:
                    break
                if number * 10 > 2147483647:  # PyTorch's limit (a C int in its C++ timer)
                    break
                number *= 10
        return number

    def blocked_autorange(self, callback=None, min_run_time=0.2):
        """Measure many replicates, each a block of executions large enough that the timer's
        overhead is under 0.1% of it, until ``min_run_time`` seconds have been spent.
        ``callback(number, time)`` is called after each block."""
        number = self._estimate_block_size(min_run_time)

        def time_hook():
            return self._timeit(number)

        def stop_hook(times):
            return True

        times = self._threaded_measurement_loop(number, time_hook, stop_hook,
                                                min_run_time=min_run_time, callback=callback)
        return common.Measurement(number_per_run=number, raw_times=times,
                                  task_spec=self._task_spec)

    def adaptive_autorange(self, threshold=0.1, *, min_run_time=0.01, max_run_time=10.0,
                           callback=None):
        """``blocked_autorange`` that goes on until the blocks' interquartile range over their
        median is below ``threshold`` (checked from four blocks and ``min_run_time`` seconds
        on), or ``max_run_time`` seconds have been spent."""
        number = self._estimate_block_size(min_run_time=0.05)

        def time_hook():
            return self._timeit(number)

        def stop_hook(times):
            if len(times) > 3:
                return common.Measurement(number_per_run=number, raw_times=times,
                                          task_spec=self._task_spec
                                          ).meets_confidence(threshold=threshold)
            return False

        times = self._threaded_measurement_loop(number, time_hook, stop_hook, min_run_time,
                                                max_run_time, callback=callback)
        return common.Measurement(number_per_run=number, raw_times=times,
                                  task_spec=self._task_spec)

    def collect_callgrind(self, number=100, *, repeats=None, collect_baseline=True,
                          retain_out_file=False):
        raise NotImplementedError("Timer.collect_callgrind is not supported by ember: "
                                  "instruction counts need Valgrind's Callgrind and PyTorch's "
                                  "C++ bindings for it.")
