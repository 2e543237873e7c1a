"""``ember.package``, as ``torch.package``: self-contained archives of code, pickled models
and resources (:class:`PackageExporter` writes them, :class:`PackageImporter` loads them in a
module namespace of their own), in PyTorch's package format."""
from .analyze.is_from_package import is_from_package  # noqa: F401
from .file_structure_representation import Directory  # noqa: F401
from .glob_group import GlobGroup  # noqa: F401
from .importer import (Importer, ObjMismatchError, ObjNotFoundError,  # noqa: F401
                       OrderedImporter, sys_importer)
from .package_exporter import EmptyMatchError, PackageExporter, PackagingError  # noqa: F401
from .package_importer import PackageImporter  # noqa: F401
