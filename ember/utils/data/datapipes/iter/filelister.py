"""``FileLister`` (``list_files``): the pathnames of the files under root directories."""
from collections.abc import Iterator, Sequence

from .._decorator import functional_datapipe
from ..datapipe import IterDataPipe
from ..utils.common import get_file_pathnames_from_root
from .utils import IterableWrapperIterDataPipe

__all__ = ["FileListerIterDataPipe"]


@functional_datapipe("list_files")
class FileListerIterDataPipe(IterDataPipe[str]):
    """The files under ``root`` (a path, paths, or a datapipe of paths) matching ``masks``;
    ``recursive`` descends, ``abspath`` makes paths absolute, ``non_deterministic`` skips the
    sorting, ``length`` is the nominal ``len`` (functional name: ``list_files``)."""

    def __init__(self, root: str | Sequence[str] | IterDataPipe = ".",
                 masks: str | list[str] = "", *, recursive: bool = False,
                 abspath: bool = False, non_deterministic: bool = False, length: int = -1):
        super().__init__()
        if isinstance(root, str):
            root = [root]
        if not isinstance(root, IterDataPipe):
            root = IterableWrapperIterDataPipe(root)
        self.datapipe: IterDataPipe = root
        self.masks = masks
        self.recursive = recursive
        self.abspath = abspath
        self.non_deterministic = non_deterministic
        self.length = length

    def __iter__(self) -> Iterator[str]:
        for path in self.datapipe:
            yield from get_file_pathnames_from_root(path, self.masks, self.recursive,
                                                    self.abspath, self.non_deterministic)

    def __len__(self):
        if self.length == -1:
            raise TypeError(f"{type(self).__name__} instance doesn't have valid length")
        return self.length
