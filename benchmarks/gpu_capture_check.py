"""Which op breaks a CUDA graph capture? Run where a GPU is lent:

    python benchmarks/gpu_capture_check.py [WIDTH N_LAYER N_HEAD BATCH CONTEXT]

CUDA reports a capture that an operation invalidated only when the capture ends (or at the next
call that asks the stream). This captures ``benchmarks/gpt.py``'s whole training step
(``captured_train_step``: forward, backward, clipping, AdamW with ``capturable=True``) under a
dispatch mode that asks the runtime after every op whether the capture still stands, and names
the first op after which it does not, with its arguments — backward ops included (the device
worker thread runs them with the caller's modes). Exit status 0 when the step captures and
replays.
"""
import os
import sys

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


def main(argv):
    sizes = dict(zip(("width", "n_layer", "n_head", "batch", "context"),
                     map(int, argv or (512, 6, 8, 16, 256))))
    batch, context = sizes.pop("batch"), sizes.pop("context")
    watch = CaptureWatch()
    with watch:
        step = gpt.captured_train_step(ember, batch=batch, context=context, **sizes)
    step()
    ember.cuda.synchronize()
    print(f"captured and replayed: {watch.ops} ops watched, sizes {sizes} batch {batch}x{context}")


if __name__ == "__main__":
    main(sys.argv[1:])
