"""Architecture rules (issue 11) that text search and the dispatcher can check: kernels reach the
dispatcher by reference or under a name you can grep, and shape/dtype rules have one home
(``ember/_kernels/rules``) that imports no backend and that the backends share instead of
importing each other."""
import ast
import os
import re

import yaml

import ember  # noqa: F401  (builds the dispatcher's tables)
from ember._dispatch import dispatcher as _d
from ember._dispatch.keys import K
from ember._kernels import registration

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
KERNELS = os.path.join(ROOT, "ember", "_kernels")
BACKENDS = ("cpu", "meta", "cuda", "composite")


def _files(*parts):
    top = os.path.join(KERNELS, *parts)
    for root, _, files in os.walk(top):
        for f in sorted(files):
            if f.endswith(".py"):
                yield os.path.join(root, f)


def _source(*parts):
    return "\n".join(open(p).read() for p in _files(*parts))


def _entries():
    with open(os.path.join(ROOT, "ember", "_ops", "native_functions.yaml")) as f:
        return yaml.load(f, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


def _is_defined(name, text):
    """``def name(`` or ``name =`` (also in a chained ``a = name = f``) at the start of a line."""
    name = re.escape(name)
    return re.search(rf"^\s*def {name}\(|^\s*(\w+\s*=\s*)*{name}\s*=[^=]", text, re.M)


def test_every_kernel_name_in_the_yaml_is_a_def_or_an_assignment():
    text = _source()
    named, missing = 0, []
    for e in _entries():
        op = e["func"][: e["func"].index("(")]
        dispatch = e.get("dispatch")
        if dispatch is None and not registration.kernels_of(op):
            # no dispatch: and no kernel registered by reference: the registry looks up the
            # CompositeImplicitAutograd kernel named after the op
            base, _, overload = op.partition(".")
            dispatch = {"CompositeImplicitAutograd": base + (f"_{overload}" if overload else "")}
        for name in (dispatch or {}).values():
            named += 1
            if not _is_defined(name, text):
                missing.append((op, name))
    assert named > 500
    assert missing == []


def test_kernels_registered_by_reference_are_the_dispatchers():
    assert len(registration.KERNELS) > 500
    for op, by_key in registration.KERNELS.items():
        entry = _d.get_entry(f"aten::{op}")
        assert entry is not None, op
        for key, fn in by_key.items():
            assert entry.kernels[K[key]][-1].fn is fn, (op, key)
    # the pointwise tables register both backends of every overload they own (the sparse
    # kernels of ember/_kernels/sparse/ both keys of their layout)
    add = registration.kernels_of("add.Tensor")
    assert set(add) == {"CPU", "Meta", "SparseCPU", "SparseCUDA", "SparseCsrCPU",
                        "SparseCsrCUDA"}
    assert add["SparseCPU"] is add["SparseCUDA"] and add["SparseCsrCPU"] is add["SparseCsrCUDA"]
    assert add["CPU"].__name__ == "add_Tensor"


def test_no_manufactured_module_globals_in_kernel_modules():
    for path in _files():
        text = open(path).read()
        assert "globals().update" not in text, path
        assert "globals()[" not in text, path


def test_no_hand_kept_export_lists_for_kernel_discovery():
    for pkg in ("cpu", "meta", "composite"):
        for path in _files(pkg):
            tree = ast.parse(open(path).read())
            names = {t.id for n in ast.walk(tree) if isinstance(n, (ast.Assign, ast.AugAssign))
                     for t in (n.targets if isinstance(n, ast.Assign) else [n.target])
                     if isinstance(t, ast.Name)}
            assert "__all__" not in names, path
            stars = [n for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)
                     and any(a.name == "*" for a in n.names)]
            assert stars == [], path


def _imported_modules(path):
    """Absolute dotted names of the ember modules ``path`` imports (relative imports resolved)."""
    rel = os.path.relpath(path, ROOT)[:-3].split(os.sep)
    package = rel[:-1] if rel[-1] != "__init__" else rel[:-1]
    out = []
    for n in ast.walk(ast.parse(open(path).read())):
        if isinstance(n, ast.ImportFrom):
            base = package[: len(package) - n.level + 1] if n.level else []
            mod = ".".join(base + (n.module.split(".") if n.module else []))
            out.append(mod)
            out.extend(f"{mod}.{a.name}" for a in n.names)
        elif isinstance(n, ast.Import):
            out.extend(a.name for a in n.names)
    return out


def _imports_backend(path, backends):
    return sorted({m for m in _imported_modules(path)
                   for b in backends if m == f"ember._kernels.{b}"
                   or m.startswith(f"ember._kernels.{b}.")})


def test_rules_import_no_backend():
    files = list(_files("rules"))
    assert len(files) >= 3
    for path in files:
        assert _imports_backend(path, BACKENDS) == [], path



def test_cpu_and_meta_do_not_import_each_other():
    for path in _files("cpu"):
        assert _imports_backend(path, ("meta",)) == [], path
    for path in _files("meta"):
        assert _imports_backend(path, ("cpu",)) == [], path
