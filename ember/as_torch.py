"""Run PyTorch programs and libraries on ember unchanged: ``import torch`` imports ember.

A program of one's own runs on ember by changing its import (``import ember as torch``); a
library (HuggingFace transformers, einops ...) imports ``torch`` itself. After :func:`install`,
``import torch`` and ``import torch.<sub>`` give ember's modules (``torch.nn`` *is*
``ember.nn``), and ``importlib.metadata`` finds a ``torch`` distribution whose version is the
PyTorch release ember's API follows (:data:`ember.version.pytorch_api`), which is what libraries
check before they use torch; ``torch.__version__`` (and ``torch.version.__version__``) say the
same while installed, for the libraries that read it there (Lightning's version gates), and
dtypes, layouts, memory formats and ``Size`` print as ``torch.float32`` (libraries compare those
strings). A module PyTorch has and ember lacks raises ModuleNotFoundError naming
``torch.<sub>``.

From the command line::

    python -m ember.as_torch train.py --lr 1e-3      # a script
    python -m ember.as_torch -m some.module args     # a module, as python -m
"""
import importlib
import importlib.abc
import importlib.metadata
import importlib.util
import runpy
import sys
import types

from . import version as _version
from ._core import api_name
from .torch_version import TorchVersion
from .version import pytorch_api

__all__ = ["install", "uninstall", "is_installed"]


class _TorchFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """``torch[.sub]`` as ``ember[.sub]``: the module object is ember's own, so classes,
    functions and state are shared with code that imports ember."""

    def find_spec(self, name, path=None, target=None):
        if name != "torch" and not name.startswith("torch."):
            return None
        ember_name = "ember" + name[5:]
        # a module already imported may carry no __spec__ (torch.backends replaces itself in
        # sys.modules with a module object, as PyTorch's does), which find_spec refuses
        if ember_name not in sys.modules and importlib.util.find_spec(ember_name) is None:
            return None  # the next finder fails too: ModuleNotFoundError names torch.<sub>
        return importlib.util.spec_from_loader(name, self)

    def create_module(self, spec):
        return importlib.import_module("ember" + spec.name[5:])

    def exec_module(self, module):
        pass  # ember's module ran when it was imported

    def find_distributions(self, context=importlib.metadata.DistributionFinder.Context()):
        if context.name in ("torch", None):
            return iter([_TorchDistribution()])
        return iter(())


class _TorchDistribution(importlib.metadata.Distribution):
    """The ``torch`` distribution's metadata: its name and the version ember follows."""

    def read_text(self, filename):
        if filename == "METADATA":
            return f"Metadata-Version: 2.1\nName: torch\nVersion: {pytorch_api}\n"
        return None

    def locate_file(self, path):
        raise FileNotFoundError(f"ember's torch alias has no file {path}")


class _TorchvisionOps(importlib.abc.MetaPathFinder):
    """torchvision's C++ operator library links PyTorch's own libraries, so it never loads into
    ember. Just before torchvision first imports, its operators are defined here instead, with
    torchvision's schemas and kernels written with ember's ops (ember/_torchvision_ops.py:
    ``nms``, ``roi_align``, ``roi_pool``, ``ps_roi_align``, ``ps_roi_pool``, ``deform_conv2d``
    and their backward ops; the quantized ``qnms`` and ``qroi_align`` as schemas only).
    torchvision decides whether it has its ops by whether loading that library succeeded
    (``torchvision.extension._has_ops``), so that module is told ``_has_ops() -> True`` once
    it has run: torchvision's Python then registers its meta kernels, autograd formulas and
    autocast wrappers and calls the ops, as in a PyTorch install."""

    library = None

    class _ExtensionLoader(importlib.abc.Loader):
        """Runs torchvision/extension.py (whose loading of the C++ library fails), then says
        the ops are there and checks their CUDA version as it would have."""

        def __init__(self, loader):
            self.loader = loader

        def __getattr__(self, name):  # get_source, get_code ... (inspect, linecache)
            return getattr(self.loader, name)

        def create_module(self, spec):
            return self.loader.create_module(spec)

        def exec_module(self, module):
            self.loader.exec_module(module)
            module._has_ops = lambda: True
            module._HAS_OPS = True  # (older torchvision's flag)
            module._check_cuda_version()

    def find_spec(self, name, path=None, target=None):
        import importlib.machinery
        import os
        if name == "torchvision" and self.library is None:
            from ._torchvision_ops import register
            spec = importlib.machinery.PathFinder.find_spec(name, path)
            # a torchvision whose Python gives its ops autograd (_autograd_registrations.py)
            # registers it itself; an older one had it in the C++ library: it is given here
            python_autograd = spec is not None and any(
                os.path.exists(os.path.join(d, "_autograd_registrations.py"))
                for d in spec.submodule_search_locations or ())
            _TorchvisionOps.library = register(autograd=not python_autograd)
        elif name == "torchvision.extension" and self.library is not None:
            spec = importlib.machinery.PathFinder.find_spec(name, path)
            if spec is not None and spec.loader is not None:
                spec.loader = self._ExtensionLoader(spec.loader)
            return spec
        return None  # the module itself is found by the next finder


class _Retagger(importlib.abc.MetaPathFinder):
    """While installed, ember's classes and functions carry the module names PyTorch's have
    (``torch.nn.modules.linear.Linear``), since libraries write ``__module__`` into configs and
    files and trust only ``torch.`` paths on the way back (sentence-transformers' activations,
    Lightning's check for ``torch.nn.init`` functions, MONAI's ``dtype.__module__ == "torch"``),
    and print them. A module of ember's is also in ``sys.modules`` under its torch name, where
    ``inspect`` and pickle look ``__module__`` up. Modules imported later are retagged as they
    finish loading (this finder wraps their loader). ember's own checks of ``__module__`` read
    it through ``_core.api_name.as_ember``."""

    def __init__(self):
        self.retagged = {}  # id -> (object, its ember module name), restored by uninstall

    def find_spec(self, name, path=None, target=None):
        if name != "ember" and not name.startswith("ember."):
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(name, path, target)
            if spec is not None:
                if spec.loader is not None and hasattr(spec.loader, "exec_module"):
                    spec.loader = _RetaggingLoader(spec.loader, self)
                return spec
        return None

    def retag_module(self, ember_name, module):
        sys.modules.setdefault("torch" + ember_name[5:], module)
        for obj in list(vars(module).values()):
            self.retag(obj)

    def retag(self, obj):
        # (by type(), not isinstance: that reads __class__, which deprecated objects such as
        # distributed.reduce_op answer with a FutureWarning on every run)
        kind = type(obj)
        if not issubclass(kind, (type, types.FunctionType)) or id(obj) in self.retagged:
            return
        module = obj.__dict__.get("__module__") if issubclass(kind, type) else obj.__module__
        if not isinstance(module, str) or not (module == "ember" or module.startswith("ember.")):
            return
        try:
            obj.__module__ = "torch" + module[5:]
        except (TypeError, AttributeError):  # a class defined in C
            return
        self.retagged[id(obj)] = (obj, module)
        if issubclass(kind, type):
            for member in list(vars(obj).values()):
                if isinstance(member, (staticmethod, classmethod)):
                    member = member.__func__
                elif isinstance(member, property):
                    for f in (member.fget, member.fset, member.fdel):
                        self.retag(f)
                    continue
                self.retag(member)

    def restore(self):
        for obj, module in self.retagged.values():
            obj.__module__ = module
        self.retagged.clear()


class _RetaggingLoader(importlib.abc.Loader):
    """Runs an ember module, then retags what it defined."""

    def __init__(self, loader, retagger):
        self.loader, self.retagger = loader, retagger

    def __getattr__(self, name):  # get_source, get_code ... (inspect, linecache)
        return getattr(self.loader, name)

    def create_module(self, spec):
        return self.loader.create_module(spec)

    def exec_module(self, module):
        self.loader.exec_module(module)
        self.retagger.retag_module(module.__spec__.name, module)


_finder = _TorchFinder()
_retagger = _Retagger()
_torchvision_ops = _TorchvisionOps()
_EMBER_VERSION = _version.__version__


class _Children:
    """Processes started by spawn or forkserver (Python 3.14's default start method, and what
    DataLoader workers get with ``multiprocessing_context="spawn"``) are new interpreters that
    import the program's main module again: there ``import torch`` would find PyTorch (or
    nothing), and the objects sent to them would name modules PyTorch lacks. While the alias is
    installed, a spawned child's command line installs it first, and a forkserver imports
    ``ember._as_torch_child`` (which installs it) instead of preloading the main module, which
    each child then imports with the alias in place."""

    saved = None

    def install(self):
        import multiprocessing.forkserver as forkserver
        import multiprocessing.spawn as spawn
        if self.saved is not None:
            return
        command_line = spawn.get_command_line
        preload = list(getattr(forkserver._forkserver, "_preload_modules", ["__main__"]))
        self.saved = command_line, preload

        def get_command_line(**kwds):
            argv = command_line(**kwds)
            if "-c" in argv:  # (a frozen executable has no program text to extend)
                i = argv.index("-c") + 1
                argv[i] = "import ember.as_torch; ember.as_torch.install(); " + argv[i]
            return argv
        spawn.get_command_line = get_command_line
        forkserver._forkserver._preload_modules = ["ember._as_torch_child"] + [
            m for m in preload if m != "__main__"]

    def uninstall(self):
        import multiprocessing.forkserver as forkserver
        import multiprocessing.spawn as spawn
        if self.saved is not None:
            spawn.get_command_line, forkserver._forkserver._preload_modules = self.saved
            self.saved = None


_children = _Children()


def is_installed():
    return _finder in sys.meta_path


def install():
    """Make ``import torch`` import ember from now on in this process. Raises RuntimeError
    when a real PyTorch is already imported (two libraries cannot share one name)."""
    if is_installed():
        return
    torch = sys.modules.get("torch")
    if torch is not None and torch is not sys.modules["ember"]:
        raise RuntimeError("ember.as_torch.install(): PyTorch is already imported in this "
                           "process; install the alias before the first `import torch`")
    sys.meta_path.insert(0, _finder)
    sys.meta_path.insert(0, _torchvision_ops)
    sys.meta_path.insert(0, _retagger)
    # ember._C is a module, not a package, so its submodules are found only in sys.modules
    for name in [n for n in sys.modules if n.startswith("ember._C.")]:
        sys.modules.setdefault("torch" + name[5:], sys.modules[name])
    sys.modules["ember"].__version__ = _version.__version__ = TorchVersion(pytorch_api)
    # libraries check the module's own name too (pyro patches "torch.distributions..." after
    # asserting that the root module is named "torch")
    sys.modules["ember"].__name__ = "torch"
    api_name.name = "torch"
    for name, module in list(sys.modules.items()):
        if (name == "ember" or name.startswith("ember.")) and module is not None:
            _retagger.retag_module(name, module)
    _children.install()


def uninstall():
    """Undo :func:`install`: later imports of ``torch`` find PyTorch again (modules already
    imported as ``torch.*`` stay ember's until removed from ``sys.modules``)."""
    if is_installed():
        sys.meta_path.remove(_finder)
        sys.meta_path.remove(_torchvision_ops)
        sys.meta_path.remove(_retagger)
        _retagger.restore()
        _children.uninstall()
        sys.modules["ember"].__version__ = _version.__version__ = _EMBER_VERSION
        sys.modules["ember"].__name__ = "ember"
        api_name.name = "ember"
    for name in [n for n in sys.modules if n == "torch" or n.startswith("torch.")]:
        module = sys.modules[name]
        if module is sys.modules["ember"] or getattr(module, "__name__", "").startswith("ember"):
            del sys.modules[name]


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__.strip().splitlines()[0] + "\n\nusage: python -m ember.as_torch "
              "(SCRIPT | -m MODULE) [ARGS...]")
        return 0 if argv else 2
    install()
    if argv[0] == "-m":
        if len(argv) < 2:
            print("python -m ember.as_torch: -m needs a module name", file=sys.stderr)
            return 2
        sys.argv = argv[1:]
        runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
    else:
        sys.argv = argv
        runpy.run_path(argv[0], run_name="__main__")
    return 0


if __name__ == "__main__":
    # run as ember.as_torch, not as this copy named __main__: one finder in the process
    from ember.as_torch import main as _main
    sys.exit(_main())
