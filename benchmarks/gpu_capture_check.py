"""Which op breaks a CUDA graph capture? Run where a GPU is lent:

    python benchmarks/gpu_capture_check.py [--compiled] [WIDTH N_LAYER N_HEAD BATCH CONTEXT]

CUDA reports a capture that an operation invalidated only when the capture ends (or at the next
call that asks the stream). This captures ``benchmarks/gpt.py``'s whole training step
(``captured_train_step``: forward, backward, clipping, AdamW with ``capturable=True``) under a
dispatch mode that asks the runtime after every op whether the capture still stands, and names
the first op after which it does not, with its arguments — backward ops included (the device
worker thread runs them with the caller's modes). Exit status 0 when the step captures and
replays.

``--compiled``: the step with the model compiled (``mode="reduce-overhead"``), whose forward and
backward graphs Inductor captures itself; a graph it leaves uncaptured is reported with its
reason and, for a failed capture, the traceback — the op that broke it.
"""
import os
import sys
import traceback

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import ember  # noqa: E402
import gpt  # noqa: E402
from ember.utils._python_dispatch import TorchDispatchMode  # noqa: E402


def _describe(x):
    if isinstance(x, ember.Tensor):
        return f"{x.dtype}{list(x.shape)}@{x.device}" + ("" if x.is_contiguous() else " strided")
    if isinstance(x, (list, tuple)):
        return "[" + ", ".join(_describe(v) for v in x) + "]"
    return repr(x)


class CaptureWatch(TorchDispatchMode):
    """After each op: does the current stream's capture still stand? (CuPy's query raises
    once an error has invalidated it.)"""

    def __init__(self):
        super().__init__()
        self.ops = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        self.ops += 1
        try:
            ember.cuda.is_current_stream_capturing()
        except RuntimeError as e:
            raise RuntimeError(f"op {self.ops}, {func}({', '.join(map(_describe, args))}) "
                               f"left the capture invalidated: {e}") from None
        return out


def _compiled(sizes, batch, context, watch):
    """Three compiled steps under ``watch``; True when every graph was captured and replayed."""
    from ember._inductor import cudagraphs
    log_skip = cudagraphs.log_skip

    def loud_skip(reason):  # called in the except clause of a failed capture: its traceback
        print(f"graph not captured: {reason}")
        traceback.print_exc()
        log_skip(reason)
    cudagraphs.log_skip = loud_skip
    with watch:
        step = gpt.compiled_train_step(ember, batch=batch, context=context, **sizes)
        for _ in range(3):
            step()
    ember.cuda.synchronize()
    print(f"compiled: {watch.ops} ops watched, {dict(cudagraphs.counters)}")
    return cudagraphs.counters["recordings"] > 0 and not cudagraphs.counters["skips"]


def main(argv):
    compiled = "--compiled" in argv
    argv = [a for a in argv if a != "--compiled"]
    sizes = dict(zip(("width", "n_layer", "n_head", "batch", "context"),
                     map(int, argv or (512, 6, 8, 16, 256))))
    batch, context = sizes.pop("batch"), sizes.pop("context")
    watch = CaptureWatch()
    if compiled:
        return 0 if _compiled(sizes, batch, context, watch) else 1
    with watch:
        step = gpt.captured_train_step(ember, batch=batch, context=context, **sizes)
    step()
    ember.cuda.synchronize()
    print(f"captured and replayed: {watch.ops} ops watched, sizes {sizes} batch {batch}x{context}")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
