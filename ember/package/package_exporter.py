"""``PackageExporter``: writes a package, a zip archive holding Python source (modules interned
with their dependencies), pickled objects with their tensors' storages, and any text or binary
resources, in PyTorch's ``torch.package`` format."""
import importlib.machinery
import io
import linecache
import os
import pickletools
import platform
import sys
from collections import OrderedDict, defaultdict
from collections.abc import Sequence
from enum import Enum
from importlib.machinery import SourceFileLoader
from pathlib import Path
from pickle import EXT1, EXT2, EXT4, GLOBAL, STACK_GLOBAL, PicklingError, _extension_registry
from pickle import _getattribute
from struct import pack
from types import FunctionType

from .. import serialization
from ..utils.hooks import RemovableHandle
from ._digraph import DiGraph
from ._importlib import _normalize_path
from ._mangling import demangle, is_mangled
from .find_file_dependencies import find_files_source_depends_on
from .glob_group import GlobGroup
from .importer import Importer, ObjMismatchError, ObjNotFoundError, OrderedImporter, sys_importer

__all__ = ["PackagingErrorReason", "EmptyMatchError", "PackagingError", "PackageExporter"]

_gate_torchscript_serialization = True


class _ModuleProviderAction(Enum):
    """What the exporter does with a module (see ``PackageExporter.extern`` and friends)."""

    INTERN = 1
    EXTERN = 2
    MOCK = 3
    DENY = 4
    # the _mock module itself, which a package that mocks modules carries
    REPACKAGED_MOCK_MODULE = 5
    # the name ``torch_package_importer``, which a package's code may import: not a module
    SKIP = 6


class PackagingErrorReason(Enum):
    """Why a module could not be packaged (the headings of :class:`PackagingError`)."""

    def __repr__(self):
        return f"<{self.__class__.__name__}.{self.name}>"

    IS_EXTENSION_MODULE = (
        "Module is a C extension module. torch.package supports Python modules only.")
    NO_DUNDER_FILE = "Module had no __file__ defined."
    SOURCE_FILE_NOT_FOUND = (
        "Module had a __file__, but we could not find it in your filesystem.")
    DEPENDENCY_RESOLUTION_FAILED = "Dependency resolution failed."
    NO_ACTION = (
        "Module did not match against any action pattern. Extern, mock, or intern it.")
    DENIED = "Module was denied by a pattern."
    MOCKED_BUT_STILL_USED = (
        "Module was mocked out, but is still being used in the package. "
        "Please intern or extern the mocked modules if objects are supposed to be in "
        "the package.")


class _PatternInfo:
    """A pattern's action, whether it may match nothing, and whether it has matched."""

    def __init__(self, action, allow_empty):
        self.action = action
        self.allow_empty = allow_empty
        self.was_matched = False


class EmptyMatchError(Exception):
    """An ``extern`` or ``mock`` pattern given ``allow_empty=False`` matched no module."""


class PackagingError(Exception):
    """The modules that could not be packaged, grouped by reason: the exporter collects every
    problem and raises once, on ``close()``."""

    def __init__(self, dependency_graph, debug=False):
        broken = defaultdict(list)
        for module_name, attrs in dependency_graph.nodes.items():
            error = attrs.get("error")
            if error is None:
                continue
            if error == PackagingErrorReason.NO_ACTION and "action" in attrs:
                raise AssertionError(
                    f"module {module_name} has NO_ACTION error but action is set")
            broken[error].append(module_name)

        message = io.StringIO()
        message.write("\n")
        for reason, module_names in broken.items():
            message.write(f"* {reason.value}\n")
            for module_name in module_names:
                message.write(f"    {module_name}\n")
                error_context = dependency_graph.nodes[module_name].get("error_context")
                if error_context is not None:
                    message.write(f"      Context: {error_context}\n")
                if module_name in _DISALLOWED_MODULES:
                    message.write(
                        f"      Note: While we usually use modules in the python standard "
                        f"library from the local environment, `{module_name}` has a lot of "
                        f"system level access and therefore can pose a security risk. We "
                        f"heavily recommend removing `{module_name}` from your packaged code. "
                        f"However, if that is not possible, add it to the extern list by "
                        f"calling PackageExporter.extern(\"`{module_name}`\")\n")
                if debug:
                    module_path = dependency_graph.first_path(module_name)
                    message.write(f"      A path to {module_name}: {' -> '.join(module_path)}\n")
        if not debug:
            message.write("\n")
            message.write("Set debug=True when invoking PackageExporter for a visualization of "
                          "where broken modules are coming from!\n")
        self.dependency_graph = dependency_graph
        super().__init__(message.getvalue())


def _parent_of(module, name):
    # pickle's _getattribute gives (obj, parent) before Python 3.14, obj only after
    if sys.version_info >= (3, 14):
        parts = name.split(".")
        if "<locals>" in parts:
            raise PicklingError(f"Can't pickle local object {name!r}")
        return module if len(parts) == 1 else _getattribute(module, parts[:-1])
    return _getattribute(module, name)[1]


class _PackagePickler(serialization._Pickler):
    """ember's checkpoint pickler (tensors reduce to ``torch._utils._rebuild_tensor_v2`` over
    persistent storage ids, as PyTorch writes them), with the exporter's persistent ids and,
    for an importer other than ``sys_importer``, globals named by that importer (so that a
    class loaded from another package is written under its unmangled name)."""

    def __init__(self, file, protocol, importer, persistent_id):
        super().__init__(file, protocol)
        self.importer = importer
        self._package_persistent_id = persistent_id
        if importer is not sys_importer:
            self.dispatch[FunctionType] = _PackagePickler.save_global

    def persistent_id(self, obj):
        return self._package_persistent_id(obj)

    def save_global(self, obj, name=None):
        if self.importer is sys_importer:
            return super().save_global(obj, name)
        write = self.write
        try:
            module_name, name = self.importer.get_name(obj, name)
        except (ObjNotFoundError, ObjMismatchError) as err:
            raise PicklingError(f"Can't pickle {obj}: {str(err)}") from err
        module = self.importer.import_module(module_name)
        parent = _parent_of(module, name)
        if self.proto >= 2:
            code = _extension_registry.get((module_name, name))
            if code:
                if code <= 255:
                    write(EXT1 + pack("<B", code))
                elif code <= 65535:
                    write(EXT2 + pack("<H", code))
                else:
                    write(EXT4 + pack("<i", code))
                return
        lastname = name.rpartition(".")[2]
        if parent is module:
            name = lastname
        if self.proto >= 4:
            self.save(module_name)
            self.save(name)
            write(STACK_GLOBAL)
        elif parent is not module:
            self.save_reduce(getattr, (parent, lastname))
        else:
            write(GLOBAL + bytes(module_name, "utf-8") + b"\n" + bytes(name, "utf-8") + b"\n")
        self.memoize(obj)


def _is_ember_module(top_level_name):
    """``torch`` and ``ember`` both name ember here (``ember.as_torch`` aliases one to the
    other): like ``torch`` in PyTorch's exporter, never packaged, always external."""
    return top_level_name in ("torch", "ember")


class PackageExporter:
    """Writes code, pickled objects and resources into a package that
    :class:`PackageImporter` loads hermetically. Every module the saved code and pickles depend
    on must be interned (its source copied in), externed (imported from the loading
    environment), mocked or denied by a pattern, or ``close()`` raises :class:`PackagingError`
    listing those that were not. The standard library and ember itself are externed
    implicitly."""

    importer: Importer

    def __init__(self, f, importer=sys_importer, debug=False):
        self.debug = debug
        if isinstance(f, (str, os.PathLike)):
            f = os.fspath(f)
            self.buffer = None
            self._file = open(f, "wb")
            name = os.path.splitext(os.path.basename(f))[0] or "archive"
        else:
            self.buffer = f
            self._file = f
            name = "archive"
        self.zip_file = serialization._ZipWriter(self._file, name,
                                                 bool(serialization.get_crc32_options()))
        self._written_files = set()
        self.serialized_reduces = {}
        self.dependency_graph = DiGraph()
        self._storages = {}  # id(untyped storage) -> (its record id, the storage: kept alive)
        self._extern_hooks = OrderedDict()
        self._mock_hooks = OrderedDict()
        self._intern_hooks = OrderedDict()
        if isinstance(importer, Importer):
            self.importer = importer
        else:
            if not isinstance(importer, Sequence):
                raise TypeError(f"importer arg should be an Importer or a sequence of "
                                f"Importers, got {type(importer)} instead.")
            self.importer = OrderedImporter(*importer)
        self.patterns = {}
        self._unique_id = 0

    def save_source_file(self, module_name, file_or_directory, dependencies=True):
        """Intern the source of a file, or of every ``.py`` file under a directory (as the
        package ``module_name``)."""
        path = Path(file_or_directory)
        if path.is_dir():
            to_save = []
            module_path = module_name.replace(".", "/")
            for filename in path.glob("**/*.py"):
                archivename = module_path + "/" + filename.relative_to(path).as_posix()
                if filename.name == "__init__.py":
                    submodule_name = archivename[:-len("/__init__.py")].replace("/", ".")
                    is_package = True
                else:
                    submodule_name = archivename[:-len(".py")].replace("/", ".")
                    is_package = False
                # all read before any is saved: dependency resolution may look for siblings
                to_save.append((submodule_name, _read_file(str(filename)), is_package,
                                dependencies))
            for item in to_save:
                self.save_source_string(*item)
        else:
            self.save_source_string(module_name, _read_file(file_or_directory),
                                    path.name == "__init__.py", dependencies)

    def get_unique_id(self):
        """An id unique within this package (for ``__reduce_package__`` resources)."""
        ret = str(self._unique_id)
        self._unique_id += 1
        return ret

    def _get_dependencies(self, src, module_name, is_package):
        package_name = module_name if is_package else module_name.rsplit(".", maxsplit=1)[0]
        try:
            dep_pairs = find_files_source_depends_on(src, package_name)
        except Exception as e:
            self.dependency_graph.add_node(
                module_name, error=PackagingErrorReason.DEPENDENCY_RESOLUTION_FAILED,
                error_context=str(e))
            return []
        dependencies = {}
        for dep_module_name, dep_module_obj in dep_pairs:
            # "from a import b": b is a submodule when a.b imports, else an attribute of a
            if dep_module_obj is not None:
                possible_submodule = f"{dep_module_name}.{dep_module_obj}"
                if self._module_exists(possible_submodule):
                    dependencies[possible_submodule] = True
                    continue
            if self._module_exists(dep_module_name):
                dependencies[dep_module_name] = True
        return list(dependencies.keys())

    def save_source_string(self, module_name, src, is_package=False, dependencies=True):
        """Intern ``src`` as the source of module ``module_name`` (a package's
        ``__init__.py`` when ``is_package``), and its dependencies."""
        self.dependency_graph.add_node(module_name, source=src, is_package=is_package,
                                       provided=True, action=_ModuleProviderAction.INTERN)
        if dependencies:
            for dep in self._get_dependencies(src, module_name, is_package):
                self.dependency_graph.add_edge(module_name, dep)
                self.add_dependency(dep)

    def _write_source_string(self, module_name, src, is_package=False):
        extension = "/__init__.py" if is_package else ".py"
        self._write(module_name.replace(".", "/") + extension, src)

    def _import_module(self, module_name):
        try:
            return self.importer.import_module(module_name)
        except ModuleNotFoundError:
            if not is_mangled(module_name):
                raise
            raise ModuleNotFoundError(
                f"Module not found: '{module_name}'. Make sure the PackageImporter that "
                f"created this module is present in `self.importer`") from None

    def _module_exists(self, module_name):
        try:
            self._import_module(module_name)
            return True
        except Exception:
            return False

    def _get_source_of_module(self, module):
        filename = None
        spec = getattr(module, "__spec__", None)
        if spec is not None:
            loader = getattr(spec, "loader", None)
            if loader is not None and isinstance(loader, SourceFileLoader):
                try:
                    filename = loader.get_filename(module.__name__)
                except ImportError:
                    pass
        if filename is None:
            filename = getattr(module, "__file__", None)
        if isinstance(filename, str) and filename.endswith(".py"):
            return "".join(linecache.getlines(filename, module.__dict__))
        return None

    def add_dependency(self, module_name, dependencies=True):
        """Give ``module_name`` the action of the first pattern that matches it (interning
        it, with its dependencies, when that is ``intern``), or record that none did."""
        if module_name in self.dependency_graph and \
                self.dependency_graph.nodes[module_name].get("provided") is True:
            return
        if module_name == "torch_package_importer":
            self.dependency_graph.add_node(module_name, action=_ModuleProviderAction.SKIP,
                                           provided=True)
            return
        if module_name == "_mock":
            self.dependency_graph.add_node(
                module_name, action=_ModuleProviderAction.REPACKAGED_MOCK_MODULE, provided=True)
            return
        if self._can_implicitly_extern(module_name):
            self.dependency_graph.add_node(module_name, action=_ModuleProviderAction.EXTERN,
                                           provided=True)
            return
        for pattern, pattern_info in self.patterns.items():
            if pattern.matches(module_name):
                pattern_info.was_matched = True
                self.dependency_graph.add_node(module_name, action=pattern_info.action,
                                               provided=True)
                if pattern_info.action == _ModuleProviderAction.DENY:
                    self.dependency_graph.add_node(module_name,
                                                   error=PackagingErrorReason.DENIED)
                if pattern_info.action == _ModuleProviderAction.INTERN:
                    self._intern_module(module_name, dependencies)
                return
        self.dependency_graph.add_node(module_name, error=PackagingErrorReason.NO_ACTION)

    def save_module(self, module_name, dependencies=True):
        """Intern the source of the (importable) module ``module_name`` and its
        dependencies."""
        if not isinstance(module_name, str):
            raise TypeError("save_module() expects a string input, did you perhaps mean to "
                            "pass `__name__`?")
        self._intern_module(module_name, dependencies)

    def _intern_module(self, module_name, dependencies):
        module_obj = self._import_module(module_name)
        module_name = demangle(module_name)  # (a module re-exported from another package)
        is_package = hasattr(module_obj, "__path__")
        source = self._get_source_of_module(module_obj)
        if source is None:
            filename = getattr(module_obj, "__file__", None)
            error_context = None
            if filename is None:
                packaging_error = PackagingErrorReason.NO_DUNDER_FILE
            elif filename.endswith(tuple(importlib.machinery.EXTENSION_SUFFIXES)):
                packaging_error = PackagingErrorReason.IS_EXTENSION_MODULE
            else:
                packaging_error = PackagingErrorReason.SOURCE_FILE_NOT_FOUND
                error_context = f"filename: {filename}"
            self.dependency_graph.add_node(
                module_name, action=_ModuleProviderAction.INTERN, is_package=is_package,
                error=packaging_error, error_context=error_context, provided=True)
            return
        self.dependency_graph.add_node(module_name, action=_ModuleProviderAction.INTERN,
                                       is_package=is_package, source=source, provided=True)
        if dependencies:
            for dep in self._get_dependencies(source, module_name, is_package):
                self.dependency_graph.add_edge(module_name, dep)
                self.add_dependency(dep)

    def save_pickle(self, package, resource, obj, dependencies=True, pickle_protocol=3):
        """Pickle ``obj`` as ``package/resource``, its tensors' storages as records of their
        own, and add the modules its classes and functions come from as dependencies."""
        if pickle_protocol not in (3, 4):
            raise AssertionError(f"torch.package only supports pickle protocols 3 and 4, got "
                                 f"{pickle_protocol}")
        filename = self._filename(package, resource)
        data_buf = io.BytesIO()
        pickler = _PackagePickler(data_buf, pickle_protocol, self.importer, self._persistent_id)
        pickler.dump(obj)
        data_value = data_buf.getvalue()
        mocked_modules = defaultdict(list)
        name_in_dependency_graph = f"<{package}.{resource}>"
        self.dependency_graph.add_node(name_in_dependency_graph,
                                       action=_ModuleProviderAction.INTERN, provided=True,
                                       is_pickle=True)

        def _check_mocked_error(module, field):
            # an object of a mocked module in a pickle cannot be loaded: an error on close
            if self._can_implicitly_extern(module):
                return
            for pattern, pattern_info in self.patterns.items():
                if pattern.matches(module):
                    if pattern_info.action == _ModuleProviderAction.MOCK:
                        mocked_modules[module].append(field)
                    return

        if dependencies:
            all_dependencies = []
            module = field = None
            memo = {}
            memo_count = 0
            # the globals the pickle names: GLOBAL "module name" (protocol 3, and torch's
            # names of ember's tensors at either), or the two strings (pushed or fetched from
            # the memo) before a STACK_GLOBAL (protocol 4)
            for opcode, arg, _pos in pickletools.genops(data_value):
                if pickle_protocol == 4 and opcode.name != "GLOBAL":
                    if opcode.name in ("SHORT_BINUNICODE", "BINUNICODE", "BINUNICODE8"):
                        module, field = field, arg
                        memo[memo_count] = arg
                    elif opcode.name in ("LONG_BINGET", "BINGET", "GET"):
                        module, field = field, memo.get(arg)
                    elif opcode.name == "MEMOIZE":
                        memo_count += 1
                    elif opcode.name == "STACK_GLOBAL":
                        if module is None:
                            continue
                        if module not in all_dependencies:
                            all_dependencies.append(module)
                        _check_mocked_error(module, field)
                elif opcode.name == "GLOBAL":
                    module, field = arg.split(" ")
                    if module not in all_dependencies:
                        all_dependencies.append(module)
                    _check_mocked_error(module, field)
            for module_name in all_dependencies:
                self.dependency_graph.add_edge(name_in_dependency_graph, module_name)
                if module_name in mocked_modules:
                    fields = mocked_modules[module_name]
                    self.dependency_graph.add_node(
                        module_name, action=_ModuleProviderAction.MOCK,
                        error=PackagingErrorReason.MOCKED_BUT_STILL_USED,
                        error_context=f"Object(s) '{fields}' from module `{module_name}` was "
                                      f"mocked out during packaging but is being used in "
                                      f"resource - `{resource}` in package `{package}`. ",
                        provided=True)
                else:
                    self.add_dependency(module_name)
        self._write(filename, data_value)

    def save_text(self, package, resource, text):
        """Save ``text`` (utf-8) as ``package/resource``."""
        return self.save_binary(package, resource, text.encode("utf-8"))

    def save_binary(self, package, resource, binary):
        """Save the bytes ``binary`` as ``package/resource``."""
        self._write(self._filename(package, resource), binary)

    def register_extern_hook(self, hook):
        """``hook(exporter, module_name)`` is called for each externed module, on ``close()``,
        in registration order."""
        handle = RemovableHandle(self._extern_hooks)
        self._extern_hooks[handle.id] = hook
        return handle

    def register_mock_hook(self, hook):
        """``hook(exporter, module_name)`` is called for each mocked module on ``close()``."""
        handle = RemovableHandle(self._mock_hooks)
        self._mock_hooks[handle.id] = hook
        return handle

    def register_intern_hook(self, hook):
        """``hook(exporter, module_name)`` is called for each interned module on ``close()``."""
        handle = RemovableHandle(self._intern_hooks)
        self._intern_hooks[handle.id] = hook
        return handle

    def intern(self, include, *, exclude=(), allow_empty=True):
        """Put the source of the modules matching ``include`` (and not ``exclude``) into the
        package. ``allow_empty=False``: ``close()`` raises EmptyMatchError if none matched."""
        self.patterns[GlobGroup(include, exclude=exclude)] = _PatternInfo(
            _ModuleProviderAction.INTERN, allow_empty)

    def mock(self, include, *, exclude=(), allow_empty=True):
        """Replace the matching modules by stubs whose attributes fail when used."""
        self.patterns[GlobGroup(include, exclude=exclude)] = _PatternInfo(
            _ModuleProviderAction.MOCK, allow_empty)

    def extern(self, include, *, exclude=(), allow_empty=True):
        """Import the matching modules from the loading environment."""
        self.patterns[GlobGroup(include, exclude=exclude)] = _PatternInfo(
            _ModuleProviderAction.EXTERN, allow_empty)

    def deny(self, include, *, exclude=()):
        """Refuse the matching modules: ``close()`` raises PackagingError if one is needed."""
        self.patterns[GlobGroup(include, exclude=exclude)] = _PatternInfo(
            _ModuleProviderAction.DENY, allow_empty=True)

    def _persistent_id(self, obj):
        if isinstance(obj, serialization._StorageRef):
            # a tensor's storage: written once as .data/<id>.storage, referenced as PyTorch's
            # package references it ("storage", storage class, id, location, element count)
            storage = obj.storage
            known = self._storages.get(id(storage))
            if known is None:
                storage_id = len(self._storages)
                self._storages[id(storage)] = (storage_id, storage)
                self.zip_file.write_record(f".data/{storage_id}.storage", storage._data())
            else:
                storage_id = known[0]
            nbytes = storage.nbytes()
            name = serialization._STORAGE_NAMES.get(obj.dtype.name)
            if name is None:  # (uint16/32/64: bytes, their dtype given to the rebuild)
                return ("storage", serialization._Global("torch", "UntypedStorage"), storage_id,
                        obj.location, nbytes)
            return ("storage", serialization._Global("torch", name), storage_id, obj.location,
                    nbytes // obj.dtype.itemsize)
        if hasattr(obj, "__reduce_package__"):
            from ..jit import RecursiveScriptModule
            if _gate_torchscript_serialization and isinstance(obj, RecursiveScriptModule):
                raise Exception(
                    "Serializing ScriptModules directly into a package is a beta feature. To "
                    "use, set global `torch.package.package_exporter."
                    "_gate_torchscript_serialization` to `False`.")
            if self.serialized_reduces.get(id(obj)) is None:
                self.serialized_reduces[id(obj)] = ("reduce_package", id(obj),
                                                    *obj.__reduce_package__(self))
            return self.serialized_reduces[id(obj)]
        return None

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc_value, traceback):
        # an error inside the with block: end the archive without checking the dependencies,
        # so that the block's error is the one raised
        if exc_type is not None:
            self._finalize_zip()
            return
        self.close()

    def _write(self, filename, str_or_bytes):
        if filename in self._written_files:
            raise AssertionError(f"Tried to write file '{filename}', but it already exists in "
                                 f"this archive. Please file a bug.")
        self._written_files.add(filename)
        if is_mangled(filename):
            raise AssertionError(f"Tried to save a torch.package'd module as '{filename}'. "
                                 f"Directly saving torch.package'd modules is not allowed.")
        if isinstance(str_or_bytes, str):
            str_or_bytes = str_or_bytes.encode("utf-8")
        self.zip_file.write_record(filename, str_or_bytes)

    def _validate_dependency_graph(self):
        for attrs in self.dependency_graph.nodes.values():
            if "error" in attrs:
                raise PackagingError(self.dependency_graph, debug=self.debug)
        for pattern, pattern_info in self.patterns.items():
            if not pattern_info.allow_empty and not pattern_info.was_matched:
                raise EmptyMatchError(f"Exporter did not match any modules to {pattern}, which "
                                      f"was marked as allow_empty=False")

    def _write_mock_file(self):
        if "_mock.py" not in self._written_files:
            mock_file = str(Path(__file__).parent / "_mock.py")
            self._write_source_string("_mock", _read_file(mock_file), is_package=False)

    def _execute_dependency_graph(self):
        """Check the graph, then write each module as its action says and the list of
        externed modules."""
        self._validate_dependency_graph()
        extern_modules = []
        for module_name, attrs in self.dependency_graph.nodes.items():
            action = attrs["action"]
            if action == _ModuleProviderAction.EXTERN:
                for hook in self._extern_hooks.values():
                    hook(self, module_name)
                extern_modules.append(module_name)
            elif action == _ModuleProviderAction.MOCK:
                for hook in self._mock_hooks.values():
                    hook(self, module_name)
                self._write_mock_file()
                is_package = hasattr(self._import_module(module_name), "__path__")
                self._write_source_string(module_name, _MOCK_IMPL, is_package)
            elif action == _ModuleProviderAction.INTERN:
                for hook in self._intern_hooks.values():
                    hook(self, module_name)
                if "provided" not in attrs:
                    raise AssertionError(f"Module was marked `intern` but not provided: "
                                         f"{module_name}")
                if attrs.get("is_pickle") is True:
                    continue  # (written by save_pickle)
                self._write_source_string(module_name, attrs["source"], attrs["is_package"])
            elif action == _ModuleProviderAction.REPACKAGED_MOCK_MODULE:
                self._write_mock_file()
            elif action == _ModuleProviderAction.SKIP:
                continue
            else:
                raise AssertionError(f"Invalid action: {module_name}, {action}. Please report "
                                     f"a bug to PyTorch.")
        self._write(".data/extern_modules", "\n".join(extern_modules) + "\n")

    def _write_python_version(self):
        self._write(".data/python_version", platform.python_version())

    def close(self):
        """Check the dependencies, write the modules and end the archive (``with`` calls
        this). Raises PackagingError or EmptyMatchError."""
        try:
            self._execute_dependency_graph()
            self._write_python_version()
            # PyTorch's writer ends the archive with its format version, byte order and id
            self.zip_file.write_record(".data/version", b"6\n")
            self.zip_file.write_record("byteorder", sys.byteorder.encode())
            self.zip_file.write_record(".data/serialization_id", b"0" * 40)
        finally:
            # (on a PackagingError too: PyTorch's writer ends the archive when it is freed)
            self._finalize_zip()

    def _finalize_zip(self):
        if self.zip_file is None:
            return
        self.zip_file.finish()
        self.zip_file = None
        if self.buffer:
            self.buffer.flush()
        else:
            self._file.close()

    def _filename(self, package, resource):
        return f"{package.replace('.', '/')}/{_normalize_path(resource)}"

    def _can_implicitly_extern(self, module_name):
        top_level_package_name = module_name.partition(".")[0]
        return _is_ember_module(top_level_package_name) or (
            top_level_package_name not in _DISALLOWED_MODULES
            and top_level_package_name in sys.stdlib_module_names)

    def dependency_graph_string(self):
        """The dependency graph in dot format."""
        return self.dependency_graph.to_dot()

    def _nodes_with_action_type(self, action):
        return sorted(name for name, node in self.dependency_graph.nodes.items()
                      if node.get("action") == action and "is_pickle" not in node)

    def externed_modules(self):
        return self._nodes_with_action_type(_ModuleProviderAction.EXTERN)

    def interned_modules(self):
        return self._nodes_with_action_type(_ModuleProviderAction.INTERN)

    def mocked_modules(self):
        return self._nodes_with_action_type(_ModuleProviderAction.MOCK)

    def denied_modules(self):
        return self._nodes_with_action_type(_ModuleProviderAction.DENY)

    def get_rdeps(self, module_name):
        """The modules that depend on ``module_name``."""
        if module_name in self.dependency_graph._pred:
            return list(self.dependency_graph._pred[module_name].keys())
        return []

    def all_paths(self, src, dst):
        """The subgraph of every path from ``src`` to ``dst``, in dot format."""
        return self.dependency_graph.all_paths(src, dst)


# stdlib modules with a lot of system access: never externed implicitly
_DISALLOWED_MODULES = ["sys", "io"]

_MOCK_IMPL = """\
from _mock import MockedObject
def __getattr__(attr: str):
    return MockedObject(__name__ + '.' + attr, _suppress_err=True)
"""


def _read_file(filename):
    with open(filename, "rb") as f:
        return f.read().decode("utf-8")
