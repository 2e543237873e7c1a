"""Rules of the upsample, padding and pixel-shuffle ops, for every backend: argument checks and
result shapes and dtypes, with PyTorch's errors. The CPU kernels (``cpu/resample.py``) and the
Meta kernels (``meta/resample.py``) call them; this module imports no backend."""
from ..._core import dtype as D
from ..._core import strides as _st


# The upsample ops generated from one kernel each (op -> the name its checks and tables use;
# PyTorch's nearest-exact ops are underscored).
UPSAMPLE_OPS = {
    "upsample_nearest1d": "upsample_nearest1d", "upsample_nearest2d": "upsample_nearest2d",
    "upsample_nearest3d": "upsample_nearest3d",
    "_upsample_nearest_exact1d": "upsample_nearest_exact1d",
    "_upsample_nearest_exact2d": "upsample_nearest_exact2d",
    "_upsample_nearest_exact3d": "upsample_nearest_exact3d",
    "upsample_linear1d": "upsample_linear1d", "upsample_bilinear2d": "upsample_bilinear2d",
    "upsample_bicubic2d": "upsample_bicubic2d", "upsample_trilinear3d": "upsample_trilinear3d",
}


PAD_MODES = ("reflection", "replication")  # {mode}_pad{1,2,3}d and their backward ops


# op name -> (spatial dims, mode)
_MODES = {"upsample_nearest1d": (1, "nearest"), "upsample_nearest2d": (2, "nearest"),
          "upsample_nearest3d": (3, "nearest"), "upsample_nearest_exact1d": (1, "exact"),
          "upsample_nearest_exact2d": (2, "exact"), "upsample_nearest_exact3d": (3, "exact"),
          "upsample_linear1d": (1, "linear"), "upsample_bilinear2d": (2, "linear"),
          "upsample_bicubic2d": (2, "cubic"), "upsample_trilinear3d": (3, "linear")}


_AXES = {1: "W", 2: "HW", 3: "DHW"}


_FLOAT_ONLY = {"linear", "cubic"}


def check_upsample(name, input_size, output_size, dtype, stride=None):
    k, mode = _MODES[name]
    if len(output_size) != k:
        raise RuntimeError(f"It is expected output_size equals to {k}, but got size "
                           f"{len(output_size)}")
    if len(input_size) != k + 2:
        raise RuntimeError(f"It is expected input_size equals to {k + 2}, but got size "
                           f"{len(input_size)}")
    spatial = input_size[2:]
    if any(s <= 0 for s in spatial) or any(o <= 0 for o in output_size):
        axes = _AXES[k]
        raise RuntimeError("Input and output sizes should be greater than 0, but got input ("
                           + ", ".join(f"{a}: {s}" for a, s in zip(axes, spatial)) +
                           ") output (" + ", ".join(f"{a}: {s}" for a, s in zip(axes, output_size))
                           + ")")
    if input_size[1] == 0:
        raise RuntimeError(f"Non-empty {k + 2}D data tensor expected but got a tensor with sizes "
                           f"[{', '.join(map(str, input_size))}]")
    # uint8 is taken by the nearest modes and by bilinear2d/bicubic2d (ATen's PIL-style integer
    # path); linear1d and trilinear3d have no Byte kernel
    byte_ok = mode not in _FLOAT_ONLY or name in ("upsample_bilinear2d", "upsample_bicubic2d")
    if not dtype.is_floating_point and (dtype is not D.uint8 or not byte_ok):
        raise NotImplementedError(f"\"{_dispatch_name(name, k, mode, input_size, output_size, stride)}"
                                  f"\" not implemented for '{dtype._short}'")
    return (*input_size[:2], *output_size)


def _dispatch_name(name, k, mode, input_size, output_size, stride):
    """The kernel named in PyTorch's "not implemented for" message: UpSampleKernel.cpp sends
    channels-last inputs with more than 3 channels (and, in 2-d, outputs with H + W <= 128) to
    the vectorized ``<op>_channels_last`` kernel and the rest to the generic one, whose first
    dtype dispatch is ``compute_indices_weights_<mode>``; bicubic is always generic."""
    generic = "compute_indices_weights_" + {"exact": "nearest", "cubic": "cubic"}.get(mode, mode)
    channels_last = stride is not None and k > 1 and input_size[1] > 3 and \
        _st.is_channels_last(input_size, stride)
    if mode == "cubic" or k == 1 or not (channels_last or (k == 2 and sum(output_size) <= 128)):
        return generic
    return name.replace("_exact", "") + "_channels_last"


def check_constant_pad(self, pad):
    if len(pad) % 2:
        raise RuntimeError(f"Length of pad must be even but instead it equals {len(pad)}")
    nd_ = len(self._size)
    if len(pad) // 2 > nd_:
        raise RuntimeError(f"Length of pad should be no more than twice the number of dimensions "
                           f"of the input. Pad length is {len(pad)}while the input has "
                           f"{nd_}dimensions.")
    shape = list(self._size)
    for i in range(len(pad) // 2):
        d = nd_ - 1 - i
        lo, hi = pad[2 * i], pad[2 * i + 1]
        new = shape[d] + lo + hi
        if shape[d] + min(lo, 0) < 0 or shape[d] + min(lo, 0) + min(hi, 0) < 0:
            raise RuntimeError("narrow(): length must be non-negative.")
        if new < 0:
            raise RuntimeError(f"The input size {shape[d]}, plus negative padding {lo} and {hi} "
                               f"resulted in a negative output size, which is invalid. Check "
                               f"dimension {d} of your input.")
        shape[d] = new
    return tuple(shape)


def check_pad(mode, k, self, padding):
    name = f"{mode}_pad{k}d"
    if len(padding) != 2 * k:
        raise RuntimeError(f"padding size is expected to be {2 * k}, but got: {len(padding)}")
    nd_ = len(self._size)
    if nd_ not in (k + 1, k + 2) or 0 in self._size[nd_ - k - 1:]:
        raise RuntimeError(f"Expected {k + 1}D or {k + 2}D (batch mode) tensor with possibly 0 "
                           f"batch size and other non-zero dimensions for input, but got: "
                           f"[{', '.join(map(str, self._size))}]")
    shape = list(self._size)
    for i in range(k):
        d = nd_ - 1 - i
        lo, hi = padding[2 * i], padding[2 * i + 1]
        if mode == "reflection" and (lo >= shape[d] or hi >= shape[d]):
            raise RuntimeError(f"Argument #{4 + 2 * i if k > 1 else 4}: Padding size should be "
                               f"less than the corresponding input dimension, but got: padding "
                               f"({lo}, {hi}) at dimension {d} of input "
                               f"[{', '.join(map(str, self._size))}]")
        shape[d] += lo + hi
        if shape[d] < 1:
            raise RuntimeError(f"input ({'x'.join(map(str, self._size[-k:]))}) is too small. "
                               f"Calculated output {'x'.join(map(str, shape[-k:]))}")
    if self._dtype is D.bool_:
        raise NotImplementedError(f"\"{name}\" not implemented for 'Bool'")
    return tuple(shape)


def check_pixel_shuffle(name, self, factor, shuffle):
    if len(self._size) < 3:
        raise RuntimeError(f"{name} expects input to have at least 3 dimensions, but got input "
                           f"with {len(self._size)} dimension(s)")
    word = "upscale_factor" if shuffle else "downscale_factor"
    if factor <= 0:
        raise RuntimeError(f"{name} expects a positive {word}, but got {factor}")
    *lead, c, h, w = self._size
    if shuffle:
        if c % (factor * factor):
            raise RuntimeError(f"pixel_shuffle expects its input's 'channel' dimension to be "
                               f"divisible by the square of upscale_factor, but input.size(-3)="
                               f"{c} is not divisible by {factor * factor}")
        return (*lead, c // (factor * factor), h * factor, w * factor)
    if h % factor:
        raise RuntimeError(f"pixel_unshuffle expects height to be divisible by downscale_factor, "
                           f"but input.size(-2)={h} is not divisible by {factor}")
    if w % factor:
        raise RuntimeError(f"pixel_unshuffle expects width to be divisible by downscale_factor, "
                           f"but input.size(-1)={w} is not divisible by {factor}")
    return (*lead, c * factor * factor, h // factor, w // factor)
