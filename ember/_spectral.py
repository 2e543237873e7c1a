"""``ember.stft`` and ``Tensor.stft`` as torch/functional.py and torch/_tensor.py define them:
``center`` and ``pad_mode`` are arguments of the Python function, which calls aten
``stft.center`` (the generated binding alone would pick the overload without centring).
``istft`` is its generated binding, as ``torch.istft`` is ``_VF.istft``."""
from ._ops.overload import ops as _ops
from ._tensor import Tensor as _Tensor

__all__ = ["stft"]


def stft(input, n_fft, hop_length=None, win_length=None, window=None, center=True,  # noqa: A002
         pad_mode="reflect", normalized=False, onesided=None, return_complex=None,
         align_to_window=None):
    """Short-time Fourier transform: (…, n_fft // 2 + 1 or n_fft, n_frames) complex frames."""
    return _ops.aten.stft.center(input, n_fft, hop_length, win_length, window, center, pad_mode,
                                 normalized, onesided, return_complex, align_to_window)


def _tensor_stft(self, n_fft, hop_length=None, win_length=None, window=None, center=True,
                 pad_mode="reflect", normalized=False, onesided=None, return_complex=None,
                 align_to_window=None):
    return stft(self, n_fft, hop_length, win_length, window, center, pad_mode, normalized,
                onesided, return_complex, align_to_window)


_Tensor.stft = _tensor_stft
