"""Decoders for ``(key, bytes)`` samples (after webdataset's autodecode): ``Decoder`` tries
its handlers in order until one returns something other than None. Stock handlers:
``basichandlers`` (text, ints, json, pickle, ``.pt`` through ``ember.load``), images (PIL, to
NumPy or ember tensors), video (torchvision), audio (torchaudio), ``.mat`` (scipy)."""
import io
import json
import os.path
import pickle
import tempfile

from .common import StreamWrapper

__all__ = ["Decoder", "ImageHandler", "MatHandler", "audiohandler", "basichandlers",
           "extension_extract_fn", "handle_extension", "imagehandler", "mathandler",
           "videohandler"]


def basichandlers(extension: str, data):
    """txt/text/transcript: UTF-8 str; cls/cls2/class/count/index/inx/id: int (None if not
    one); json/jsn: json; pickle/pyd: pickle; pt: ``ember.load``; else None.

    (Like PyTorch, the text and json checks are substring tests on "txt text transcript" and
    "json jsn", so e.g. "" and "t" match too.)"""
    if extension in "txt text transcript":
        return data.decode("utf-8")
    if extension in ["cls", "cls2", "class", "count", "index", "inx", "id"]:
        try:
            return int(data)
        except ValueError:
            return None
    if extension in "json jsn":
        return json.loads(data)
    if extension in ["pyd", "pickle"]:
        return pickle.loads(data)
    if extension == "pt":
        from ..... import load
        return load(io.BytesIO(data))
    return None


# spec -> (array type, element type, PIL mode)
imagespecs = {
    "l8": ("numpy", "uint8", "l"),
    "rgb8": ("numpy", "uint8", "rgb"),
    "rgba8": ("numpy", "uint8", "rgba"),
    "l": ("numpy", "float", "l"),
    "rgb": ("numpy", "float", "rgb"),
    "rgba": ("numpy", "float", "rgba"),
    "torchl8": ("torch", "uint8", "l"),
    "torchrgb8": ("torch", "uint8", "rgb"),
    "torchrgba8": ("torch", "uint8", "rgba"),
    "torchl": ("torch", "float", "l"),
    "torchrgb": ("torch", "float", "rgb"),
    "torch": ("torch", "float", "rgb"),
    "torchrgba": ("torch", "float", "rgba"),
    "pill": ("pil", None, "l"),
    "pil": ("pil", None, "rgb"),
    "pilrgb": ("pil", None, "rgb"),
    "pilrgba": ("pil", None, "rgba"),
}


def handle_extension(extensions, f):
    """A handler calling ``f(data)`` for keys ending in one of the space-separated
    ``extensions`` (case-insensitive; "seg.jpg" needs both components).

    (As in PyTorch, only the first extension of the list is ever compared.)"""
    extensions = extensions.lower().split()

    def g(key, data):
        extension = key.lower().split(".")
        for target in extensions:
            target = target.split(".")
            if len(target) > len(extension):
                continue
            if extension[-len(target):] == target:
                return f(data)
            return None

    return g


class ImageHandler:
    """Decodes jpg/jpeg/png/ppm/pgm/pbm/pnm with PIL into what ``imagespec`` names (see
    ``imagespecs``): a NumPy array (uint8, or float in [0, 1]), an ember tensor (CHW) or a PIL
    image, in mode l/rgb/rgba."""

    def __init__(self, imagespec):
        if imagespec not in list(imagespecs.keys()):
            raise AssertionError(f"unknown image specification: {imagespec}")
        self.imagespec = imagespec.lower()

    def __call__(self, extension, data):
        if extension.lower() not in ["jpg", "jpeg", "png", "ppm", "pgm", "pbm", "pnm"]:
            return None
        try:
            import numpy as np
        except ModuleNotFoundError as e:
            raise ModuleNotFoundError(
                "Package `numpy` is required to be installed for default image decoder."
                "Please use `pip install numpy` to install the package") from e
        try:
            import PIL.Image
        except ModuleNotFoundError as e:
            raise ModuleNotFoundError(
                "Package `PIL` is required to be installed for default image decoder."
                "Please use `pip install Pillow` to install the package") from e
        atype, etype, mode = imagespecs[self.imagespec]
        with io.BytesIO(data) as stream:
            img = PIL.Image.open(stream)
            img.load()
            img = img.convert(mode.upper())
            if atype == "pil":
                return img
            result = np.asarray(img)
            if result.dtype != np.uint8:
                raise AssertionError(
                    f"numpy image array should be type uint8, but got {result.dtype}")
            if atype == "numpy":
                return result if etype == "uint8" else result.astype("f") / 255.0
            if atype == "torch":
                from ..... import tensor
                chw = tensor(np.array(result.transpose(2, 0, 1)))
                return chw if etype == "uint8" else chw / 255.0
            return None


def imagehandler(imagespec):
    return ImageHandler(imagespec)


def videohandler(extension, data):
    """mp4/ogv/mjpeg/avi/mov/h264/mpg/webm/wmv through ``torchvision.io.read_video``."""
    if extension not in ["mp4", "ogv", "mjpeg", "avi", "mov", "h264", "mpg", "webm", "wmv"]:
        return None
    try:
        import torchvision.io
    except ImportError as e:
        raise ModuleNotFoundError(
            "Package `torchvision` is required to be installed for default video file loader."
            "Please use `pip install torchvision`"
            "to install the package") from e
    with tempfile.TemporaryDirectory() as dirname:
        fname = os.path.join(dirname, f"file.{extension}")
        with open(fname, "wb") as stream:
            stream.write(data)
            return torchvision.io.read_video(fname)


def audiohandler(extension, data):
    """flac/mp3/sox/wav/m4a/ogg/wma through ``torchaudio.load``."""
    if extension not in ["flac", "mp3", "sox", "wav", "m4a", "ogg", "wma"]:
        return None
    try:
        import torchaudio
    except ImportError as e:
        raise ModuleNotFoundError(
            "Package `torchaudio` is required to be installed for default audio file loader."
            "Please use `pip install torchaudio`"
            "to install the package") from e
    with tempfile.TemporaryDirectory() as dirname:
        fname = os.path.join(dirname, f"file.{extension}")
        with open(fname, "wb") as stream:
            stream.write(data)
            return torchaudio.load(fname)


class MatHandler:
    """``.mat`` files through ``scipy.io.loadmat(**loadmat_kwargs)``."""

    def __init__(self, **loadmat_kwargs):
        try:
            import scipy.io as sio
        except ImportError as e:
            raise ModuleNotFoundError(
                "Package `scipy` is required to be installed for mat file."
                "Please use `pip install scipy`"
                "to install the package") from e
        self.sio = sio
        self.loadmat_kwargs = loadmat_kwargs

    def __call__(self, extension, data):
        if extension != "mat":
            return None
        with io.BytesIO(data) as stream:
            return self.sio.loadmat(stream, **self.loadmat_kwargs)


def mathandler(**loadmat_kwargs):
    return MatHandler(**loadmat_kwargs)


def extension_extract_fn(pathname):
    """The extension of ``pathname``, without the dot."""
    ext = os.path.splitext(pathname)[1]
    return ext[1:] if ext else ext


class Decoder:
    """Decodes ``(key, data)`` pairs (one, or a list) into ``{key: decoded}``: the first
    handler's non-None result for ``key_fn(key)``, else the raw data. A binary stream is read
    whole (and closed) first; keys starting with "_" keep their bytes, as UTF-8 text."""

    def __init__(self, *handler, key_fn=extension_extract_fn):
        self.handlers = list(handler) if handler else []
        self.key_fn = key_fn

    def add_handler(self, *handler):
        """Add handlers ahead of the present ones (they take priority)."""
        if not handler:
            return
        self.handlers = list(handler) + self.handlers

    @staticmethod
    def _is_stream_handle(data):
        obj_to_check = data.file_obj if isinstance(data, StreamWrapper) else data
        return isinstance(obj_to_check, (io.BufferedIOBase, io.RawIOBase))

    def decode1(self, key, data):
        if not data:
            return data
        if Decoder._is_stream_handle(data):
            ds = data
            # (iterating, not .read(): some streams' read differs, e.g. HTTPResponse)
            data = b"".join(data)
            ds.close()
        for f in self.handlers:
            result = f(key, data)
            if result is not None:
                return result
        return data

    def decode(self, data):
        result = {}
        if isinstance(data, tuple):
            data = [data]
        if data is not None:
            for k, v in data:
                if k[0] == "_" and isinstance(v, bytes):
                    result[k] = v.decode("utf-8")
                    continue
                result[k] = self.decode1(self.key_fn(k), v)
        return result

    def __call__(self, data):
        return self.decode(data)
