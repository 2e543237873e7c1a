"""What a benchmark measured: ``TaskSpec`` (the statement and its labels), ``Measurement`` (the
times of its runs, their statistics and PyTorch's printed summary), and the helpers that scale
and trim times for printing (``select_unit``, ``trim_sigfig``).

The statistics are computed with ember ops on tensors made from the times (float32 by default,
float64 for the quantiles), as PyTorch computes them with its own, so the printed digits agree.
"""
import collections
import contextlib
import dataclasses
import textwrap

import ember

__all__ = ["TaskSpec", "Measurement", "select_unit", "unit_to_english", "trim_sigfig",
           "ordered_unique", "set_torch_threads"]

_MAX_SIGNIFICANT_FIGURES = 4
_MIN_CONFIDENCE_INTERVAL = 25e-9  # 25 ns

# A Measurement warns when the spread of its runs (interquartile range over median) is above
# these: some variation is expected of every benchmark.
_IQR_WARN_THRESHOLD = 0.1
_IQR_GROSS_WARN_THRESHOLD = 0.25


@dataclasses.dataclass(init=True, repr=False, eq=True, frozen=True)
class TaskSpec:
    """What a Timer measures (all but its globals)."""
    stmt: str
    setup: str
    global_setup: str = ""
    label: str = None
    sub_label: str = None
    description: str = None
    env: str = None
    num_threads: int = 1

    @property
    def title(self):
        """Best-effort label of the measurement."""
        if self.label is not None:
            return self.label + (f": {self.sub_label}" if self.sub_label else "")
        elif "\n" not in self.stmt:
            return self.stmt + (f": {self.sub_label}" if self.sub_label else "")
        return (f"stmt:{f' ({self.sub_label})' if self.sub_label else ''}\n"
                f"{textwrap.indent(self.stmt, '  ')}")

    def setup_str(self):
        return ("" if (self.setup == "pass" or not self.setup)
                else f"setup:\n{textwrap.indent(self.setup, '  ')}" if "\n" in self.setup
                else f"setup: {self.setup}")

    def summarize(self):
        """The TaskSpec's part of the printed summaries."""
        sections = [self.title, self.description or "", self.setup_str()]
        return "\n".join([f"{i}\n" if "\n" in i else i for i in sections if i])


_TASKSPEC_FIELDS = tuple(i.name for i in dataclasses.fields(TaskSpec))


@dataclasses.dataclass(init=True, repr=False)
class Measurement:
    """The result of a Timer measurement: ``raw_times`` holds the time of each run of
    ``number_per_run`` executions of the statement; the statistics are per execution. The
    TaskSpec's fields read through (``m.label``, ``m.num_threads`` ...)."""
    number_per_run: int
    raw_times: list
    task_spec: TaskSpec
    metadata: dict = None  # the user's

    def __post_init__(self):
        self._sorted_times = ()
        self._warnings = ()
        self._median = -1.0
        self._mean = -1.0
        self._p25 = -1.0
        self._p75 = -1.0

    def __getattr__(self, name):
        if name in _TASKSPEC_FIELDS:
            return getattr(self.task_spec, name)
        return super().__getattribute__(name)

    # The statistics divide each run's time by number_per_run: the Timer chose it large
    # enough that the per-run overhead this hides is negligible.
    @property
    def times(self):
        return [t / self.number_per_run for t in self.raw_times]

    @property
    def median(self):
        self._lazy_init()
        return self._median

    @property
    def mean(self):
        self._lazy_init()
        return self._mean

    @property
    def iqr(self):
        self._lazy_init()
        return self._p75 - self._p25

    @property
    def significant_figures(self):
        """A rough estimate of the measurement's precision, for ``Compare``: the 90% confidence
        interval of the interquartile points (z = 1.645) against the median, as a power of ten,
        between 1 and 4."""
        self._lazy_init()
        n_total = len(self._sorted_times)
        lower_bound = int(n_total // 4)
        upper_bound = int(ember.tensor(3 * n_total / 4).ceil())
        interquartile_points = self._sorted_times[lower_bound:upper_bound]
        std = ember.tensor(interquartile_points).std(unbiased=False).item()
        sqrt_n = ember.tensor(len(interquartile_points)).sqrt().item()
        confidence_interval = max(1.645 * std / sqrt_n, _MIN_CONFIDENCE_INTERVAL)
        relative_ci = ember.tensor(self._median / confidence_interval).log10().item()
        num_significant_figures = int(ember.tensor(relative_ci).floor())
        return min(max(num_significant_figures, 1), _MAX_SIGNIFICANT_FIGURES)

    @property
    def has_warnings(self):
        self._lazy_init()
        return bool(self._warnings)

    def _lazy_init(self):
        if self.raw_times and not self._sorted_times:
            self._sorted_times = tuple(sorted(self.times))
            _sorted_times = ember.tensor(self._sorted_times, dtype=ember.float64)
            self._median = _sorted_times.quantile(.5).item()
            self._mean = _sorted_times.mean().item()
            self._p25 = _sorted_times.quantile(.25).item()
            self._p75 = _sorted_times.quantile(.75).item()

            def add_warning(msg):
                rel_iqr = self.iqr / self.median * 100
                self._warnings += (f"  WARNING: Interquartile range is {rel_iqr:.1f}% "
                                   f"of the median measurement.\n           {msg}",)

            if not self.meets_confidence(_IQR_GROSS_WARN_THRESHOLD):
                add_warning("This suggests significant environmental influence.")
            elif not self.meets_confidence(_IQR_WARN_THRESHOLD):
                add_warning("This could indicate system fluctuation.")

    def meets_confidence(self, threshold=_IQR_WARN_THRESHOLD):
        return self.iqr / self.median < threshold

    @property
    def title(self):
        return self.task_spec.title

    @property
    def as_row_name(self):
        return self.sub_label or self.stmt or "[Unknown]"

    def __repr__(self):
        """For example::

            <ember.utils.benchmark.utils.common.Measurement object at 0x7f395b6ac110>
            Broadcasting add (4x8)
              Median: 5.73 us
              IQR:    2.25 us (4.01 to 6.26)
              372 measurements, 100 runs per measurement, 1 thread
              WARNING: Interquartile range is 39.4% of the median measurement.
                       This suggests significant environmental influence.
        """
        self._lazy_init()
        skip_line, newline = "MEASUREMENT_REPR_SKIP_LINE", "\n"
        n = len(self._sorted_times)
        time_unit, time_scale = select_unit(self._median)
        iqr_filter = "" if n >= 4 else skip_line

        repr_str = f"""
{super().__repr__()}
{self.task_spec.summarize()}
  {'Median: ' if n > 1 else ''}{self._median / time_scale:.2f} {time_unit}
  {iqr_filter}IQR:    {self.iqr / time_scale:.2f} {time_unit} ({self._p25 / time_scale:.2f} to {self._p75 / time_scale:.2f})
  {n} measurement{'s' if n > 1 else ''}, {self.number_per_run} runs {'per measurement,' if n > 1 else ','} {self.num_threads} thread{'s' if self.num_threads > 1 else ''}
{newline.join(self._warnings)}""".strip()  # noqa: E501

        return "\n".join(line for line in repr_str.splitlines(keepends=False)
                         if skip_line not in line)

    @staticmethod
    def merge(measurements):
        """Merge replicates (Measurements of equal TaskSpecs) into one Measurement each, with
        times per execution (``number_per_run=1``) and no metadata (it may differ between
        replicates)."""
        grouped_measurements = collections.defaultdict(list)
        for m in measurements:
            grouped_measurements[m.task_spec].append(m)

        def merge_group(task_spec, group):
            times = []
            for m in group:
                times.extend(m.times)  # normalized: number_per_run may differ
            return Measurement(number_per_run=1, raw_times=times, task_spec=task_spec,
                               metadata=None)

        return [merge_group(t, g) for t, g in grouped_measurements.items()]


def select_unit(t):
    """The unit ("ns", "us", "ms" or "s") in which ``t`` seconds has one to three digits before
    the point, and its scale in seconds."""
    time_unit = {-3: "ns", -2: "us", -1: "ms"}.get(int(ember.tensor(t).log10().item() // 3),
                                                    "s")
    time_scale = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1}[time_unit]
    return time_unit, time_scale


def unit_to_english(u):
    return {"ns": "nanosecond", "us": "microsecond", "ms": "millisecond", "s": "second"}[u]


def trim_sigfig(x, n):
    """Trim ``x`` to ``n`` significant figures (3.14159, 2 -> 3.1, rounded in float32 as
    PyTorch's)."""
    if n != int(n):
        raise AssertionError("Number of significant figures must be an integer")
    magnitude = int(ember.tensor(x).abs().log10().ceil().item())
    scale = 10 ** (magnitude - n)
    return float(ember.tensor(x / scale).round() * scale)


def ordered_unique(elements):
    return list(collections.OrderedDict(dict.fromkeys(elements)).keys())


@contextlib.contextmanager
def set_torch_threads(n):
    """Run the block with ``ember.set_num_threads(n)``, then restore the previous count."""
    prior_num_threads = ember.get_num_threads()
    try:
        ember.set_num_threads(n)
        yield
    finally:
        ember.set_num_threads(prior_num_threads)
