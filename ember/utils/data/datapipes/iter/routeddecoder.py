"""``RoutedDecoder`` (``routed_decode``, deprecated since 1.12): ``(pathname, stream)`` pairs
into ``(pathname, decoded)``, the handler chosen by the pathname's extension."""
from collections.abc import Callable, Iterable, Iterator, Sized
from io import BufferedIOBase
from typing import Any

from .._decorator import functional_datapipe
from ..datapipe import IterDataPipe
from ..utils.common import _deprecation_warning
from ..utils.decoder import Decoder, extension_extract_fn
from ..utils.decoder import basichandlers as decoder_basichandlers
from ..utils.decoder import imagehandler as decoder_imagehandler

__all__ = ["RoutedDecoderIterDataPipe"]


@functional_datapipe("routed_decode")
class RoutedDecoderIterDataPipe(IterDataPipe[tuple[str, Any]]):
    """Decodes with ``handlers`` (first has priority; default: the basic and the ``"torch"``
    image handlers), keyed by ``key_fn(pathname)`` (default: the extension) (functional name:
    ``routed_decode``)."""

    def __init__(self, datapipe: Iterable[tuple[str, BufferedIOBase]], *handlers: Callable,
                 key_fn: Callable = extension_extract_fn):
        super().__init__()
        self.datapipe: Iterable[tuple[str, BufferedIOBase]] = datapipe
        if not handlers:
            handlers = (decoder_basichandlers, decoder_imagehandler("torch"))
        self.decoder = Decoder(*handlers, key_fn=key_fn)
        _deprecation_warning(type(self).__name__, deprecation_version="1.12",
                             removal_version="1.13", old_functional_name="routed_decode")

    def add_handler(self, *handler: Callable):
        self.decoder.add_handler(*handler)

    def __iter__(self) -> Iterator[tuple[str, Any]]:
        for data in self.datapipe:
            pathname = data[0]
            result = self.decoder(data)
            yield (pathname, result[pathname])

    def __len__(self):
        if isinstance(self.datapipe, Sized):
            return len(self.datapipe)
        raise TypeError(f"{type(self).__name__} instance doesn't have valid length")
