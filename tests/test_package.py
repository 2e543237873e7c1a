"""ember.package against torch.package: a model's code and weights packaged and loaded back in
the importer's own namespace, intern/extern/mock/deny with dependency resolution, the errors
(PackagingError's report, EmptyMatchError, mocked objects), and archives of tensors exchanged
with PyTorch in both directions."""
import contextlib
import io
import sys
import textwrap

import numpy as np
import pytest

import ember
from ember.package import (EmptyMatchError, GlobGroup, OrderedImporter, PackageExporter,
                           PackageImporter, PackagingError, is_from_package, sys_importer)
from ember.package.analyze import find_first_use_of_broken_modules

# (PyTorch's own exporter and importer use typed storages)
pytestmark = pytest.mark.filterwarnings("ignore:TypedStorage is deprecated:UserWarning")

# a package of modules written for either library (`lib` is ember or torch)
SOURCES = {
    "mods/__init__.py": "",
    "mods/net.py": """
        import math
        import {lib} as torch
        from {lib} import nn
        from .helpers import scale
        from . import ext_dep


        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(4, 3)
                self.register_buffer("offset", torch.arange(3.0))

            def forward(self, x):
                return scale(self.fc(x).relu()) + self.offset + ext_dep.SHIFT + math.e
    """,
    "mods/helpers.py": """
        import math


        def scale(x):
            return x * math.pi
    """,
    "mods/ext_dep.py": "SHIFT = 1.5\n",
    "mods/uses_mocked.py": """
        from mods import mocked_dep
        import mods.helpers


        def call():
            return mocked_dep.thing(3)
    """,
    "mods/mocked_dep.py": "def thing(x):\n    return x\n",
    "mods/uses_denied.py": "import mods.denied_dep\n",
    "mods/denied_dep.py": "X = 1\n",
    "mods/broken.py": "import mods.helpers\nimport sys\nimport mods.denied_dep\n",
}


@contextlib.contextmanager
def modules_of(root, lib):
    """The package ``mods`` for ``lib`` importable from ``root``; forgotten afterwards, so that
    each library's turn imports its own copy under the same names."""
    base = root / lib
    for rel, text in SOURCES.items():
        path = base / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).format(lib=lib))
    sys.path.insert(0, str(base))
    try:
        yield
    finally:
        sys.path.remove(str(base))
        for name in [n for n in sys.modules if n == "mods" or n.startswith("mods.")]:
            del sys.modules[name]


def both(tmp_path, torch, fn):
    """``fn(lib, package_module)`` run for ember, then for PyTorch, on their copies of mods."""
    results = []
    for lib, package in (("ember", ember.package), ("torch", torch.package)):
        with modules_of(tmp_path, lib):
            results.append(fn(lib, package))
    return results


def test_model_packaged_and_reloaded(tmp_path, torch):
    """A Module subclass with its helper modules interned, pickled with its weights and loaded
    back from the archive's own code: same outputs, a class of the importer's namespace, and
    the same interned modules as PyTorch's exporter picks."""
    x = np.random.default_rng(0).standard_normal((2, 4)).astype(np.float32)

    def run(lib, package):
        mod = sys.modules.get(lib) or __import__(lib)
        net_module = __import__("mods.net", fromlist=["Net"])
        mod.manual_seed(0)
        model = net_module.Net()
        path = tmp_path / f"{lib}_model.pt"
        with package.PackageExporter(path) as exp:
            exp.intern("mods.**")
            exp.save_pickle("model", "model.pkl", model)
            interned = exp.interned_modules()
        imp = package.PackageImporter(path)
        loaded = imp.load_pickle("model", "model.pkl")
        assert type(loaded) is not net_module.Net
        assert type(loaded).__module__ == imp.id() + ".mods.net"
        assert package.is_from_package(loaded) and not package.is_from_package(model)
        assert type(loaded) is imp.import_module("mods.net").Net
        expected = model(mod.from_numpy(x)).detach().numpy()
        got = loaded(mod.from_numpy(x)).detach().numpy()
        np.testing.assert_array_equal(got, expected)
        assert loaded.offset.numpy().tolist() == [0.0, 1.0, 2.0]
        return interned, got

    (ours, ours_out), (theirs, theirs_out) = both(tmp_path, torch, run)
    assert ours == theirs == ["mods.ext_dep", "mods.helpers", "mods.net"]
    np.testing.assert_allclose(ours_out, theirs_out, rtol=1e-6)


def test_resources_sources_and_file_structure(torch):
    def run(package):
        buf = io.BytesIO()
        with package.PackageExporter(buf) as exp:
            exp.save_text("res", "notes.txt", "héllo")
            exp.save_binary("res", "blob.bin", b"\x00\x01\xff")
            exp.save_source_string("pkg", "VALUE = 7\n", is_package=True)
            exp.save_source_string("pkg.sub", "from . import VALUE\nDOUBLE = VALUE * 2\n")
        buf.seek(0)
        imp = package.PackageImporter(buf)
        assert imp.load_text("res", "notes.txt") == "héllo"
        assert imp.load_binary("res", "blob.bin") == b"\x00\x01\xff"
        sub = imp.import_module("pkg.sub")
        assert sub.DOUBLE == 14 and "pkg.sub" not in sys.modules
        with pytest.raises(ModuleNotFoundError) as err:
            imp.import_module("pkg.missing")
        structure = imp.file_structure()
        assert structure.has_file("res/notes.txt") and not structure.has_file("res/no.txt")
        filtered = imp.file_structure(include=["res/*"], exclude="**/*.bin")
        return str(structure), str(filtered), str(err.value), imp.python_version()

    assert run(ember.package) == run(torch.package)


def _errors(package, build):
    buf = io.BytesIO()
    with pytest.raises(Exception) as err:
        with package.PackageExporter(buf) as exp:
            build(exp)
    return type(err.value).__name__, str(err.value)


def test_packaging_errors_as_pytorch(tmp_path, torch):
    """Broken dependencies are collected and raised at close: no action, denied, a module
    without source, mocked-but-pickled, an unmatched allow_empty=False pattern."""
    def run(lib, package):
        import mods.mocked_dep
        cases = [
            lambda e: e.save_module("mods.broken"),
            # the first matching pattern decides
            lambda e: (e.deny("mods.denied_dep"), e.intern("mods.**"),
                       e.save_module("mods.uses_denied")),
            lambda e: (e.intern("mods.*"), e.save_module("mods.broken")),
            lambda e: e.save_module("itertools"),
            lambda e: (e.extern("mods.nothing", allow_empty=False),
                       e.save_text("a", "b.txt", "c")),
            lambda e: (e.mock("mods.mocked_dep"),
                       e.save_pickle("obj", "o.pkl", mods.mocked_dep.thing)),
        ]
        return [_errors(package, c) for c in cases]

    ours, theirs = both(tmp_path, torch, run)
    assert ours == theirs
    assert [kind for kind, _ in ours] == ["PackagingError"] * 4 + ["EmptyMatchError",
                                                                   "PackagingError"]
    assert "did not match against any action pattern" in ours[0][1]
    assert "    mods.denied_dep\n" in ours[1][1] and "denied by a pattern" in ours[1][1]
    assert "had no __file__" in ours[3][1]


def test_packaging_error_graph_and_debug_path(tmp_path):
    with modules_of(tmp_path, "ember"):
        with pytest.raises(PackagingError) as err:
            with PackageExporter(io.BytesIO(), debug=True) as exp:
                exp.intern("mods.**")
                exp.save_module("mods.broken")
        assert "A path to sys: mods.broken -> sys" in str(err.value)
        assert "Note: While we usually use modules in the python standard library" in \
            str(err.value)  # (sys is never externed implicitly)
        assert find_first_use_of_broken_modules(err.value) == {"sys": ["mods.broken", "sys"]}


def test_extern_mock_and_hooks(tmp_path, torch):
    """An externed module is the loading environment's own, a mocked one a stub whose
    attributes fail when used (the error as PyTorch's), and the hooks see every module."""
    def run(lib, package):
        buf = io.BytesIO()
        seen = []
        with package.PackageExporter(buf) as exp:
            exp.register_extern_hook(lambda e, name: seen.append(("extern", name)))
            exp.register_mock_hook(lambda e, name: seen.append(("mock", name)))
            handle = exp.register_intern_hook(lambda e, name: seen.append(("intern", name)))
            exp.intern("mods.uses_mocked")
            exp.extern("mods.helpers")
            exp.mock("mods.mocked_dep")
            exp.save_module("mods.uses_mocked")
            lists = (exp.interned_modules(), exp.externed_modules(), exp.mocked_modules())
            handle.remove()
        buf.seek(0)
        imp = package.PackageImporter(buf)
        uses = imp.import_module("mods.uses_mocked")
        assert imp.import_module("mods.helpers") is sys.modules["mods.helpers"]
        with pytest.raises(NotImplementedError) as err:
            uses.call()
        assert repr(uses.mocked_dep.thing) == f"MockedObject({imp.id()}.mods.mocked_dep.thing)"
        with pytest.raises(ImportError) as refused:
            buf.seek(0)
            package.PackageImporter(buf, module_allowed=lambda name: name != "mods.helpers")
        message = str(err.value).replace(imp.id(), "<torch_package_N>")
        return lists, sorted(seen), message, str(refused.value).split("needs", 1)[1]

    ours, theirs = both(tmp_path, torch, run)
    assert ours == theirs
    assert ours[0] == (["mods.uses_mocked"], ["mods.helpers"], ["mods.mocked_dep"])


def test_repackaging_through_ordered_importer(tmp_path):
    """An object whose class came from a loaded package is pickled again with that importer
    first: the new package names the class by its unmangled module and carries its code."""
    with modules_of(tmp_path, "ember"):
        import mods.net
        model = mods.net.Net()
        first = io.BytesIO()
        with PackageExporter(first) as exp:
            exp.intern("mods.**")
            exp.save_pickle("m", "m.pkl", model)
        first.seek(0)
        imp = PackageImporter(first)
        loaded = imp.load_pickle("m", "m.pkl")
        second = io.BytesIO()
        with PackageExporter(second, importer=(imp, sys_importer)) as exp:
            exp.intern("mods.**")
            exp.save_pickle("m", "m.pkl", loaded)
        assert isinstance(exp.importer, OrderedImporter)
    second.seek(0)
    imp2 = PackageImporter(second)
    again = imp2.load_pickle("m", "m.pkl")
    assert type(again).__module__ == imp2.id() + ".mods.net" and imp2.id() != imp.id()
    x = ember.randn(3, 4)
    assert ember.equal(again(x), model(x))


def _tensors(lib):
    base = lib.arange(12, dtype=lib.float32).reshape(3, 4)
    return {"t": base, "view": base[1:, ::2], "ints": lib.tensor([1, -2, 3]),
            "half": lib.tensor([0.5, 1.5], dtype=lib.float16),
            "u16": lib.tensor([7, 65535], dtype=lib.uint16),
            "flags": lib.tensor([True, False]),
            "param": lib.nn.Parameter(lib.ones(2)), "nested": [base[0], (base[2],)]}


def _as_numpy(obj):
    if isinstance(obj, dict):
        return {k: _as_numpy(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return type(obj)(_as_numpy(v) for v in obj)
    return (obj.detach().numpy(), str(obj.dtype).split(".")[1], tuple(obj.stride()),
            obj.requires_grad)


def _check_same(got, want):
    if isinstance(want, dict):
        assert got.keys() == want.keys()
        for k in want:
            _check_same(got[k], want[k])
    elif isinstance(want, list) or (isinstance(want, tuple) and isinstance(want[0], tuple)):
        for g, w in zip(got, want):
            _check_same(g, w)
    else:
        np.testing.assert_array_equal(got[0], want[0])
        assert got[1:] == want[1:]


@pytest.mark.parametrize("protocol", [3, 4])
def test_tensor_archives_exchanged_with_pytorch(torch, protocol):
    """PyTorch's package format stores storages as .data/<id>.storage records referenced by
    persistent ids, which ember writes too: each library loads the other's archive, views
    sharing their storage."""
    ours = io.BytesIO()
    with PackageExporter(ours) as exp:
        exp.save_pickle("res", "t.pkl", _tensors(ember), pickle_protocol=protocol)
    theirs = io.BytesIO()
    with torch.package.PackageExporter(theirs) as exp:
        exp.save_pickle("res", "t.pkl", _tensors(torch), pickle_protocol=protocol)
    ours.seek(0)
    theirs.seek(0)
    by_torch = torch.package.PackageImporter(ours).load_pickle("res", "t.pkl")
    by_ember = PackageImporter(theirs).load_pickle("res", "t.pkl")
    want = _as_numpy(_tensors(torch))
    _check_same(_as_numpy(by_torch), want)
    _check_same(_as_numpy(by_ember), want)
    by_ember["t"][1, 0] = 100.0  # a view shares its base's storage after loading
    assert by_ember["view"][0, 0].item() == 100.0
    ours.seek(0)
    assert sorted(torch.package.PackageImporter(ours).file_structure().children) == \
        sorted(PackageImporter(ours).file_structure().children)


def test_errors_of_bad_arguments(torch):
    for package in (ember.package, torch.package):
        with pytest.raises(AssertionError, match="only supports pickle protocols 3 and 4"):
            package.PackageExporter(io.BytesIO()).save_pickle("a", "b.pkl", 1,
                                                              pickle_protocol=2)
        with pytest.raises(ValueError, match="must be only a file name"):
            package.PackageExporter(io.BytesIO()).save_text("a", "b/c.txt", "x")
        with pytest.raises(TypeError, match="did you perhaps mean to pass `__name__`"):
            package.PackageExporter(io.BytesIO()).save_module(sys)
        with pytest.raises(TypeError, match="importer arg should be an Importer"):
            package.PackageExporter(io.BytesIO(), importer=3)
        buf = io.BytesIO()
        exp = package.PackageExporter(buf)
        exp.save_text("a", "b.txt", "x")
        with pytest.raises(AssertionError, match="already exists in this archive"):
            exp.save_text("a", "b.txt", "y")


def test_glob_group_matches_as_pytorch(torch):
    patterns = [("torch.**", ()), ("foo.*", ()), (["a.b", "c.**"], "c.d.**"),
                ("**.bar", ()), ("x*y.z", ())]
    names = ["torch", "torch.nn", "foo", "foo.bar", "foo.bar.baz", "a.b", "c", "c.d",
             "c.e.f", "c.d.e", "q.bar", "bar", "xay.z", "xy.z", "x.y.z"]
    for include, exclude in patterns:
        ours = GlobGroup(include, exclude=exclude)
        theirs = torch.package.GlobGroup(include, exclude=exclude)
        assert [ours.matches(n) for n in names] == [theirs.matches(n) for n in names]
        assert str(ours) == str(theirs)
    with pytest.raises(ValueError, match=r"\*\* can only appear as an entire path segment"):
        GlobGroup("a.b**")


def test_directory_package_and_empty_match_allowed(tmp_path):
    """A package unzipped into a folder loads as the archive does."""
    import zipfile
    buf = io.BytesIO()
    with PackageExporter(buf) as exp:
        exp.extern("nothing.matches")  # allow_empty=True: no error
        exp.save_pickle("res", "x.pkl", {"t": ember.arange(3.0)})
    buf.seek(0)
    zipfile.ZipFile(buf).extractall(tmp_path)
    imp = PackageImporter(tmp_path / "archive")
    assert imp.load_pickle("res", "x.pkl")["t"].tolist() == [0.0, 1.0, 2.0]
    with pytest.raises(EmptyMatchError):
        with PackageExporter(io.BytesIO()) as exp:
            exp.mock("nothing.matches", allow_empty=False)
    assert not is_from_package(ember)
    assert ember.package is sys.modules["ember.package"]  # (an attribute of ember, as torch's)
