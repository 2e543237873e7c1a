"""ember.utils.tensorboard: write TensorBoard event files (``torch.utils.tensorboard``):
``SummaryWriter`` logs scalars, histograms, images, text and ``ember.fx`` graphs through the
``tensorboard`` package's protobufs and event-file writer; without that package importing this
module raises an ImportError that names it."""
try:
    import tensorboard
except ImportError as e:
    raise ImportError("TensorBoard logging requires the `tensorboard` package, which is not "
                      "installed: pip install tensorboard") from e


def _version_tuple(v):
    return tuple(int(p) for p in v.split(".")[:2] if p.isdigit())


if not hasattr(tensorboard, "__version__") or _version_tuple(tensorboard.__version__) < (1, 15):
    raise ImportError("TensorBoard logging requires TensorBoard version 1.15 or above")

del tensorboard

from tensorboard.summary.writer.record_writer import RecordWriter  # noqa: E402

from .writer import FileWriter, SummaryWriter  # noqa: E402

__all__ = ["FileWriter", "RecordWriter", "SummaryWriter"]
