"""The short-time Fourier transform ops (aten ``stft``, ``stft.center``, ``istft``) decomposed
as ATen's SpectralOps.cpp does: frames taken with ``unfold``, windowed, transformed by
``_fft_r2c`` / ``_fft_c2c``; the inverse by ``_fft_c2r`` / ``_fft_c2c`` and an overlap-add
(``index_add``) divided by the summed squared window. Autograd flows through those ops."""
from ..._core import dtype as D
from ..._ops.overload import ops


A = ops.aten
_NORM_NONE, _NORM_ROOT_N, _NORM_N = 0, 1, 2


def _warn_once(key, msg):
    from ..cpu.linalg import warn_once
    warn_once(key, msg)


def _opt(v):
    return "None" if v is None else str(int(v))


def _legacy_type(t):
    return f"torch.{t._dtype._short}Tensor"


def _sizes(t):
    return "[" + ", ".join(map(str, t._size)) + "]"


def stft(self, n_fft, hop_length=None, win_length=None, window=None, normalized=False,
         onesided=None, return_complex=None, align_to_window=None):
    return_complex_ = return_complex if return_complex is not None else (
        self._dtype.is_complex or (window is not None and window._dtype.is_complex))
    if not return_complex_:
        if return_complex is None:
            raise RuntimeError("stft requires the return_complex parameter be given for real "
                               "inputs, and will further require that return_complex=True in a "
                               "future PyTorch release.")
        _warn_once("stft_real", "stft with return_complex=False is deprecated. In a future "
                   "pytorch release, stft will return complex tensors for all inputs, and "
                   "return_complex=False will raise an error.\nNote: you can still call "
                   "torch.view_as_real on the complex output to recover the old return format.")
    if window is None:
        _warn_once("stft_window", "A window was not provided. A rectangular window will be "
                   "applied,which is known to cause spectral leakage. Other windows such as "
                   "torch.hann_window or torch.hamming_window are recommended to reduce spectral "
                   "leakage.To suppress this warning and use a rectangular window, explicitly set "
                   "`window=torch.ones(n_fft, device=<device>)`.")
    hop = hop_length if hop_length is not None else n_fft >> 2
    win = win_length if win_length is not None else n_fft

    def fail(msg):
        w = "None" if window is None else f"{_legacy_type(window)}{{{_sizes(window)}}}"
        raise RuntimeError(f"stft({_legacy_type(self)}{_sizes(self)}, n_fft={n_fft}, "
                           f"hop_length={hop}, win_length={win}, window={w}, "
                           f"normalized={int(normalized)}, onesided={_opt(onesided)}, "
                           f"return_complex={_opt(return_complex)}, "
                           f"align_to_window={_opt(align_to_window)}) : {msg}")
    if not (self._dtype.is_floating_point or self._dtype.is_complex):
        fail("expected a tensor of floating point or complex values")
    if self.dim() not in (1, 2):
        fail("expected a 1D or 2D tensor")
    x = A.unsqueeze.default._call(self, 0) if self.dim() == 1 else self
    length = x._size[1]
    if n_fft <= 0 or n_fft > length:
        fail(f"expected 0 < n_fft < {length}, but got n_fft={win}")
    if hop <= 0:
        fail(f"expected hop_length > 0, but got hop_length={hop}")
    if win <= 0 or win > n_fft:
        fail(f"expected 0 < win_length <= n_fft, but got win_length={win}")
    if window is not None and (window.dim() != 1 or window._size[0] != win):
        fail(f"expected a 1D window tensor of size equal to win_length={win}, but got window "
             f"with size {_sizes(window)}")
    w = window
    if win < n_fft:  # the window sits centred in n_fft zeros
        left = (n_fft - win) // 2
        if w is None:
            w = A.ones.default._call([win], self._dtype if not self._dtype.is_complex else
                                     self._dtype.to_real(), None, self._device, None)
        w = A.constant_pad_nd.default._call(w, [left, n_fft - win - left], 0)
        if align_to_window:  # frames follow the window: the signal grows by its offset
            x = A.constant_pad_nd.default._call(x, [left, left], 0)
    frames = A.unfold.default._call(x, 1, n_fft, hop)  # (batch, n_frames, n_fft)
    if w is not None:
        frames = A.mul.Tensor._call(frames, w)
    complex_fft = frames._dtype.is_complex
    onesided_ = onesided if onesided is not None else not complex_fft
    norm = _NORM_ROOT_N if normalized else _NORM_NONE
    if complex_fft:
        if onesided_:
            raise RuntimeError("Cannot have onesided output if window or input is complex")
        out = A._fft_c2c.default._call(frames, [2], norm, True)
    else:
        out = A._fft_r2c.default._call(frames, [2], norm, onesided_)
    # (in place, as ATen's: the result is the transform's own tensor, not a view of it)
    A.transpose_.default._call(out, 1, 2)
    if self.dim() == 1:
        A.squeeze_.dim._call(out, 0)
    return out if return_complex_ else A.view_as_real.default._call(out)


def stft_center(self, n_fft, hop_length=None, win_length=None, window=None, center=True,
                pad_mode="reflect", normalized=False, onesided=None, return_complex=None,
                align_to_window=None):
    if center and align_to_window is not None:
        raise RuntimeError("stft align_to_window should only be set when center = false")
    if center:  # pad n_fft // 2 on both sides (through a 3-d view, as F.pad wants)
        from ... import nn
        signal_dim = self.dim()
        extended = [1] * (3 - signal_dim) + list(self._size)
        pad = int(n_fft // 2)
        x = nn.functional.pad(A.view.default._call(self, extended), [pad, pad], pad_mode)
        self = A.view.default._call(x, list(x._size[-signal_dim:]))
    return stft(self, n_fft, hop_length, win_length, window, normalized, onesided,
                return_complex, align_to_window)


def _overlap_add(frames, hop, length):
    """Sum of (channel, n_frames, n_fft) frames placed every ``hop`` samples: (channel, length)."""
    ch, n_frames, n_fft = frames._size
    starts = A.mul.Scalar._call(
        A.arange.default._call(n_frames, D.int64, None, frames._device, None), hop)
    idx = A.add.Tensor._call(A.unsqueeze.default._call(starts, 1),
                             A.arange.default._call(n_fft, D.int64, None, frames._device, None),
                             1)
    zeros = A.zeros.default._call([ch, length], frames._dtype, None, frames._device, None)
    return A.index_add.default._call(zeros, 1, A.reshape.default._call(idx, [-1]),
                                     A.reshape.default._call(frames, [ch, n_frames * n_fft]), 1)


def istft(self, n_fft, hop_length=None, win_length=None, window=None, center=True,
          normalized=False, onesided=None, length=None, return_complex=False):
    if window is None:
        _warn_once("istft_window", "A window was not provided. A rectangular window will be "
                   "applied.Please provide the same window used by stft to make the inversion "
                   "lossless.To suppress this warning and use a rectangular window, explicitly "
                   "set `window=torch.ones(n_fft, device=<device>)`.")
    hop = hop_length if hop_length is not None else n_fft >> 2
    win = win_length if win_length is not None else n_fft
    if not self._dtype.is_complex:
        raise RuntimeError("istft requires a complex-valued input tensor matching the output "
                           "from stft with return_complex=True.")

    def repr_():
        w = "None" if window is None else f"{_legacy_type(window)}{{{_sizes(window)}}}"
        return (f"istft(CPU{self._dtype._short}Type{_sizes(self)}, n_fft={n_fft}, "
                f"hop_length={hop}, win_length={win}, window={w}, center={int(center)}, "
                f"normalized={int(normalized)}, onesided={_opt(onesided)}, length="
                f"{'None' if length is None else length}, return_complex={int(return_complex)})")

    def fail(msg):
        raise RuntimeError(f"{repr_()} : {msg}")
    input_dim = self.dim() + 1  # as view_as_real counts it
    n_frames = self._size[-1] if self.dim() >= 1 else 0
    fft_size = self._size[-2] if self.dim() >= 2 else 0
    expected_len = n_fft + hop * (n_frames - 1)
    if self.numel() == 0:
        fail("input tensor cannot be empty.")
    if input_dim not in (3, 4):
        fail(f"expected a tensor with 3 or 4 dimensions of complex, but got {input_dim}")
    onesided_ = onesided if onesided is not None else fft_size != n_fft
    if onesided_:
        if n_fft // 2 + 1 != fft_size:
            fail(f"expected the frequency dimension (3rd to the last) of the input tensor to "
                 f"match n_fft / 2 + 1 when onesided=True, but got {fft_size}")
    elif n_fft != fft_size:
        fail(f"expected the frequency dimension (3rd to the last) of the input tensor to match "
             f"n_fft when onesided=False, but got {fft_size}")
    if not (0 < hop <= win):
        fail("expected 0 < hop_length <= win_length")
    if not (0 < win <= n_fft):
        fail("expected 0 < win_length <= n_fft")
    if window is not None and (window.dim() != 1 or window._size[0] != win):
        fail("Invalid window shape. window has to be 1D and length of `win_length`")
    real = self._dtype.to_real()
    w = window if window is not None else \
        A.ones.default._call([win], real, None, self._device, None)
    if win != n_fft:
        left = (n_fft - win) // 2
        w = A.constant_pad_nd.default._call(w, [left, n_fft - win - left], 0)
    x = A.unsqueeze.default._call(self, 0) if input_dim == 3 else self
    x = A.transpose.int._call(x, 1, 2)  # (channel, n_frames, fft_size)
    norm = _NORM_ROOT_N if normalized else _NORM_N
    if return_complex:
        if onesided_:
            raise RuntimeError("Cannot have onesided output if window or input is complex")
        x = A._fft_c2c.default._call(x, [2], norm, False)
    else:
        if window is not None and window._dtype.is_complex:
            raise RuntimeError("Complex windows are incompatible with return_complex=False")
        if not onesided_:
            x = A.narrow.default._call(x, -1, 0, n_fft // 2 + 1)
        x = A._fft_c2r.default._call(x, [2], norm, n_fft)
    y = _overlap_add(A.mul.Tensor._call(x, w), hop, expected_len)
    w2 = A.expand.default._call(A.reshape.default._call(A.pow.Tensor_Scalar._call(w, 2),
                                                        [1, 1, n_fft]), [1, n_frames, n_fft],
                                False)
    envelope = _overlap_add(w2, hop, expected_len)
    start = n_fft // 2 if center else 0
    if length is not None:
        end = start + length
    else:
        end = -(n_fft // 2) if center else expected_len
    stop = min(end, expected_len) if end >= 0 else expected_len + end
    y = A.slice.Tensor._call(y, 1, start, stop, 1)
    envelope = A.slice.Tensor._call(envelope, 1, start, stop, 1)
    low = A.lt.Scalar._call(A.min.default._call(A.abs.default._call(envelope)), 1e-11)
    if bool(low.item()):
        raise RuntimeError(f"{repr_()} window overlap add min: 1\n[ CPUBoolType{{}} ]")
    y = A.div.Tensor._call(y, envelope)
    if input_dim == 3:
        y = A.squeeze.dim._call(y, 0)
    if end > expected_len:
        _warn_once("istft_length", "The length of signal is shorter than the length parameter. "
                   "Result is being padded with zeros in the tail. Please check your center and "
                   "hop_length settings.")
        y = A.constant_pad_nd.default._call(y, [0, end - expected_len], 0)
    return y
