"""Summary protobufs for each kind of logged value (scalar, histogram, image, text), built
from ember tensors or NumPy arrays exactly as PyTorch builds them, so TensorBoard's plugins
read them alike."""
import io

import numpy as np
from tensorboard.compat.proto.summary_pb2 import (HistogramProto, Summary,
                                                    SummaryMetadata)
from tensorboard.compat.proto.tensor_pb2 import TensorProto
from tensorboard.compat.proto.tensor_shape_pb2 import TensorShapeProto
from tensorboard.plugins.text.plugin_data_pb2 import TextPluginData

import ember

from ._utils import convert_to_HWC

__all__ = ["make_np", "scalar", "histogram", "histogram_raw", "make_histogram", "image",
           "make_image", "text"]


def make_np(x):
    """A NumPy array of ``x``: an array as is, a Python scalar as a 1-element array, an ember
    tensor detached and on the host (bfloat16 as float16, as PyTorch)."""
    if isinstance(x, np.ndarray):
        return x
    if np.isscalar(x):
        return np.array([x])
    if isinstance(x, ember.Tensor):
        if x.device.type == "meta":
            return np.random.randn(1)
        if x.dtype == ember.bfloat16:
            x = x.to(ember.float16)
        return x.detach().cpu().numpy()
    raise NotImplementedError(f"Got {type(x)}, but numpy array or torch tensor are expected.")


def scalar(name, tensor, collections=None, new_style=False, double_precision=False):
    """A one-value summary: ``simple_value``, or with ``new_style`` a scalars-plugin tensor
    (float, or double with ``double_precision``)."""
    tensor = make_np(tensor).squeeze()
    if tensor.ndim != 0:
        raise AssertionError(f"Tensor should contain one element (0 dimensions). Was given "
                             f"size: {tensor.size} and {tensor.ndim} dimensions.")
    value = float(tensor)
    if new_style:
        tensor_proto = TensorProto(float_val=[value], dtype="DT_FLOAT")
        if double_precision:
            tensor_proto = TensorProto(double_val=[value], dtype="DT_DOUBLE")
        smd = SummaryMetadata(plugin_data=SummaryMetadata.PluginData(plugin_name="scalars"))
        return Summary(value=[Summary.Value(tag=name, tensor=tensor_proto, metadata=smd)])
    return Summary(value=[Summary.Value(tag=name, simple_value=value)])


def histogram_raw(name, min, max, num, sum, sum_squares, bucket_limits, bucket_counts):
    hist = HistogramProto(min=min, max=max, num=num, sum=sum, sum_squares=sum_squares,
                          bucket_limit=bucket_limits, bucket=bucket_counts)
    return Summary(value=[Summary.Value(tag=name, histo=hist)])


def histogram(name, values, bins, max_bins=None):
    values = make_np(values)
    hist = make_histogram(values.astype(float), bins, max_bins)
    return Summary(value=[Summary.Value(tag=name, histo=hist)])


def make_histogram(values, bins, max_bins=None):
    """NumPy's histogram of ``values`` as a HistogramProto, at most ``max_bins`` buckets
    (neighbours merged), trimmed to the occupied range plus one empty bucket on the left."""
    if values.size == 0:
        raise ValueError("The input has no element.")
    values = values.reshape(-1)
    counts, limits = np.histogram(values, bins=bins)
    num_bins = len(counts)
    if max_bins is not None and num_bins > max_bins:
        subsampling = num_bins // max_bins
        remainder = num_bins % subsampling
        if remainder != 0:
            counts = np.pad(counts, pad_width=[[0, subsampling - remainder]],
                            mode="constant", constant_values=0)
        counts = counts.reshape(-1, subsampling).sum(axis=-1)
        new_limits = np.empty((counts.size + 1,), limits.dtype)
        new_limits[:-1] = limits[:-1:subsampling]
        new_limits[-1] = limits[-1]
        limits = new_limits
    # the first and last occupied bucket
    cum_counts = np.cumsum(np.greater(counts, 0))
    start, end = np.searchsorted(cum_counts, [0, cum_counts[-1] - 1], side="right")
    start, end = int(start), int(end) + 1
    counts = counts[start - 1:end] if start > 0 else np.concatenate([[0], counts[:end]])
    limits = limits[start:end + 1]
    if counts.size == 0 or limits.size == 0:
        raise ValueError("The histogram is empty, please file a bug report.")
    return HistogramProto(min=values.min(), max=values.max(), num=len(values),
                          sum=values.sum(), sum_squares=values.dot(values),
                          bucket_limit=limits.tolist(), bucket=counts.tolist())


def image(tag, tensor, rescale=1, dataformats="NCHW"):
    """A PNG image summary; float images are taken to lie in [0, 1], uint8 in [0, 255]."""
    tensor = convert_to_HWC(make_np(tensor), dataformats)
    scale_factor = 1 if tensor.dtype == np.uint8 else 255
    tensor = (tensor.astype(np.float32) * scale_factor).clip(0, 255).astype(np.uint8)
    return Summary(value=[Summary.Value(tag=tag, image=make_image(tensor, rescale=rescale))])


def make_image(tensor, rescale=1):
    """An HWC uint8 array encoded as a PNG ``Summary.Image`` (needs Pillow)."""
    from PIL import Image
    height, width, channel = tensor.shape
    img = Image.fromarray(tensor).resize((int(width * rescale), int(height * rescale)),
                                         Image.Resampling.LANCZOS)
    output = io.BytesIO()
    img.save(output, format="PNG")
    return Summary.Image(height=height, width=width, colorspace=channel,
                         encoded_image_string=output.getvalue())


def text(tag, text):
    """A text-plugin summary, under ``tag + "/text_summary"`` as PyTorch names it."""
    smd = SummaryMetadata(plugin_data=SummaryMetadata.PluginData(
        plugin_name="text", content=TextPluginData(version=0).SerializeToString()))
    tensor = TensorProto(dtype="DT_STRING", string_val=[text.encode(encoding="utf_8")],
                         tensor_shape=TensorShapeProto(dim=[TensorShapeProto.Dim(size=1)]))
    return Summary(value=[Summary.Value(tag=tag + "/text_summary", metadata=smd,
                                        tensor=tensor)])
