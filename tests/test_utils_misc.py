"""ember.utils.module_tracker, ember.utils.weak and ember.hub against PyTorch: the module names
and backward flag a tracker reports at each hook, identity-keyed weak dictionaries, and hub's
local loading, cached GitHub repositories and checkpoint downloads (file:// URLs)."""
import copy
import gc
import hashlib
import os
import sys
import warnings
import zipfile

import pytest

import ember
from ember.utils.module_tracker import ModuleTracker
from ember.utils.weak import (TensorWeakRef, WeakIdKeyDictionary, WeakIdRef,
                              WeakTensorKeyDictionary, _WeakHashRef)


# ---------------------------------------------------------------------------------------------
# ModuleTracker

def _track(lib, tracker_cls):
    nn = lib.nn

    class Inner(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(3, 3)

        def forward(self, x):
            return self.lin(x).relu()

    lib.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 3), Inner(), nn.Linear(3, 2))
    log = []
    with tracker_cls() as tr:
        def note(tag):
            log.append((tag, sorted(tr.parents), tr.is_bw))
        for name, sub in model.named_modules():
            sub.register_forward_hook(lambda m, i, o, n=name: note("fw " + n))
            sub.register_full_backward_pre_hook(lambda m, g, n=name: note("bwpre " + n))
        x = lib.randn(2, 3, requires_grad=True)
        out = model(x)
        out.register_hook(lambda g: note("out grad"))
        x.register_hook(lambda g: note("x grad"))
        out.sum().backward()
        note("after")
    log.append(("exit", sorted(tr.parents), tr.is_bw))
    return log


def test_module_tracker_matches_pytorch(torch):
    from torch.utils.module_tracker import ModuleTracker as TorchModuleTracker
    expected = _track(torch, TorchModuleTracker)
    got = _track(ember, ModuleTracker)
    assert got == expected
    assert ("fw 1.lin", ["Global", "Sequential", "Sequential.1"], False) in got
    assert ("bwpre 1.lin", ["Global", "Sequential", "Sequential.1"], True) in got


def test_module_tracker_removes_hooks():
    from ember.nn.modules import module as module_mod
    before = (len(module_mod._global_forward_pre_hooks), len(module_mod._global_forward_hooks))
    lin = ember.nn.Linear(2, 2)
    with ModuleTracker() as tr:
        assert len(module_mod._global_forward_pre_hooks) == before[0] + 1
        lin(ember.randn(1, 2, requires_grad=True))
        assert len(tr._hooks) == 2
    assert (len(module_mod._global_forward_pre_hooks),
            len(module_mod._global_forward_hooks)) == before
    assert tr._hooks == [] and tr.parents == {"Global"}


# ---------------------------------------------------------------------------------------------
# weak

class _Obj:
    pass


def test_weak_id_ref_identity():
    a, b = ember.ones(2), ember.ones(2)
    ra, ra2, rb = WeakIdRef(a), WeakIdRef(a), WeakIdRef(b)
    # (only == is by identity: != is weakref.ref's, which compares the referents, as in PyTorch)
    assert ra == ra2 and hash(ra) == id(a) and not ra == rb and ra() is a
    del a
    gc.collect()
    assert ra() is None and not ra == ra2 and ra == ra  # a dead ref equals only itself

    class H:
        def __hash__(self):
            return 5
    h1, h2 = H(), H()
    assert _WeakHashRef(h1) == _WeakHashRef(h2) and hash(_WeakHashRef(h1)) == 5


def test_weak_tensor_key_dictionary(torch):
    assert WeakTensorKeyDictionary is WeakIdKeyDictionary
    for lib, cls in ((ember, WeakTensorKeyDictionary),
                     (torch, torch.utils.weak.WeakTensorKeyDictionary)):
        a, b, c = lib.ones(2), lib.ones(2), lib.zeros(3)  # a == b elementwise: still two keys
        d = cls({a: 1})
        d[b] = 2
        d.setdefault(c, 3)
        assert (len(d), d[a], d[b], d.get(c), a in d, 7 in d) == (3, 1, 2, 3, True, False)
        assert [v for v in d.values()] == [1, 2, 3]
        assert list(d.keys())[1] is b and list(d) == list(d.keys())
        assert d.pop(b) == 2 and len(d) == 2
        copied = d.copy()
        assert copied == d and (d | {b: 9})[b] == 9
        deep = copy.deepcopy(WeakIdKeyDictionary({a: [1]}))
        assert deep[a] == [1]
        del c
        gc.collect()
        assert len(d) == 1 and [k is a for k in d] == [True]
        # keys dying while iterating are removed after the iteration
        x = lib.ones(1)
        d[x] = 5
        items = d.items()
        next(items)
        del x
        gc.collect()
        assert len(d) == 1
        list(items)
        assert len(d.data) == 1 and d.popitem()[0] is a and len(d) == 0
    assert repr(WeakIdKeyDictionary()).startswith("<WeakIdKeyDictionary at 0x")


def test_tensor_weak_ref():
    t = ember.ones(3)
    r = TensorWeakRef(t)
    assert r() is t
    del t
    gc.collect()
    assert r() is None
    with pytest.raises(AssertionError, match="expected torch.Tensor"):
        TensorWeakRef(_Obj())
    assert ember.utils.weak.WeakIdRef is WeakIdRef  # reachable from ember.utils


# ---------------------------------------------------------------------------------------------
# hub

HUBCONF = '''
dependencies = ["os", "json"]
import helper_mod


def mlp(width=3, *, bias=True):
    """Builds an MLP."""
    import {lib} as lib
    return lib.nn.Linear(2, width, bias=bias)


def needs():
    return helper_mod.VALUE


def _private():
    pass


CONST = 3
'''


def _write_repo(path, lib_name):
    os.makedirs(path, exist_ok=True)
    with open(os.path.join(path, "hubconf.py"), "w") as f:
        f.write(HUBCONF.replace("{lib}", lib_name))
    with open(os.path.join(path, "helper_mod.py"), "w") as f:
        f.write("VALUE = 42\n")


@pytest.fixture
def hub_env(tmp_path, monkeypatch):
    """A fresh hub directory through $TORCH_HOME, for ember.hub and torch.hub alike."""
    import ember.hub as hub
    monkeypatch.setenv("TORCH_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("TORCH_HUB", raising=False)
    monkeypatch.setattr(hub, "_hub_dir", None)
    for name in ("helper_mod", "hubconf.py"):
        sys.modules.pop(name, None)
    yield tmp_path
    for name in ("helper_mod", "hubconf.py"):
        sys.modules.pop(name, None)


def test_hub_dirs(hub_env, monkeypatch, torch):
    import torch.hub as thub
    monkeypatch.setattr(thub, "_hub_dir", None)
    assert ember.hub.get_dir() == str(hub_env / "home" / "hub") == thub.get_dir()
    monkeypatch.delenv("TORCH_HOME")
    monkeypatch.setenv("XDG_CACHE_HOME", str(hub_env / "xdg"))
    assert ember.hub.get_dir() == str(hub_env / "xdg" / "torch" / "hub") == thub.get_dir()
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert ember.hub.get_dir() == os.path.expanduser("~/.cache/torch/hub") == thub.get_dir()
    ember.hub.set_dir("~/somewhere")
    assert ember.hub.get_dir() == os.path.expanduser("~/somewhere")
    monkeypatch.setenv("TORCH_HUB", "x")
    with pytest.warns(UserWarning, match="TORCH_HUB is deprecated"):
        ember.hub.get_dir()


def _errors(hub, repo):
    out = []
    for call in (lambda: hub.load(repo, "CONST", source="local"),
                 lambda: hub.load(repo, "nope", source="LOCAL"),
                 lambda: hub.load(repo, "mlp", source="gitlab"),
                 lambda: hub.load(repo, 3, source="local")):
        with pytest.raises(Exception) as info:
            call()
        out.append((type(info.value).__name__, str(info.value)))
    return out


def test_hub_load_local(hub_env, torch):
    import torch.hub as thub
    for lib, hub in ((ember, ember.hub), (torch, thub)):
        repo = str(hub_env / lib.__name__)
        _write_repo(repo, lib.__name__)
        model = hub.load(repo, "mlp", 5, source="local", bias=False)
        assert isinstance(model, lib.nn.Linear) and model.out_features == 5 and model.bias is None
        assert hub.load(repo, "needs", source="local") == 42
        assert repo not in sys.path
    assert _errors(ember.hub, str(hub_env / "ember")) == _errors(thub, str(hub_env / "torch"))
    with open(hub_env / "ember" / "hubconf.py", "a") as f:
        f.write('dependencies = ["os", "surely_missing_pkg_x", "also_missing"]\n')
    with pytest.raises(RuntimeError, match="^Missing dependencies: surely_missing_pkg_x, "
                                           "also_missing$"):
        ember.hub.load(str(hub_env / "ember"), "mlp", source="local")


def test_hub_cached_github_repo(hub_env, torch, capsys):
    import torch.hub as thub
    results = []
    for hub in (ember.hub, thub):
        cache = os.path.join(hub.get_dir(), "someone_proj_main")
        os.makedirs(cache, exist_ok=True)
        with open(os.path.join(cache, "hubconf.py"), "w") as f:
            f.write('def a():\n    "doc of a"\n    return 1\n\n\ndef _b():\n    pass\n\n\n'
                    'def c(x):\n    return x\n')
        results.append((hub.list("someone/proj", verbose=False),
                        hub.list("someone/proj:main", verbose=False),
                        hub.help("someone/proj:main", "a"),
                        hub.load("someone/proj", "c", 7, verbose=False),
                        open(os.path.join(hub.get_dir(), "trusted_list")).read()))
        sys.modules.pop("hubconf.py", None)
        err = capsys.readouterr().err
        assert err == f"Using cache found in {cache}\n"
    assert results[0] == results[1] == (["a", "c"], ["a", "c"], "doc of a", 7, "")
    # not cached (or force_reload): a download from GitHub, which ember does not do
    with pytest.raises(RuntimeError, match="needs network access"):
        ember.hub.load("someone/proj:dev", "c", 1)
    with pytest.raises(RuntimeError, match="needs network access"):
        ember.hub.list("someone/proj", force_reload=True)
    with pytest.raises(RuntimeError, match="does not download from GitHub"):
        ember.hub.list("other/repo")


def _save_state(lib, path):
    lib.manual_seed(0)
    lib.save({"w": lib.arange(6.).reshape(2, 3), "b": lib.ones(2)}, path)


def test_load_state_dict_from_url(hub_env, capsys):
    src = str(hub_env / "weights.pth")
    _save_state(ember, src)
    out = ember.hub.load_state_dict_from_url("file://" + src, progress=False)
    ckpt = os.path.join(ember.hub.get_dir(), "checkpoints")
    assert capsys.readouterr().out == (f'Downloading: "file://{src}" to '
                                       f'{os.path.join(ckpt, "weights.pth")}\n')
    assert sorted(out) == ["b", "w"] and out["w"].tolist() == [[0., 1., 2.], [3., 4., 5.]]
    # cached: a second call reads the cached file without downloading
    os.remove(src)
    again = ember.hub.load_state_dict_from_url("file://" + src, progress=False,
                                               map_location="cpu")
    assert capsys.readouterr().out == "" and again["b"].tolist() == [1., 1.]

    # check_hash reads the SHA-256 prefix from the file name
    _save_state(ember, src)
    digest = hashlib.sha256(open(src, "rb").read()).hexdigest()
    named = str(hub_env / f"model-{digest[:10]}.pth")
    os.rename(src, named)
    out = ember.hub.load_state_dict_from_url("file://" + named, progress=False,
                                             check_hash=True, file_name="renamed.pth")
    assert sorted(os.listdir(ckpt)) == ["renamed.pth", "weights.pth"]
    bad = str(hub_env / "bad-deadbeef.pth")
    _save_state(ember, bad)
    with pytest.raises(RuntimeError, match='^invalid hash value \\(expected "deadbeef", got'):
        ember.hub.load_state_dict_from_url("file://" + bad, progress=False, check_hash=True)
    assert sorted(os.listdir(ckpt)) == ["renamed.pth", "weights.pth"]

    # explicit model_dir; map_location goes to ember.load
    seen = []
    out = ember.hub.load_state_dict_from_url(
        "file://" + named, model_dir=str(hub_env / "mine"), progress=False,
        map_location=lambda storage, loc: seen.append(loc) or storage)
    assert os.listdir(hub_env / "mine") == [os.path.basename(named)] and seen


def test_load_state_dict_saved_by_pytorch_and_legacy_zip(hub_env, torch, capsys):
    src = str(hub_env / "torch_weights.pth")
    _save_state(torch, src)
    out = ember.hub.load_state_dict_from_url("file://" + src, progress=False)
    assert isinstance(out["w"], ember.Tensor) and out["w"].tolist()[1] == [3., 4., 5.]
    legacy = str(hub_env / "legacy.zip")
    with zipfile.ZipFile(legacy, "w") as z:
        z.write(src, "inner.pth")
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        out = ember.hub.load_state_dict_from_url("file://" + legacy, progress=False)
    assert sorted(out) == ["b", "w"]
    assert [x.category for x in w] == [FutureWarning]
    assert os.path.exists(os.path.join(ember.hub.get_dir(), "checkpoints", "inner.pth"))


def test_download_url_to_file(hub_env, capsys):
    src = hub_env / "blob.bin"
    src.write_bytes(bytes(range(256)) * 1000)
    digest = hashlib.sha256(src.read_bytes()).hexdigest()
    dst = hub_env / "out.bin"
    ember.hub.download_url_to_file("file://" + str(src), str(dst), hash_prefix=digest[:6],
                                   progress=False)
    assert dst.read_bytes() == src.read_bytes()
    with pytest.raises(RuntimeError, match=f'expected "0000", got "{digest}"'):
        ember.hub.download_url_to_file("file://" + str(src), str(hub_env / "o2"),
                                       hash_prefix="0000", progress=False)
    assert not (hub_env / "o2").exists()
    assert not [f for f in os.listdir(hub_env) if f.endswith(".partial")]
    ember.hub.download_url_to_file("file://" + str(src), str(hub_env / "o3"))
    assert capsys.readouterr().err != ""  # the progress bar


def test_ember_hub_attribute():
    import subprocess
    code = "import ember, sys; print('ember.hub' in sys.modules, ember.hub.get_dir() != '')"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "True"]
