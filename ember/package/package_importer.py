"""``PackageImporter``: loads a package written by :class:`PackageExporter` (or by PyTorch's)
hermetically: its modules run in a namespace of their own (``<torch_package_N>.name``),
importing only the package's modules and those it lists as external."""
import builtins
import importlib
import importlib.machinery
import importlib.util
import inspect
import io
import linecache
import os
import pickle
import sys
from weakref import WeakValueDictionary

from .. import serialization
from ._importlib import (_calc___package__, _normalize_line_endings, _normalize_path,
                         _resolve_name, _sanity_check)
from ._mangling import PackageMangler, demangle
from .file_structure_representation import _create_directory_from_file_list
from .importer import Importer

__all__ = ["PackageImporter"]

# modules a pickle may name without the package listing them (numpy's own pickles do)
IMPLICIT_IMPORT_ALLOWLIST = ["numpy", "numpy.core", "numpy.core._multiarray_umath", "builtins"]

# names removed from an externed module that old pickles still use
EXTERN_IMPORT_COMPAT_NAME_MAPPING = {"numpy": {"str": str, "bool": bool}}


def _import_extern(name):
    """An external module: ``torch.*`` is ember's module of that path (ember is torch here)."""
    top = name.partition(".")[0]
    if top == "torch" and sys.modules.get("torch") is not sys.modules["ember"]:
        return importlib.import_module("ember" + name[len("torch"):])
    return importlib.import_module(name)


class _DirectoryReader:
    """An unzipped package (a folder) read as the archive reader reads a zip."""

    def __init__(self, directory):
        self.directory = directory

    def get_record(self, name):
        with open(os.path.join(self.directory, name), "rb") as f:
            return f.read()

    def has_record(self, path):
        return os.path.isfile(os.path.join(self.directory, path))

    def get_all_records(self):
        return [os.path.relpath(os.path.join(root, f), self.directory).replace(os.sep, "/")
                for root, _, files in os.walk(self.directory) for f in files]

    def serialization_id(self):
        return self.get_record(".data/serialization_id").decode() \
            if self.has_record(".data/serialization_id") else ""


class _PackageUnpickler(pickle._Unpickler):
    """Finds a pickle's globals through the importer (the package's own modules first);
    ``torch.*`` objects that ember names differently come from ember's checkpoint table."""

    def __init__(self, importer, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._importer = importer

    def find_class(self, module, name):
        module, name = serialization._python3_name(module, name) \
            if self.proto < 3 and self.fix_imports else (module, name)
        known = serialization._TORCH_GLOBALS.get((module, name))
        if known is not None:
            return known
        return getattr(self._importer.import_module(module), name)


class PackageImporter(Importer):
    """Imports the modules and loads the pickles and resources of one package. ``modules`` is
    its ``sys.modules``. ``module_allowed(name)`` may refuse an external module the package
    needs (ImportError)."""

    modules: dict

    def __init__(self, file_or_buffer, module_allowed=lambda module_name: True):
        if isinstance(file_or_buffer, serialization.PyTorchFileReader):
            self.filename = "<pytorch_file_reader>"
            self.zip_reader = file_or_buffer
        elif isinstance(file_or_buffer, (os.PathLike, str)):
            self.filename = os.fspath(file_or_buffer)
            if not os.path.isdir(self.filename):
                self.zip_reader = serialization.PyTorchFileReader(self.filename)
            else:
                self.zip_reader = _DirectoryReader(self.filename)
        else:
            self.filename = "<binary>"
            self.zip_reader = serialization.PyTorchFileReader(file_or_buffer)

        self.root = _PackageNode(None)
        self.modules = {}
        self.extern_modules = self._read_extern()
        for extern_module in self.extern_modules:
            if not module_allowed(extern_module):
                raise ImportError(f"package '{file_or_buffer}' needs the external module "
                                  f"'{extern_module}' but that module has been disallowed")
            self._add_extern(extern_module)
        for fname in self.zip_reader.get_all_records():
            self._add_file(fname)

        # the package's code imports through this importer
        self.patched_builtins = builtins.__dict__.copy()
        self.patched_builtins["__import__"] = self.__import__
        # (a package's code may `import torch_package_importer` to reach its importer)
        self.modules["torch_package_importer"] = self
        self._mangler = PackageMangler()
        self.storage_context = None
        self.last_map_location = None
        self.Unpickler = lambda *args, **kwargs: _PackageUnpickler(self, *args, **kwargs)

    def import_module(self, name, package=None):
        """The package's module ``name`` (loading it and its parents the first time)."""
        return self._gcd_import(self._mangler.demangle(name))

    def load_binary(self, package, resource):
        """The bytes saved as ``package/resource``."""
        return self.zip_reader.get_record(self._zipfile_path(package, resource))

    def load_text(self, package, resource, encoding="utf-8", errors="strict"):
        """The text saved as ``package/resource``."""
        return self.load_binary(package, resource).decode(encoding, errors)

    def load_pickle(self, package, resource, map_location=None):
        """Unpickle ``package/resource``: its classes from this package's modules, its
        storages read once each and placed where ``map_location`` says."""
        pickle_file = self._zipfile_path(package, resource)
        restore_location = serialization._restore_location_fn(map_location)
        loaded_storages = {}
        loaded_reduces = {}

        def load_storage(dtype, numel, key, location):
            data = bytearray(self.zip_reader.get_record(f".data/{key}.storage"))
            arr = serialization.np.frombuffer(data, serialization.np.uint8)[
                :numel * dtype.itemsize]
            storage = serialization.from_array(arr)
            loaded_storages[key] = serialization._untyped(restore_location(storage, location))

        def persistent_load(saved_id):
            if not isinstance(saved_id, tuple):
                raise AssertionError(f"saved_id must be a tuple, got {type(saved_id).__name__}")
            typename = saved_id[0]
            if isinstance(typename, bytes):
                typename = typename.decode("ascii")
            data = saved_id[1:]
            if typename == "storage":
                storage_type, key, location, size = data
                if isinstance(location, bytes):
                    location = location.decode("ascii")
                dtype = serialization._storage_dtype(storage_type)
                if key not in loaded_storages:
                    load_storage(dtype, size, key, location)
                # as torch.load's storages: the bytes and the dtype the rebuild reads them as
                return loaded_storages[key], dtype
            if typename == "reduce_package":
                # a __reduce_package__ object, built once however often it is referenced
                if len(data) == 2:
                    func, args = data
                    return func(self, *args)
                reduce_id, func, args = data
                if reduce_id not in loaded_reduces:
                    loaded_reduces[reduce_id] = func(self, *args)
                return loaded_reduces[reduce_id]
            raise pickle.UnpicklingError(
                f"Unknown typename for persistent_load, expected 'storage' or "
                f"'reduce_package' but got '{typename}'")

        unpickler = self.Unpickler(io.BytesIO(self.zip_reader.get_record(pickle_file)))
        unpickler.persistent_load = persistent_load
        self.storage_context = loaded_storages
        self.last_map_location = map_location
        try:
            return unpickler.load()
        finally:
            self.storage_context = None
            self.last_map_location = None

    def id(self):
        """This importer's module prefix (``<torch_package_0>``)."""
        return self._mangler.parent_name()

    def file_structure(self, *, include="**", exclude=()):
        """The package's files as a :class:`Directory` tree (those matching ``include`` and
        not ``exclude``, ``/``-separated globs)."""
        return _create_directory_from_file_list(
            self.filename, self.zip_reader.get_all_records(), include, exclude)

    def python_version(self):
        """The Python version that wrote the package (None if it did not say)."""
        path = ".data/python_version"
        return self.zip_reader.get_record(path).decode("utf-8").strip() \
            if self.zip_reader.has_record(path) else None

    def _read_extern(self):
        return self.zip_reader.get_record(".data/extern_modules").decode("utf-8").splitlines(
            keepends=False)

    def _make_module(self, name, filename, is_package, parent):
        mangled_filename = self._mangler.mangle(filename) if filename else None
        spec = importlib.machinery.ModuleSpec(name, self, origin="<package_importer>",
                                              is_package=is_package)
        module = importlib.util.module_from_spec(spec)
        self.modules[name] = module
        module.__name__ = self._mangler.mangle(name)
        ns = module.__dict__
        ns["__spec__"] = spec
        ns["__loader__"] = self
        ns["__file__"] = mangled_filename
        ns["__cached__"] = None
        ns["__builtins__"] = self.patched_builtins
        ns["__torch_package__"] = True
        # (for inspect.getfile of its classes, below)
        if module.__name__ in _package_imported_modules:
            raise AssertionError(f"module {module.__name__} already exists in "
                                 f"_package_imported_modules")
        _package_imported_modules[module.__name__] = module
        # installed before running: an import of the module's own submodule sees it
        self._install_on_parent(parent, name, module)
        if filename is not None:
            # linecache and tracebacks find the source under the mangled file name
            linecache.lazycache(mangled_filename, ns)
            exec(self._compile_source(filename, mangled_filename), ns)
        return module

    def _load_module(self, name, parent):
        cur = self.root
        for atom in name.split("."):
            if not isinstance(cur, _PackageNode) or atom not in cur.children:
                if name in IMPLICIT_IMPORT_ALLOWLIST:
                    module = self.modules[name] = importlib.import_module(name)
                    return module
                raise ModuleNotFoundError(
                    f'No module named "{name}" in self-contained archive "{self.filename}" and '
                    f"the module is also not in the list of allowed external modules: "
                    f"{self.extern_modules}", name=name)
            cur = cur.children[atom]
            if isinstance(cur, _ExternNode):
                module = self.modules[name] = _import_extern(name)
                for old_name, new_name in EXTERN_IMPORT_COMPAT_NAME_MAPPING.get(name, {}).items():
                    module.__dict__.setdefault(old_name, new_name)
                return module
        return self._make_module(name, cur.source_file, isinstance(cur, _PackageNode), parent)

    def _compile_source(self, fullpath, mangled_filename):
        source = _normalize_line_endings(self.zip_reader.get_record(fullpath))
        return compile(source, mangled_filename, "exec", dont_inherit=True)

    def get_source(self, module_name):
        """The source of the package's module (linecache and inspect ask for it)."""
        module = self.import_module(demangle(module_name))
        return self.zip_reader.get_record(demangle(module.__file__)).decode("utf-8")

    def get_resource_reader(self, fullname):
        try:
            package = self._get_package(fullname)
        except ImportError:
            return None
        if package.__loader__ is not self:
            return None
        return _PackageResourceReader(self, fullname)

    def _install_on_parent(self, parent, name, module):
        if not parent:
            return
        parent_module = self.modules[parent]
        if parent_module.__loader__ is self:
            setattr(parent_module, name.rpartition(".")[2], module)

    def _do_find_and_load(self, name):
        parent = name.rpartition(".")[0]
        if parent:
            if parent not in self.modules:
                self._gcd_import(parent)
            if name in self.modules:  # (importing the parent imported it)
                return self.modules[name]
            parent_module = self.modules[parent]
            if not hasattr(parent_module, "__path__"):
                raise ModuleNotFoundError(
                    f"{_ERR_MSG.format(name)}; {parent!r} is not a package", name=name)
        module = self._load_module(name, parent)
        self._install_on_parent(parent, name, module)
        return module

    def _find_and_load(self, name):
        module = self.modules.get(name, _NEEDS_LOADING)
        if module is _NEEDS_LOADING:
            return self._do_find_and_load(name)
        if module is None:
            raise ModuleNotFoundError(f"import of {name} halted; None in sys.modules", name=name)
        # os.path and typing's io/re are attributes of externed modules, not modules of theirs
        if name == "os":
            self.modules["os.path"] = module.path
        elif name == "typing" and sys.version_info < (3, 13):
            self.modules["typing.io"] = module.io
            self.modules["typing.re"] = module.re
        return module

    def _gcd_import(self, name, package=None, level=0):
        _sanity_check(name, package, level)
        if level > 0:
            name = _resolve_name(name, package, level)
        return self._find_and_load(name)

    def _handle_fromlist(self, module, fromlist, *, recursive=False):
        module_name = demangle(module.__name__)
        if hasattr(module, "__path__"):
            for x in fromlist:
                if not isinstance(x, str):
                    where = module_name + ".__all__" if recursive else "``from list''"
                    raise TypeError(f"Item in {where} must be str, not {type(x).__name__}")
                if x == "*":
                    if not recursive and hasattr(module, "__all__"):
                        self._handle_fromlist(module, module.__all__, recursive=True)
                elif not hasattr(module, x):
                    from_name = f"{module_name}.{x}"
                    try:
                        self._gcd_import(from_name)
                    except ModuleNotFoundError as exc:
                        # (an attribute, not a submodule: the import statement fails later)
                        if exc.name == from_name and \
                                self.modules.get(from_name, _NEEDS_LOADING) is not None:
                            continue
                        raise
        return module

    def __import__(self, name, globals=None, locals=None, fromlist=(), level=0):
        if level == 0:
            module = self._gcd_import(name)
        else:
            package = _calc___package__(globals if globals is not None else {})
            module = self._gcd_import(name, package, level)
        if fromlist:
            return self._handle_fromlist(module, fromlist)
        # `import a.b` binds a: the top-level package
        if level == 0:
            return self._gcd_import(name.partition(".")[0])
        if not name:
            return module
        cut_off = len(name) - len(name.partition(".")[0])
        module_name = demangle(module.__name__)
        return self.modules[module_name[:len(module_name) - cut_off]]

    def _get_package(self, package):
        if hasattr(package, "__spec__"):
            if package.__spec__.submodule_search_locations is None:
                raise TypeError(f"{package.__spec__.name!r} is not a package")
            return package
        module = self.import_module(package)
        if module.__spec__.submodule_search_locations is None:
            raise TypeError(f"{package!r} is not a package")
        return module

    def _zipfile_path(self, package, resource=None):
        package = self._get_package(package)
        if package.__loader__ is not self:
            raise AssertionError(f"package.__loader__ must be self, got {package.__loader__}")
        name = demangle(package.__name__).replace(".", "/")
        if resource is not None:
            return f"{name}/{_normalize_path(resource)}"
        return name

    def _get_or_create_package(self, atoms):
        cur = self.root
        for i, atom in enumerate(atoms):
            node = cur.children.get(atom)
            if node is None:
                node = cur.children[atom] = _PackageNode(None)
            if isinstance(node, _ExternNode):
                return node
            if isinstance(node, _ModuleNode):
                name = ".".join(atoms[:i])
                raise ImportError(f"inconsistent module structure. module {name} is not a "
                                  f"package, but has submodules")
            cur = node
        return cur

    def _add_file(self, filename):
        *prefix, last = filename.split("/")
        if len(prefix) > 1 and prefix[0] == ".data":
            return
        package = self._get_or_create_package(prefix)
        if isinstance(package, _ExternNode):
            raise ImportError(f"inconsistent module structure. package contains a module file "
                              f"{filename} that is a subpackage of a module marked external.")
        if last == "__init__.py":
            package.source_file = filename
        elif last.endswith(".py"):
            package.children[last[:-len(".py")]] = _ModuleNode(filename)

    def _add_extern(self, extern_name):
        *prefix, last = extern_name.split(".")
        package = self._get_or_create_package(prefix)
        if isinstance(package, _ExternNode):
            return  # a submodule of an externed module is external too
        package.children[last] = _ExternNode()


_NEEDS_LOADING = object()
_ERR_MSG = "No module named {!r}"


class _PathNode:
    __slots__ = []


class _PackageNode(_PathNode):
    def __init__(self, source_file):
        self.source_file = source_file
        self.children = {}


class _ModuleNode(_PathNode):
    __slots__ = ["source_file"]

    def __init__(self, source_file):
        self.source_file = source_file


class _ExternNode(_PathNode):
    pass


# every package module by its mangled name: inspect.getfile finds a class's file through it
_package_imported_modules = WeakValueDictionary()
_orig_getfile = inspect.getfile


def _patched_getfile(object):
    if inspect.isclass(object) and object.__module__ in _package_imported_modules:
        return _package_imported_modules[object.__module__].__file__
    return _orig_getfile(object)


inspect.getfile = _patched_getfile


class _PackageResourceReader:
    """importlib's resource reader over a package's records."""

    def __init__(self, importer, fullname):
        self.importer = importer
        self.fullname = fullname

    def open_resource(self, resource):
        return io.BytesIO(self.importer.load_binary(self.fullname, resource))

    def resource_path(self, resource):
        reader = self.importer.zip_reader
        if isinstance(reader, _DirectoryReader) and \
                reader.has_record(os.path.join(self.fullname, resource)):
            return os.path.join(reader.directory, self.fullname, resource)
        raise FileNotFoundError

    def is_resource(self, name):
        return self.importer.zip_reader.has_record(self.importer._zipfile_path(self.fullname,
                                                                               name))

    def contents(self):
        from pathlib import Path
        fullname_path = Path(self.importer._zipfile_path(self.fullname))
        subdirs_seen = set()
        for filename in self.importer.zip_reader.get_all_records():
            try:
                relative = Path(filename).relative_to(fullname_path)
            except ValueError:
                continue
            parent_name = relative.parent.name
            if len(parent_name) == 0:
                yield relative.name
            elif parent_name not in subdirs_seen:
                subdirs_seen.add(parent_name)
                yield parent_name
