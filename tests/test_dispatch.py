"""The dispatcher: keys and key sets, TLS, kernel-table rules (checked against PyTorch's own
tables), fallthroughs, boxed fallbacks, redispatch, the cache, Library scopes, the trace."""
import io
import itertools
import os
import re
import subprocess
import sys
import threading
import warnings

import pytest

import ember
from ember._C import (DispatchKey, DispatchKeySet, _ExcludeDispatchKeyGuard,
                      _IncludeDispatchKeyGuard, _dispatch_tls_local_include_set)
from ember._dispatch import dispatcher as _d
from ember.library import Library, fallthrough_kernel

_counter = itertools.count()


def fresh_ns():
    return f"ember_test{next(_counter)}"


def ones(*shape, device="cpu"):
    t = ember.empty(*shape, device=device)
    if device == "cpu":
        t._nd()[...] = 1
    return t


# -- keys -------------------------------------------------------------------------------------

def test_priority_order_matches_pytorch():
    order = [DispatchKey.PythonDispatcher, DispatchKey.PreDispatch, DispatchKey.PythonTLSSnapshot,
             DispatchKey.AutocastCUDA, DispatchKey.AutocastCPU, DispatchKey.AutogradCUDA,
             DispatchKey.AutogradCPU, DispatchKey.AutogradOther, DispatchKey.ADInplaceOrView,
             DispatchKey.Functionalize, DispatchKey.Python, DispatchKey.BackendSelect,
             DispatchKey.Meta, DispatchKey.CUDA, DispatchKey.CPU]
    assert order == sorted(order, reverse=True)
    ks = DispatchKeySet([DispatchKey.CPU, DispatchKey.AutogradCPU, DispatchKey.AutocastCPU])
    assert ks.highestPriorityTypeId() == DispatchKey.AutocastCPU
    assert ks.remove(DispatchKey.AutocastCPU).highestPriorityTypeId() == DispatchKey.AutogradCPU
    assert DispatchKeySet([DispatchKey.CPU, DispatchKey.Meta]).highestPriorityTypeId() == DispatchKey.Meta
    assert DispatchKeySet(0).highestPriorityTypeId() == DispatchKey.Undefined


def test_tensor_keysets_print_like_pytorch(torch):
    assert str(ones(2)._dispatch_key_set()) == str(torch._C._dispatch_keys(torch.ones(2)))
    m, tm = ember.empty(2, device="meta"), torch.empty(2, device="meta")
    assert str(m._dispatch_key_set()) == str(torch._C._dispatch_keys(tm))
    assert str(ember._C._dispatch_keys(m)) == str(torch._C._dispatch_keys(tm))


def test_tls_sets_and_guards(torch):
    assert str(_dispatch_tls_local_include_set()) == str(torch._C._dispatch_tls_local_include_set())
    with _IncludeDispatchKeyGuard(DispatchKey.Tracer):
        assert ember._C._dispatch_tls_is_dispatch_key_included("Tracer")
        seen = []
        th = threading.Thread(target=lambda: seen.append(
            ember._C._dispatch_tls_is_dispatch_key_included("Tracer")))
        th.start()
        th.join()
        assert seen == [False]  # thread-local
    assert not ember._C._dispatch_tls_is_dispatch_key_included("Tracer")
    with _ExcludeDispatchKeyGuard("CPU"):
        assert ember._C._dispatch_tls_is_dispatch_key_excluded("CPU")
    assert not ember._C._dispatch_tls_is_dispatch_key_excluded("CPU")


# -- the kernel table ---------------------------------------------------------------------------

def _tags(dump):
    out = {}
    for line in dump.splitlines():
        m = re.match(r"^(\w+): .*\[([a-z ]+)\]$", line)
        if m:
            out[m[1]] = m[2]
    return out


PATTERNS = {
    "cia_only": ["CompositeImplicitAutograd"],
    "cea_only": ["CompositeExplicitAutograd"],
    "cpu_only": ["CPU"],
    "cpu_and_cia": ["CPU", "CompositeImplicitAutograd"],
    "cpu_and_autograd": ["CPU", "Autograd"],
    "cpu_meta_cea": ["CPU", "Meta", "CompositeExplicitAutograd"],
}


@pytest.mark.parametrize("pattern", list(PATTERNS))
def test_table_rules_match_pytorch(torch, pattern):
    keys = PATTERNS[pattern]
    ns = fresh_ns()
    elib = Library(ns, "DEF")
    elib.define("f(Tensor x) -> Tensor")
    tlib = torch.library.Library(ns, "DEF")
    tlib.define("f(Tensor x) -> Tensor")
    for k in keys:
        elib.impl("f", lambda x: x, k)
        tlib.impl("f", lambda x: x, k)
    mine = _tags(ember._C._dispatch_dump_table(f"{ns}::f"))
    theirs = _tags(torch._C._dispatch_dump_table(f"{ns}::f"))
    for key in ["Undefined", "CPU", "Meta", "AutogradCPU", "AutogradMeta", "AutogradOther",
                "BackendSelect", "ADInplaceOrView", "AutocastCPU"]:
        if key == "Meta" and theirs.get(key) == "backend fallback":
            continue  # PyTorch's Meta fallback only raises; ember leaves the slot missing
        if key.startswith("Autograd") and theirs.get(key) == "backend fallback":
            assert mine.get(key) == "backend fallback", (key, mine.get(key))
            continue
        assert mine.get(key) == theirs.get(key), (pattern, key, mine.get(key), theirs.get(key))
    elib._destroy()


def test_dispatch_dump_lists_registrations():
    text = ember._C._dispatch_dump("aten::add.Tensor")
    assert text.startswith("name: aten::add.Tensor\nschema: aten::add.Tensor(Tensor self, Tensor "
                           "other, *, Scalar alpha=1) -> Tensor\n")
    assert "\nCPU: " in text and "\nMeta: " in text
    table = ember._C._dispatch_dump_table("aten::add.Tensor")
    assert "CPU: ember._kernels.cpu." in table and "[kernel]" in table
    assert "ADInplaceOrView: fallthrough [backend fallback]" in table


# -- calling -----------------------------------------------------------------------------------

def test_keyset_kernel_redispatches_and_fallthrough_skips():
    ns = fresh_ns()
    lib = Library(ns, "DEF")
    lib.define("g(Tensor x) -> Tensor")
    calls = []

    def cpu(x):
        calls.append("CPU")
        return x

    def tracer(ks, x):
        calls.append(("Tracer", ks.highestPriorityTypeId()))
        return ember.ops.__getattr__(ns).g.default.redispatch(ks.remove("Tracer"), x)

    lib.impl("g", cpu, "CPU")
    lib.impl("g", tracer, "Tracer", with_keyset=True)
    op = getattr(ember.ops, ns).g.default
    x = ones(2)
    assert op(x) is x and calls == ["CPU"]  # Tracer is not in the key set
    calls.clear()
    with _IncludeDispatchKeyGuard("Tracer"):
        op(x)
    assert calls == [("Tracer", DispatchKey.Tracer), "CPU"]
    calls.clear()
    lib.impl("g", fallthrough_kernel, "Tracer")
    with _IncludeDispatchKeyGuard("Tracer"):
        op(x)
    assert calls == ["CPU"]
    lib._destroy()
    with pytest.raises(AttributeError):
        getattr(ember.ops, ns).g


def test_boxed_fallback_sees_every_op_and_is_undone():
    seen = []

    def fallback(op, ks, *args, **kwargs):
        seen.append(str(op))
        return op.redispatch(ks.remove("Tracer"), *args, **kwargs)

    lib = Library("_", "IMPL", "Tracer")
    lib.fallback(fallback, with_keyset=True)
    a = ones(2)
    with _IncludeDispatchKeyGuard("Tracer"):
        b = a + a
    assert seen == ["aten.add.Tensor"]
    assert b._nd().tolist() == [2.0, 2.0]
    lib._destroy()
    with _IncludeDispatchKeyGuard("Tracer"):  # no Tracer kernel or fallback any more
        with pytest.raises(NotImplementedError, match="from the 'Tracer' backend"):
            a + a
    assert seen == ["aten.add.Tensor"]


def test_cache_holds_resolved_kernel():
    entry = _d.get_entry("aten::add.Tensor")
    a = ones(3)
    a + a
    ks = (a._keyset | ember._dispatch.tls.state.included) & ~ember._dispatch.tls.state.excluded
    assert ks in entry.cache


def test_library_override_of_aten_is_scoped():
    a = ones(2)
    lib = Library("aten", "IMPL")
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        lib.impl("add.Tensor", lambda self, other, alpha=1: self, "CPU")
    assert any("Overriding a previously registered kernel" in str(x.message) for x in w)
    assert (a + a) is a
    lib._destroy()
    r = a + a
    assert r is not a and r._nd().tolist() == [2.0, 2.0]


def test_def_namespace_once_and_impl_needs_def():
    ns = fresh_ns()
    lib = Library(ns, "DEF")
    with pytest.raises(RuntimeError, match="Only a single TORCH_LIBRARY"):
        Library(ns, "DEF")
    frag = Library(ns, "FRAGMENT")
    frag.define("h(Tensor x) -> Tensor")
    with pytest.raises(RuntimeError, match="does not exist"):
        frag.impl("nope", lambda x: x, "CPU")
    frag._destroy()
    lib._destroy()
    Library(ns, "DEF")._destroy()  # the namespace is free again


def test_missing_kernel_and_no_tensor_errors():
    ns = fresh_ns()
    lib = Library(ns, "DEF")
    lib.define("k(Tensor x) -> Tensor")
    lib.define("z(int n) -> Tensor")
    lib.impl("k", lambda x: x, "CPU")
    op = getattr(ember.ops, ns).k.default
    with pytest.raises(NotImplementedError, match=f"Could not run '{ns}::k' with arguments from the 'Meta' backend"):
        op(ember.empty(2, device="meta"))
    with pytest.raises(NotImplementedError, match="There were no tensor arguments"):
        getattr(ember.ops, ns).z.default(3)
    lib._destroy()


def test_mixed_devices_error(torch):
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        ones(2) + ember.empty(2, device="meta")
    with pytest.raises(RuntimeError):  # PyTorch 2.13 words the meta/cpu case differently
        torch.ones(2) + torch.empty(2, device="meta")


# -- OpOverload objects ----------------------------------------------------------------------------

def test_op_overload_objects(torch):
    ov = ember.ops.aten.add.Tensor
    tv = torch.ops.aten.add.Tensor
    assert repr(ov) == repr(tv) and str(ov) == str(tv) == "aten.add.Tensor"
    assert ov.__name__ == tv.__name__ == "add.Tensor"
    assert ov.__module__ == "ember._ops.aten"
    assert str(ov._schema) == str(tv._schema)
    assert ov.name() == "aten::add.Tensor"
    assert ov.overloadpacket is ember.ops.aten.add
    assert repr(ember.ops.aten.add) == repr(torch.ops.aten.add) and str(ember.ops.aten.add) == "aten.add"
    assert "Tensor" in ember.ops.aten.add.overloads()
    a = ones(2)
    assert ember.ops.aten.add(a, a, alpha=2)._nd().tolist() == [3.0, 3.0]
    assert ember.ops.aten.add.Tensor(a, other=a)._nd().tolist() == [2.0, 2.0]
    assert ember.ops.aten.empty.memory_format([2]).shape == (2,)
    assert ember.ops.aten.view.default.is_view
    with pytest.raises(AttributeError):
        ember.ops.aten.add.nope


def test_function_schema_and_parse_schema_like_pytorch(torch):
    """``_schema.name`` is the qualified name, as PyTorch's; ``torch._C.parse_schema`` parses
    with or without a namespace, and refuses a bare operator name with PyTorch's message.
    (Argument types stay schema strings: PyTorch's are TorchScript type objects.)"""
    def facts(schema):
        return (schema.name, schema.overload_name, str(schema),
                [(a.name, a.default_value, a.kwarg_only, a.N) for a in schema.arguments],
                len(schema.returns))
    for op in ("add.Tensor", "sum.dim_IntList", "max_pool2d.default", "native_layer_norm.default"):
        packet, ov = op.split(".")
        assert facts(getattr(getattr(ember.ops.aten, packet), ov)._schema) == \
            facts(getattr(getattr(torch.ops.aten, packet), ov)._schema)
    for text in ("aten::foo.out(Tensor self, *, int[2] k=[1, 2], Tensor(a!) out) -> Tensor(a!)",
                 "bar(Tensor x, float y=0.5, bool z=False) -> (Tensor, Tensor)"):
        assert facts(ember._C.parse_schema(text)) == facts(torch._C.parse_schema(text))
        assert facts(ember.parse_schema(text)) == facts(torch.parse_schema(text))
    assert isinstance(ember.ops.aten.add.Tensor._schema, ember.FunctionSchema)
    for lib in (ember, torch):
        with pytest.raises(RuntimeError, match="only the operator name was given"):
            lib._C.parse_schema("aten::foo")


# ember's own ops in the aten namespace, with why PyTorch has none
EMBER_ONLY = {
    "_rnn_layer": "one recurrent layer over a whole sequence (PyTorch's CPU runs LSTM through "
                  "oneDNN's mkldnn_rnn_layer and the other modes cell by cell)",
    "_rnn_layer_backward": "its backward",
}


def test_every_yaml_schema_is_pytorchs(torch):
    for qualname, entry in _d._operators.items():
        if not qualname.startswith("aten::"):
            continue
        ns, _, rest = qualname.partition("::")
        name, _, overload = rest.partition(".")
        if name in EMBER_ONLY:
            assert not hasattr(torch.ops.aten, name)
            continue
        packet = getattr(torch.ops.aten, name)
        assert str(entry.schema) == str(getattr(packet, overload or "default")._schema), qualname


# -- trace --------------------------------------------------------------------------------------

def test_dispatch_trace_prints_calls_and_redispatches():
    a = ones(2)
    buf = io.StringIO()
    ember._C._set_dispatch_trace(True, buf)
    try:
        a + a
        a.add_(a)
    finally:
        ember._C._set_dispatch_trace(False)
    lines = buf.getvalue().splitlines()
    assert lines[0].startswith("[call] op=[aten::add.Tensor], key=[")
    inplace = [l for l in lines if "aten::add_.Tensor" in l]
    assert inplace[0].startswith("[call] op=[aten::add_.Tensor], key=[")
    # the version bump layer runs as a redispatch below whatever ran first (autograd, once it exists)
    assert any(l.lstrip().startswith("[redispatch] op=[aten::add_.Tensor], key=[ADInplaceOrView]")
               or l == "[call] op=[aten::add_.Tensor], key=[ADInplaceOrView]" for l in inplace)
    assert any(l.startswith(" [redispatch]") for l in inplace)
    assert any(l.startswith("  ") for l in lines)  # nested calls are indented
    assert "aten::add.Tensor" in _d.get_entry("aten::add.Tensor").qualname
    b = a + a  # trace off: nothing printed, cache back in use
    assert buf.getvalue().splitlines() == lines


def test_observers_see_calls_and_redispatches_unless_calls_only():
    """An observer is told about every call and redispatch; one with ``calls_only`` (the
    profiler) about calls only, and a redispatch that only such observers watch runs unwrapped."""
    class Obs:
        def __init__(self):
            self.seen = []

        def enter(self, entry, key, label, args):
            self.seen.append(label)

        def exit(self, token):
            pass

    class CallsOnly(Obs):
        calls_only = True

    a = ones(2).requires_grad_()  # mul runs autograd's kernel, which redispatches
    mul = _d.get_entry("aten::mul.Tensor")
    for observers in ([Obs(), CallsOnly()], [CallsOnly()]):
        for o in observers:
            _d.add_observer(o)
        try:
            (a * 2).sum()
            wrapped = {getattr(c, "__name__", "") for c in mul.rcache.values()} & \
                {"observed", "observed_once"}
        finally:
            for o in observers:
                _d.remove_observer(o)
        assert observers[-1].seen == ["call", "call"]  # mul, sum
        if len(observers) == 2:
            assert "redispatch" in observers[0].seen and observers[0].seen.count("call") == 2
            assert wrapped
        else:
            assert not wrapped


def test_dispatch_trace_env_var():
    code = ("import ember\nt = ember.empty(2)\nt._nd()[...] = 1\nt + t\n")
    env = dict(os.environ, TORCH_SHOW_DISPATCH_TRACE="1")
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                       cwd=os.path.dirname(os.path.dirname(__file__)))
    assert r.returncode == 0, r.stderr
    assert "[call] op=[aten::add.Tensor], key=[" in r.stderr
