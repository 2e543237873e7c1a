"""Summary protobufs for each kind of logged value (scalar, histogram, image, text,
hyperparameters, precision-recall curves), built
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
           "make_image", "text", "hparams", "pr_curve", "pr_curve_raw", "compute_curve"]


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


def _hparam_info(name, dtype, domain):
    """HParamInfo of one hyperparameter; ``domain`` is a struct ListValue or None."""
    from tensorboard.plugins.hparams.api_pb2 import DataType, HParamInfo
    return HParamInfo(name=name, type=DataType.Value(dtype), domain_discrete=domain)


def _plugin_summary(tag, content):
    from tensorboard.plugins.hparams.metadata import PLUGIN_DATA_VERSION, PLUGIN_NAME
    from tensorboard.plugins.hparams.plugin_data_pb2 import HParamsPluginData
    data = HParamsPluginData(version=PLUGIN_DATA_VERSION, **content)
    smd = SummaryMetadata(plugin_data=SummaryMetadata.PluginData(
        plugin_name=PLUGIN_NAME, content=data.SerializeToString()))
    return Summary(value=[Summary.Value(tag=tag, metadata=smd)])


def hparams(hparam_dict=None, metric_dict=None, hparam_domain_discrete=None):
    """The hparams plugin's three summaries (experiment, session start, session end) for one
    run: ``hparam_dict`` values are numbers (bools count as numbers, as in PyTorch),
    strings or one-element tensors; ``metric_dict``'s keys name the metrics."""
    from google.protobuf import struct_pb2
    from tensorboard.plugins.hparams.api_pb2 import Experiment, MetricInfo, MetricName, Status
    from tensorboard.plugins.hparams.metadata import (EXPERIMENT_TAG, SESSION_END_INFO_TAG,
                                                      SESSION_START_INFO_TAG)
    from tensorboard.plugins.hparams.plugin_data_pb2 import SessionEndInfo, SessionStartInfo
    if not isinstance(hparam_dict, dict):
        raise TypeError("parameter: hparam_dict should be a dictionary, nothing logged.")
    if not isinstance(metric_dict, dict):
        raise TypeError("parameter: metric_dict should be a dictionary, nothing logged.")
    hparam_domain_discrete = hparam_domain_discrete or {}
    if not isinstance(hparam_domain_discrete, dict):
        raise TypeError("parameter: hparam_domain_discrete should be a dictionary, nothing "
                        "logged.")
    for k, v in hparam_domain_discrete.items():
        if (k not in hparam_dict or not isinstance(v, list)
                or not all(isinstance(d, type(hparam_dict[k])) for d in v)):
            raise TypeError(f"parameter: hparam_domain_discrete[{k}] should be a list of same "
                            f"type as hparam_dict[{k}].")

    def domain(k, field):
        if k not in hparam_domain_discrete:
            return None
        return struct_pb2.ListValue(values=[struct_pb2.Value(**{field: d})
                                            for d in hparam_domain_discrete[k]])

    hps = []
    ssi = SessionStartInfo()
    for k, v in hparam_dict.items():
        if v is None:
            continue
        if isinstance(v, (int, float)):
            ssi.hparams[k].number_value = v
            hps.append(_hparam_info(k, "DATA_TYPE_FLOAT64", domain(k, "number_value")))
        elif isinstance(v, str):
            ssi.hparams[k].string_value = v
            hps.append(_hparam_info(k, "DATA_TYPE_STRING", domain(k, "string_value")))
        elif isinstance(v, ember.Tensor):
            ssi.hparams[k].number_value = make_np(v).reshape(-1)[0]
            hps.append(_hparam_info(k, "DATA_TYPE_FLOAT64", None))
        else:
            raise ValueError("value should be one of int, float, str, bool, or torch.Tensor")
    experiment = Experiment(hparam_infos=hps,
                            metric_infos=[MetricInfo(name=MetricName(tag=k)) for k in metric_dict])
    return (_plugin_summary(EXPERIMENT_TAG, {"experiment": experiment}),
            _plugin_summary(SESSION_START_INFO_TAG, {"session_start_info": ssi}),
            _plugin_summary(SESSION_END_INFO_TAG, {"session_end_info": SessionEndInfo(
                status=Status.Value("STATUS_SUCCESS"))}))


def _pr_curve_summary(tag, data, num_thresholds):
    from tensorboard.plugins.pr_curve.plugin_data_pb2 import PrCurvePluginData
    content = PrCurvePluginData(version=0, num_thresholds=num_thresholds).SerializeToString()
    smd = SummaryMetadata(plugin_data=SummaryMetadata.PluginData(plugin_name="pr_curves",
                                                                 content=content))
    tensor = TensorProto(dtype="DT_FLOAT", float_val=data.reshape(-1).tolist(),
                         tensor_shape=TensorShapeProto(dim=[TensorShapeProto.Dim(size=n)
                                                            for n in data.shape[:2]]))
    return Summary(value=[Summary.Value(tag=tag, metadata=smd, tensor=tensor)])


def compute_curve(labels, predictions, num_thresholds=None, weights=None):
    """Rows TP, FP, TN, FN, precision, recall at ``num_thresholds`` evenly spaced thresholds
    (a prediction counts as positive at every threshold up to its bucket)."""
    minimum_count = 1e-7
    if weights is None:
        weights = 1.0
    bucket_indices = np.int32(np.floor(predictions * (num_thresholds - 1)))
    float_labels = labels.astype(np.float64)
    histogram_range = (0, num_thresholds - 1)
    tp_buckets, _ = np.histogram(bucket_indices, bins=num_thresholds, range=histogram_range,
                                 weights=float_labels * weights)
    fp_buckets, _ = np.histogram(bucket_indices, bins=num_thresholds, range=histogram_range,
                                 weights=(1.0 - float_labels) * weights)
    tp = np.cumsum(tp_buckets[::-1])[::-1]
    fp = np.cumsum(fp_buckets[::-1])[::-1]
    tn = fp[0] - fp
    fn = tp[0] - tp
    precision = tp / np.maximum(minimum_count, tp + fp)
    recall = tp / np.maximum(minimum_count, tp + fn)
    return np.stack((tp, fp, tn, fn, precision, recall))


def pr_curve(tag, labels, predictions, num_thresholds=127, weights=None):
    num_thresholds = min(num_thresholds, 127)  # more breaks the protobuf, as in PyTorch
    data = compute_curve(labels, predictions, num_thresholds=num_thresholds, weights=weights)
    return _pr_curve_summary(tag, data, num_thresholds)


def pr_curve_raw(tag, tp, fp, tn, fn, precision, recall, num_thresholds=127, weights=None):
    num_thresholds = min(num_thresholds, 127)
    return _pr_curve_summary(tag, np.stack((tp, fp, tn, fn, precision, recall)),
                             num_thresholds)
