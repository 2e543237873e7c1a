"""Rules of the pooling ops, for every backend: argument checks, output sizes and dtypes.
The CPU kernels (``cpu/pool.py``) and the Meta kernels call them; this module imports no
backend."""
from ..._core import dtype as D


def _x(shape):
    return "x".join(map(str, shape))


def _float_or_long(name, dtype, ints=(D.int64,)):
    """Dtype support of the pooling kernels: floating types plus ``ints``."""
    if not (dtype.is_floating_point or dtype in ints):
        raise NotImplementedError(f"\"{name}\" not implemented for '{dtype._short}'")


_WORDS = {2: "two", 3: "three"}


_FORMS = {"kernel_size": "must either be a single int, or a tuple of",
          "stride": "must either be omitted, a single int, or a tuple of",
          "padding": "must either be a single int, or a tuple of",
          "dilation": "must be either a single int, or a tuple of"}


def _expand(name, v, k, what):
    """A one-element parameter list stands for every spatial dim (PyTorch's pooling rule)."""
    v = list(v)
    if len(v) == 1:
        return v * k
    if len(v) != k:
        raise RuntimeError(f"{name}: {what} {_FORMS[what]} {_WORDS[k]} ints")
    return v


def pooling_output_size(size, k, pad, stride, dilation, ceil_mode):
    """ATen's pooling_output_shape."""
    out = (size + 2 * pad - dilation * (k - 1) - 1 + (stride - 1 if ceil_mode else 0)) // stride + 1
    if ceil_mode and (out - 1) * stride >= size + pad:
        out -= 1
    return out


def _half(v):
    """``v / 2`` as C++ divides ints (toward zero): a negative kernel's effective half is 0."""
    return -(-v // 2) if v < 0 else v // 2


def _check_pool3d(self, kernel_size, stride, padding, dilation, ceil_mode, avg,
                  divisor_override, backward):
    """ATen's 3-d pools in their order: the input's dims, (avg) the divisor, each dim's
    pooling_output_shape checks (T, then H, then W), then pool3d_shape_check (kernel, stride,
    dilation signs, non-empty non-batch dims, (avg) input at least the kernel, pad at most
    half the kernel, output size)."""
    size = self._size
    nd_ = len(size)
    if nd_ not in (4, 5):
        raise RuntimeError("non-empty 4D or 5D (batch mode) tensor expected for input")
    if avg and divisor_override is not None and divisor_override == 0:
        raise RuntimeError("divisor must be not zero")
    spatial = size[-3:]
    out = []
    for n, kk, p, st, d in zip(spatial, kernel_size, padding, stride, dilation):
        if st == 0:
            raise RuntimeError("stride should not be zero")
        if p < 0:
            raise RuntimeError(f"pad must be non-negative, but got pad: {p}")
        if p > _half((kk - 1) * d + 1):
            raise RuntimeError(f"pad should be at most half of effective kernel size, but got "
                               f"pad={p}, kernel_size={kk} and dilation={d}")
        out.append(pooling_output_size(n, kk, p, st, d, ceil_mode))
    kt, kh, kw = kernel_size
    if min(kernel_size) <= 0:
        raise RuntimeError(f"kernel size should be greater than zero, but got kT: {kt} kH: {kh} "
                           f"kW: {kw}")
    if min(stride) <= 0:
        raise RuntimeError(f"stride should be greater than zero, but got dT: {stride[0]} dH: "
                           f"{stride[1]} dW: {stride[2]}")
    if min(dilation) <= 0:
        raise RuntimeError(f"dilation should be greater than zero, but got dilationT: "
                           f"{dilation[0]} dilationH: {dilation[1]} dilationW: {dilation[2]}")
    for i in range(nd_ == 5, nd_):  # (a batch of none is fine)
        if size[i] == 0:
            fn = ("avg_pool3d_backward()" if backward else "avg_pool3d()") if avg else \
                f"max_pool3d_with_indices{'_backward' if backward else ''}_out_cpu_template()"
            raise RuntimeError(f"{fn}: Expected input's non-batch dimensions to have positive "
                               f"length, but input has a shape of [{', '.join(map(str, size))}] "
                               f"and non-batch dimension {size[i]} has length zero!")
    if avg and any(n < kk for n, kk in zip(spatial, kernel_size)):
        raise RuntimeError(f"input image (T: {spatial[0]} H: {spatial[1]} W: {spatial[2]}) "
                           f"smaller than kernel size (kT: {kt} kH: {kh} kW: {kw})")
    if any(p > kk // 2 for p, kk in zip(padding, kernel_size)):
        raise RuntimeError(f"pad should be smaller than or equal to half of kernel size, but got "
                           f"kT: {kt} kW: {kw} kH: {kh} padT: {padding[0]} padW: {padding[2]} "
                           f"padH: {padding[1]}")
    if any(o < 1 for o in out):
        lead = size[-4]
        raise RuntimeError(f"Given input size: ({_x((lead, *spatial))}). Calculated output size: "
                           f"({_x((lead, *out))}). Output size is too small")
    return (*size[:-3], *out), kernel_size, stride, padding, dilation


def check_pool(name, self, k, kernel_size, stride, padding, dilation, ceil_mode, dilated=True,
               divisor_override=None, backward=False):
    """Parameter and shape checks of max/avg pooling; returns (output shape, expanded params).
    ``dilated`` False: average pooling (no dilation; its divisor checked in ATen's order);
    ``backward``: the checks of the op's backward (3-d messages name it)."""
    kernel_size = _expand(name, kernel_size, k, "kernel_size")
    if not stride:
        stride = kernel_size
    stride = _expand(name, stride, k, "stride")
    padding = _expand(name, padding, k, "padding")
    dilation = _expand(name, dilation, k, "dilation") if dilated else [1] * k
    if k == 3:
        return _check_pool3d(self, kernel_size, stride, padding, dilation, ceil_mode,
                             not dilated, divisor_override, backward)
    return _check_pool2d(self, kernel_size, stride, padding, dilation, ceil_mode, not dilated,
                         divisor_override)


def _check_pool2d(self, kernel_size, stride, padding, dilation, ceil_mode, avg,
                  divisor_override):
    """ATen's 2-d pools (the 1-d ones pool a height of one) in their order: (max) the input's
    dims, (avg) the divisor and the input's size(-3), each dim's pooling_output_shape checks (H,
    then W), then pool2d_shape_check (kernel, stride, dilation signs, 3-d or 4-d with non-empty
    non-batch dims, pad at most half the kernel, output size)."""
    size = self._size
    nd_ = len(size)
    if avg:
        if divisor_override is not None and divisor_override == 0:
            raise RuntimeError("divisor must be not zero")
        if nd_ < 3:  # (ATen reads input.size(-3) here)
            raise IndexError(f"Dimension out of range (expected to be in range of "
                             f"[{-max(nd_, 1)}, {max(nd_, 1) - 1}], but got -3)")
    elif nd_ not in (3, 4):
        raise RuntimeError("non-empty 3D or 4D (batch mode) tensor expected for input")
    spatial = size[-2:]
    out = []
    for n, kk, p, st, d in zip(spatial, kernel_size, padding, stride, dilation):
        if st == 0:
            raise RuntimeError("stride should not be zero")
        if p < 0:
            raise RuntimeError(f"pad must be non-negative, but got pad: {p}")
        if p > _half((kk - 1) * d + 1):
            raise RuntimeError(f"pad should be at most half of effective kernel size, but got "
                               f"pad={p}, kernel_size={kk} and dilation={d}")
        out.append(pooling_output_size(n, kk, p, st, d, ceil_mode))
    (kh, kw), (dh, dw), (dilh, dilw), (ph, pw) = kernel_size, stride, dilation, padding
    if kh <= 0 or kw <= 0:
        raise RuntimeError(f"kernel size should be greater than zero, but got kH: {kh} kW: {kw}")
    if dh <= 0 or dw <= 0:
        raise RuntimeError(f"stride should be greater than zero, but got dH: {dh} dW: {dw}")
    if dilh <= 0 or dilw <= 0:
        raise RuntimeError(f"dilation should be greater than zero, but got dilationH: {dilh} "
                           f"dilationW: {dilw}")
    if nd_ not in (3, 4) or 0 in size[nd_ - 3:]:  # (a batch of none is fine)
        raise RuntimeError(f"Expected 3D or 4D (batch mode) tensor with optional 0 dim batch "
                           f"size for input, but got:[{', '.join(map(str, size))}]")
    if pw > kw // 2 or ph > kh // 2:
        raise RuntimeError(f"pad should be smaller than or equal to half of kernel size, but got "
                           f"padW = {pw}, padH = {ph}, kW = {kw}, kH = {kh}")
    if any(o < 1 for o in out):
        lead = size[-3]
        raise RuntimeError(f"Given input size: ({_x((lead, *spatial))}). Calculated output size: "
                           f"({_x((lead, *out))}). Output size is too small")
    return (*size[:-2], *out), kernel_size, stride, padding, dilation


def check_max_pool1d(self, kernel_size, stride, padding, dilation, ceil_mode):
    """ATen's max_pool1d (its own kernel, without indices): the input's dims and non-batch
    sizes, then :func:`check_max_pool1d_args`; returns (kernel, stride, padding, dilation) as
    ints."""
    size = self._size
    if not ((len(size) == 2 and size[0] and size[1]) or (len(size) == 3 and size[1] and size[2])):
        raise RuntimeError(f"max_pool1d: Expected 2D or 3D (batch mode) tensor with optional 0 "
                           f"dim batch size for input, but got:[{', '.join(map(str, size))}]")
    return check_max_pool1d_args(size[-1], kernel_size, stride, padding, dilation, ceil_mode)


def check_max_pool1d_args(width, kernel_size, stride, padding, dilation, ceil_mode):
    """ATen's check_max_pool1d, in its order and words (the quantized max_pool1d runs it too);
    returns (kernel, stride, padding, dilation) as ints."""
    for arg, v, forms in (("kernel_size", kernel_size, "an int, list of ints or tuple of ints"),
                          ("stride", stride, "None, an int, list of ints, or tuple of ints"),
                          ("padding", padding, "an int, list of ints, or tuple of ints"),
                          ("dilation", dilation, "an int, list of ints or tuple of ints")):
        if len(v) != 1 and not (arg == "stride" and not v):
            raise RuntimeError(f"max_pool1d() {arg} must be {forms} of size 1 but got size "
                               f"{len(v)}")
    (k,), (p,), (d,) = kernel_size, padding, dilation
    s = stride[0] if stride else k
    for arg, v in (("kernel_size", k), ("stride", s)):
        if v <= 0:
            raise RuntimeError(f"max_pool1d() {arg} must be greater than zero, but got {v}")
    if p < 0:
        raise RuntimeError(f"max_pool1d() padding must be non-negative, but got {p}")
    if p > k // 2:
        raise RuntimeError(f"max_pool1d() padding should be at most half of kernel size, but "
                           f"got padding={p} and kernel_size={k}")
    if d <= 0:
        raise RuntimeError(f"max_pool1d() dilation must be greater than zero, but got {d}")
    out = pooling_output_size(width, k, p, s, d, ceil_mode)
    if out <= 0:
        raise RuntimeError(f"max_pool1d() Invalid computed output size: {out}")
    return k, s, p, d


def _check_dim_size(t, dim, dim_size, size):
    """ATen's check_dim_size."""
    if len(t._size) != dim or t._size[dim_size] != size:
        raise RuntimeError(f"Expected a tensor of dimension {dim} and tensor.size[{dim_size}] == "
                           f"{size} but got: dimension {len(t._size)} and tensor.size[{dim_size}] "
                           f"= {t._size[dim_size]}")


def check_pool_backward(name, grad_output, self, indices, shape):
    """ATen's backward shape checks, after the forward's: grad_output's, then (max) indices',
    planes and output sizes, then for a 2-d max pool of a batch their batch sizes. ATen checks
    no batch size otherwise (nor, for the 3-d max pool, grad_output's output sizes); ember
    refuses a grad_output of another shape than the output's still (its kernels read it so)."""
    k = 3 if "3d" in name else 2
    nd_ = len(self._size)
    if k == 3 and indices is not None and len(grad_output._size) >= 3:
        # (ATen's 3-d max pool backward takes the output's sizes from grad_output)
        shape = (*shape[:-3], *grad_output._size[-3:])
    for t in (grad_output, indices):
        if t is not None:
            for d in range(nd_ - k - 1, nd_):
                _check_dim_size(t, nd_, d, shape[d])
    if k == 2 and indices is not None and nd_ == 4:
        for t in (grad_output, indices):
            _check_dim_size(t, nd_, 0, shape[0])
    if tuple(grad_output._size) != tuple(shape):
        raise RuntimeError(f"Expected grad_output of size {list(shape)}, but got "
                           f"{list(grad_output._size)}")


def check_avg_pool(name, self, k, kernel_size, stride, padding, ceil_mode, divisor_override,
                   backward=False):
    res = check_pool(name, self, k, kernel_size, stride, padding, (1,), ceil_mode, dilated=False,
                     divisor_override=divisor_override, backward=backward)
    # ATen's avg_pool3d (and its backward) has a kernel for float, double and long only,
    # named for its frame
    if k == 3 and self._dtype not in (D.float32, D.float64, D.int64):
        frame = "avg_pool3d_backward_out_frame" if backward else "avg_pool3d_out_frame"
        raise NotImplementedError(f"\"{frame}\" not implemented for '{self._dtype._short}'")
    _float_or_long(f"{name}_backward" if backward else name, self._dtype)
    return res


def check_adaptive(name, self, k, output_size, ints=()):
    if len(output_size) != k:
        if name.startswith("adaptive_max"):
            raise RuntimeError(f"{name}(): internal error: output_size.size() must be {k}")
        raise RuntimeError(f"{name}: output_size must be {k}")
    nd_ = len(self._size)
    if nd_ not in (k + 1, k + 2):
        sep = ": " if name.startswith("adaptive_max") else ""
        raise RuntimeError(f"{name}(): Expected {k + 1}D or {k + 2}D tensor, but got{sep}"
                           f"{'' if sep else ' '}[{', '.join(map(str, self._size))}]")
    # adaptive_avg_pool2d only needs non-empty spatial dims; the others every non-batch dim
    first = nd_ - k if name == "adaptive_avg_pool2d" else 1
    for i in range(first, nd_):
        if self._size[i] == 0:
            sizes = ", ".join(map(str, self._size))
            raise RuntimeError(f"{name}(): Expected input to have non-zero size for non-batch "
                               f"dimensions, but input has sizes [{sizes}] with dimension {i} "
                               f"being empty")
    if any(o < 0 for o in output_size):
        raise RuntimeError(f"{name}: elements of output_size must be greater than or equal to 0 "
                           f"but received {{{', '.join(map(str, output_size))}}}")
    if name != "adaptive_avg_pool2d" or 0 not in self._size:  # 2d avg: only in its loop
        # (ATen's 3-d kernels are named for the CPU)
        _float_or_long(name + "_cpu" if k == 3 else name, self._dtype, ints)
    return (*self._size[:-k], *output_size)


def check_max_unpool(name, self, indices, output_size, k):
    if indices._dtype is not D.int64:
        raise RuntimeError("elements in indices should be type int64 but got: "
                           f"{indices._dtype._short}")
    if len(output_size) != k:
        raise RuntimeError(f"There should be exactly {k} elements (height, width) in "
                           f"output_size, but got {len(output_size)} elements."
                           if k == 2 else f"There should be exactly three elements (depth, "
                           f"height, width) in output_size, but got: {len(output_size)}")
    if len(self._size) not in (k + 1, k + 2):
        raise RuntimeError(f"Input to {name} should be a {k + 1}d or {k + 2}d Tensor, but got a "
                           f"tensor with {len(self._size)} dimensions.")
    if tuple(self._size) != tuple(indices._size):
        raise RuntimeError(f"Expected shape of indices to be same as that of the input tensor "
                           f"({list(self._size)}) but got indices tensor with shape: "
                           f"{list(indices._size)}")
    if not self._dtype.is_floating_point:
        raise NotImplementedError(f"\"{name}\" not implemented for '{self._dtype._short}'")
    return (*self._size[:-k], *output_size)


# ---------------------------------------------------------------------------------------------
# Fractional max pooling (ATen's FractionalMaxPool2d.cpp / FractionalMaxPool3d.cpp)

_FRAC_DIMS = {2: ("height", "width"), 3: ("time", "height", "width")}


def _frac_prefix(k):
    """The function name ATen's messages give (the 3d kernel reports its out= form)."""
    return "fractional_max_pool2d()" if k == 2 else "fractional_max_pool3d_out()"


def check_fractional_max_pool(self, k, kernel_size, output_size, random_samples):
    """Checks of fractional_max_pool{k}d in ATen's order (input, sizes, then the random
    samples); returns the output shape."""
    name = f"fractional_max_pool{k}d"
    ints = "Ints" if k == 2 else "three Ints"
    if len(kernel_size) != k:
        raise RuntimeError(f"{name}: kernel_size must either be a single Int or tuple of {ints}")
    if len(output_size) != k:
        raise RuntimeError(f"{name}: output_size must either be a single Int or tuple of {ints}")
    size = self._size
    nd_ = len(size)
    where = _frac_prefix(k)
    if nd_ not in (k + 1, k + 2):
        raise RuntimeError(f"{where}: Expected {k + 1}D or {k + 2}D tensor, but got: "
                           f"[{', '.join(map(str, size))}]")
    for i in range(1, nd_):
        if size[i] == 0:
            raise RuntimeError(f"{where}: Expected input to have non-zero size for non-batch "
                               f"dimensions, but got[{', '.join(map(str, size))}] with dimension "
                               f"{i} being empty.")
    for dim, o, kk, n in zip(_FRAC_DIMS[k], output_size, kernel_size, size[-k:]):
        if o + kk - 1 > n:
            raise RuntimeError(f"{where}: pool {dim} {kk} too large relative to input {dim} {n}")
    rs = random_samples
    if rs._dtype is not self._dtype:
        raise RuntimeError("Expect _random_samples to have the same dtype as input")
    if len(rs._size) != 3:
        raise RuntimeError(f"Expect _random_samples to have 3 dimensions, got {len(rs._size)}")
    batch = size[0] if nd_ == k + 2 else 1
    if rs._size[0] < batch:
        raise RuntimeError("Expect _random_samples.size(0) no less then input batch size.")
    if rs._size[1] != size[-k - 1]:
        raise RuntimeError("Expect _random_samples.size(1) equals to input channel size.")
    if rs._size[2] != k:
        raise RuntimeError(f"Expect _random_samples.size(2) equals to {k}; got {rs._size[2]}.")
    if not self._dtype.is_floating_point:
        raise NotImplementedError(f"\"{name}_out_frame\" not implemented for "
                                  f"'{self._dtype._short}'")
    if any(o < 0 for o in output_size):
        raise RuntimeError(f"Trying to create tensor with negative dimension "
                           f"{min(output_size)}: [{', '.join(map(str, (*size[:-k], *output_size)))}]")
    return (*size[:-k], *output_size)


def check_fractional_max_pool_backward(grad_output, self, k, output_size, indices):
    """Checks of fractional_max_pool{k}d_backward: gradOutput and indices must have the
    forward's output shape (ATen checks the pooled dims; the whole shape is checked here, since
    a mismatch elsewhere would read out of bounds), same dtype as self, int64 indices."""
    shape = (*self._size[:-k], *output_size)
    if k == 2:
        where = "fractional_max_pool2d_backward()"
        if tuple(grad_output._size) != shape:
            raise RuntimeError(f"{where}: gradOutput sizes unexpected")
        if tuple(indices._size) != shape:
            raise RuntimeError(f"{where}: indices sizes unexpected")
    else:
        where = "fractional_max_pool3d_backward_out()"
        if len(grad_output._size) != len(shape):
            raise RuntimeError(f"{where}: gradOutput sizes unexpected")
        for dim, g, o in zip(_FRAC_DIMS[3], grad_output._size[-3:], output_size):
            if g != o:
                raise RuntimeError(f"{where}: gradOutput {dim} unexpected")
        if tuple(grad_output._size) != shape:
            raise RuntimeError(f"{where}: gradOutput sizes unexpected")
        if tuple(indices._size) != shape:
            raise RuntimeError(f"{where}: indices sizes unexpected")
    if grad_output._dtype is not self._dtype:
        raise RuntimeError(f"expected scalar type {self._dtype._short} but found "
                           f"{grad_output._dtype._short}")
    if indices._dtype is not D.int64:
        raise RuntimeError(f"expected scalar type Long but found {indices._dtype._short}")
