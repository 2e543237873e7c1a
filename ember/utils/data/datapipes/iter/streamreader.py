"""``StreamReader`` (``read_from_stream``): ``(label, stream)`` pairs into ``(label, chunk)``
pairs, closing each stream at its end."""
from collections.abc import Iterator
from io import IOBase

from .._decorator import functional_datapipe
from ..datapipe import IterDataPipe

__all__ = ["StreamReaderIterDataPipe"]


@functional_datapipe("read_from_stream")
class StreamReaderIterDataPipe(IterDataPipe[tuple[str, bytes]]):
    """Reads each stream ``chunk`` bytes at a time (``None``: all at once) (functional name:
    ``read_from_stream``)."""

    def __init__(self, datapipe: IterDataPipe[tuple[str, IOBase]], chunk: int | None = None):
        self.datapipe = datapipe
        self.chunk = chunk

    def __iter__(self) -> Iterator[tuple[str, bytes]]:
        for furl, stream in self.datapipe:
            while True:
                d = stream.read(self.chunk)
                if not d:
                    stream.close()
                    break
                yield (furl, d)
