"""Image-array helpers for the summaries: tile a batch into one image and reorder any layout
(NCHW, HWC, HW, ...) to the HWC TensorBoard encodes."""
import numpy as np

__all__ = ["convert_to_HWC", "make_grid"]


def make_grid(I, ncols=8):
    """N1HW or N3HW images tiled into one 3 x (H rows) x (W cols) canvas, row by row."""
    if not isinstance(I, np.ndarray):
        raise AssertionError("plugin error, should pass numpy array here")
    if I.shape[1] == 1:
        I = np.concatenate([I, I, I], 1)
    if I.ndim != 4 or I.shape[1] != 3:
        raise AssertionError("Input should be a 4D numpy array with 3 channels")
    nimg, H, W = I.shape[0], I.shape[2], I.shape[3]
    ncols = min(nimg, ncols)
    nrows = int(np.ceil(float(nimg) / ncols))
    canvas = np.zeros((3, H * nrows, W * ncols), dtype=I.dtype)
    for i in range(nimg):
        y, x = divmod(i, ncols)
        canvas[:, y * H:(y + 1) * H, x * W:(x + 1) * W] = I[i]
    return canvas


def convert_to_HWC(tensor, input_format):
    """``tensor`` (a NumPy array laid out as ``input_format``) as an H x W x 3 (or 4) image;
    a batch becomes a grid, one channel is repeated three times."""
    if len(set(input_format)) != len(input_format):
        raise AssertionError(f"You can not use the same dimension shorthand twice. "
                             f"input_format: {input_format}")
    if len(tensor.shape) != len(input_format):
        raise AssertionError(f"size of input tensor and input format are different. "
                             f"tensor shape: {tensor.shape}, input_format: {input_format}")
    input_format = input_format.upper()
    if len(input_format) == 4:
        index = [input_format.find(c) for c in "NCHW"]
        return make_grid(tensor.transpose(index)).transpose(1, 2, 0)
    if len(input_format) == 3:
        index = [input_format.find(c) for c in "HWC"]
        tensor_HWC = tensor.transpose(index)
        if tensor_HWC.shape[2] == 1:
            tensor_HWC = np.concatenate([tensor_HWC, tensor_HWC, tensor_HWC], 2)
        return tensor_HWC
    if len(input_format) == 2:
        index = [input_format.find(c) for c in "HW"]
        tensor = tensor.transpose(index)
        return np.stack([tensor, tensor, tensor], 2)
    raise AssertionError(f"Unsupported input format: {input_format}")
