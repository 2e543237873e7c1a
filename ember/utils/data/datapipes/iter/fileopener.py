"""``FileOpener`` (``open_files``): pathnames into ``(pathname, StreamWrapper(file))``."""
from collections.abc import Iterable, Iterator
from io import IOBase

from .._decorator import functional_datapipe
from ..datapipe import IterDataPipe
from ..utils.common import get_file_binaries_from_pathnames

__all__ = ["FileOpenerIterDataPipe"]


@functional_datapipe("open_files")
class FileOpenerIterDataPipe(IterDataPipe[tuple[str, IOBase]]):
    """Opens each pathname with ``mode`` (``"r"``, ``"b"``, ``"t"``, ``"rb"``, ``"rt"``) and
    ``encoding``; ``length`` is the nominal ``len`` (functional name: ``open_files``)."""

    def __init__(self, datapipe: Iterable[str], mode: str = "r", encoding: str | None = None,
                 length: int = -1):
        super().__init__()
        self.datapipe: Iterable[str] = datapipe
        self.mode: str = mode
        self.encoding: str | None = encoding
        if self.mode not in ("b", "t", "rb", "rt", "r"):
            raise ValueError(f"Invalid mode {mode}")
        if "b" in mode and encoding is not None:
            raise ValueError("binary mode doesn't take an encoding argument")
        self.length: int = length

    def __iter__(self) -> Iterator[tuple[str, IOBase]]:
        yield from get_file_binaries_from_pathnames(self.datapipe, self.mode, self.encoding)

    def __len__(self):
        if self.length == -1:
            raise TypeError(f"{type(self).__name__} instance doesn't have valid length")
        return self.length
