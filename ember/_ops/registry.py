"""Loads ``native_functions.yaml`` into the dispatcher through :class:`ember.library.Library`.

For each entry: ``func`` is defined; it gets the kernels that registered themselves for it by
reference (``ember/_kernels/registration.py``: table rows register what they generate), and each
``dispatch`` key gets the named kernel, looked up in the kernel package of that key
(``ember._kernels.cpu``, ``.meta``, ``.composite``); an entry with neither is
CompositeImplicitAutograd with the kernel named after the op; ``autogen`` and ``generated`` add
out= (and in-place) variants whose kernels wrap the functional op (``generated`` ones are tagged
so, and get no Python binding, as PyTorch's own autogen'd variants). Two kernels every operator
gets without writing them (PyTorch generates the same):

* BackendSelect, for factory ops (a ``Device?`` argument and no Tensor argument): routes the call
  to the backend of the requested device;
* ADInplaceOrView, for ops that write to an argument (``Tensor(a!)``): bumps the version counter
  of each written tensor after the kernels below it ran.
"""
import importlib
import os
import pkgutil

import yaml

from .._dispatch import dispatcher as _d
from .._dispatch.keys import DEVICE_TO_BACKEND, SPARSE_CSR_OF, SPARSE_OF, K, below, bit
from .._dispatch.schema import parse_schema

YAML_PATH = os.path.join(os.path.dirname(__file__), "native_functions.yaml")
_YAML_DEBUG = "registered at ember/_ops/native_functions.yaml"

_KERNEL_PACKAGES = {
    K.CPU: "ember._kernels.cpu",
    K.Meta: "ember._kernels.meta",
    K.CUDA: "ember._kernels.cuda",
    K.SparseCPU: "ember._kernels.sparse",
    K.SparseCUDA: "ember._kernels.sparse",
    K.QuantizedCPU: "ember._kernels.quantized",
    K.CompositeExplicitAutograd: "ember._kernels.composite",
    K.CompositeExplicitAutogradNonFunctional: "ember._kernels.composite",
    K.CompositeImplicitAutograd: "ember._kernels.composite",
}


def kernel_index(package):
    """Every function a module of kernel package ``package`` defines or assigns at module level,
    by name (importing the modules registers their table kernels by reference). A name two
    modules give different functions is ambiguous: naming it in the yaml is an error."""
    index, ambiguous = {}, set()
    pkg = importlib.import_module(package)
    modules = [pkg] + [importlib.import_module(f"{package}.{info.name}")
                       for info in pkgutil.iter_modules(pkg.__path__)]
    for module in modules:
        for name, obj in vars(module).items():
            if not callable(obj) or isinstance(obj, type) or name.startswith("__"):
                continue
            home = getattr(obj, "__module__", None) or ""
            if home != package and not home.startswith(package + "."):
                continue  # imported from outside the package (NumPy, ember._core ...)
            if index.setdefault(name, obj) is not obj:
                ambiguous.add(name)
    return index, ambiguous


_INDEXES = {}


def _kernel_by_name(key, name):
    package = _KERNEL_PACKAGES[key]
    if package not in _INDEXES:
        _INDEXES[package] = kernel_index(package)
    index, ambiguous = _INDEXES[package]
    if name in ambiguous:
        raise RuntimeError(f"native_functions.yaml names kernel {name!r} for {key.name}, but "
                           f"several modules of {package} define a function of that name")
    try:
        return index[name]
    except KeyError:
        raise RuntimeError(f"native_functions.yaml names kernel {name!r} for {key.name}, but "
                           f"no module of {package} defines such a function") from None


# ---------------------------------------------------------------------------------------------
# Kernels generated for every operator.

from .._core.device import strided as _STRIDED  # noqa: E402
from .._core.factory_defaults import current_device as _default_device  # noqa: E402


def _backend_select_kernel(entry, dev_idx):
    """PyTorch's BackendSelect: a factory's backend from its ``device`` (and ``layout``: a
    sparse layout selects the device's sparse key)."""
    mask = below(K.BackendSelect)
    args_ = entry.schema.arguments
    tensor_idx = [i for i, a in enumerate(args_) if a.base == "Tensor"]
    layout_idx = next((i for i, a in enumerate(args_) if a.name == "layout"), None)

    def backend_select(ks, *args):
        dev = args[dev_idx]
        if dev is None:
            dev = _default_device()
        backend = DEVICE_TO_BACKEND[dev.type] if dev is not None else K.CPU
        layout = args[layout_idx] if layout_idx is not None else None
        if layout is not None and layout is not _STRIDED:
            backend = _sparse_backend(backend, layout)
        ks2 = bit(backend)
        for i in tensor_idx:
            ks2 |= getattr(args[i], "_keyset", 0)
        return entry.redispatch((ks | ks2) & mask, *args)
    return backend_select


def _sparse_backend(backend, layout):
    table = {"sparse_coo": SPARSE_OF, "sparse_csr": SPARSE_CSR_OF, "sparse_csc": SPARSE_CSR_OF,
             "sparse_bsr": SPARSE_CSR_OF, "sparse_bsc": SPARSE_CSR_OF}.get(layout._name)
    if table is None or backend not in table:
        raise NotImplementedError(f"ember has no {layout} tensors on this device")
    return table[backend]


def _inplace_or_view_kernel(entry):
    mask = below(K.ADInplaceOrView)
    written = [i for i, a in enumerate(entry.schema.arguments) if a.is_write]
    redispatch = entry.redispatch

    def ad_inplace_or_view(ks, *args):
        out = redispatch(ks & mask, *args)
        for i in written:
            a = args[i]
            if isinstance(a, (list, tuple)):
                for t in a:
                    t._bump_version()
            else:
                a._bump_version()
        return out
    return ad_inplace_or_view


def _generated_kernels(entry):
    schema = entry.schema
    names = [a.name for a in schema.arguments]
    has_tensor = any(a.base == "Tensor" for a in schema.arguments)
    name = schema.base_name
    # a factory: a Device argument named device (an `int device` of a custom op is not one)
    if ("device" in names and schema.arguments[names.index("device")].base == "Device"
            and not has_tensor and not name.endswith("_like") and not name.startswith("new_")):
        dev_idx = names.index("device")
        entry.register(K.BackendSelect, _d.Kernel(_backend_select_kernel(entry, dev_idx), _d.KEYSET,
                                                  "generated BackendSelect kernel"))
    if schema.is_mutable:
        entry.register(K.ADInplaceOrView, _d.Kernel(_inplace_or_view_kernel(entry), _d.KEYSET,
                                                    "generated ADInplaceOrView kernel"))


# ---------------------------------------------------------------------------------------------
# autogen: out= and in-place variants wrapping the functional op.

def out_schema(functional_schema_text, overload="out"):
    """The out= schema PyTorch's autogen derives from a functional schema."""
    fs = parse_schema(functional_schema_text)
    head, _, rest = functional_schema_text.rpartition(" -> ")[0].partition("(")
    base = fs.base_name
    args_text = rest[: rest.rindex(")")]
    star = "" if any(a.kwarg_only for a in fs.arguments) else "*, "
    if len(fs.returns) == 1:
        outs = "Tensor(a!) out"
        ret = "Tensor(a!)"
    else:
        letters = "abcdefgh"
        names = [r.name or f"out{i}" for i, r in enumerate(fs.returns)]
        outs = ", ".join(f"Tensor({letters[i]}!) {n}" for i, n in enumerate(names))
        # returns stay unnamed when the functional's are (_unique2.out: -> (Tensor(a!), ...))
        ret = "(" + ", ".join(f"Tensor({letters[i]}!)" + (f" {r.name}" if r.name else "")
                              for i, r in enumerate(fs.returns)) + ")"
    sep = ", " if args_text.strip() else ""
    return f"{base}.{overload}({args_text}{sep}{star}{outs}) -> {ret}"


def _load_entries():
    with open(YAML_PATH) as f:
        loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
        return yaml.load(f, Loader=loader) or []


# ops declared with ``category_override: factory`` (linspace.Tensor_Tensor ...): factories though
# they take tensors, so their binding takes requires_grad= and their autograd kernel never records
FACTORY_CATEGORY = set()


def load(lib):
    """Register every native function with ``lib`` (the aten DEF library)."""
    from . import bindings
    from .._kernels import generic
    lib_impl = lib.impl
    kernels = []  # (op name, its dispatch: section), installed once every op is defined
    for e in _load_entries():
        func = e["func"]
        tags = e.get("tags", ())
        if isinstance(tags, str):
            tags = [t.strip() for t in tags.split(",")]
        name = lib.define(func, tags=tags, _debug=_YAML_DEBUG)
        variants = [v.strip() for v in e.get("variants", "function").split(",")]
        pymod = e.get("python_module")
        bindings.declare(name, variants, e.get("python", True), pymod, tags)
        if e.get("device_check") == "NoCheck":  # the op moves data between devices itself
            _d.get_entry(f"{lib.ns}::{name}").device_check = False
        kernels.append((name, e.get("dispatch")))
        if e.get("category_override") == "factory":
            FACTORY_CATEGORY.add(f"{lib.ns}::{name}")
        generated = _as_list(e.get("generated"))
        for auto in _as_list(e.get("autogen")) + generated:
            # "name.overload", or a whole out= schema where PyTorch names the out argument
            # otherwise ("... *, Tensor(a!) grad_input) -> Tensor(a!)")
            auto_tags = list(tags) + ["generated"] if auto in generated else tags
            explicit = "(" in auto
            base, _, overload = auto[: auto.index("(")].partition(".") if explicit else auto.partition(".")
            if explicit or overload.lower().startswith("out") or "_out" in overload \
                    or "values" in overload:  # xlogy.OutTensor, sort.values
                sch = auto if explicit else out_schema(func, overload)
                oname = lib.define(sch, tags=auto_tags,
                                   _debug=_YAML_DEBUG + f" (autogen from {name})")
                bindings.declare(oname, [], e.get("python", True), pymod, auto_tags)
                lib_impl(oname, generic.out_wrapper(name, oname, "pointwise" in tags),
                         "CompositeExplicitAutograd", _kind=_d.PLAIN,
                         _debug=f"autogen out= wrapper of {name}")
                # (a backend whose kernel ATen writes by hand, as QuantizedCPU's
                # leaky_relu.out, registers it by reference)
                kernels.append((oname, {}))
            elif base.endswith("_"):
                sch = inplace_schema(func, auto)
                iname = lib.define(sch, tags=list(auto_tags) + ["inplace"],
                                   _debug=_YAML_DEBUG + f" (autogen from {name})")
                # autogen'd in-place variants are methods, as PyTorch declares them
                bindings.declare(iname, [v for v in variants if v == "method"], e.get("python", True),
                                 pymod, auto_tags)
                lib_impl(iname, generic.inplace_wrapper(name, "pointwise" in tags),
                         "CompositeExplicitAutograd",
                         _kind=_d.PLAIN, _debug=f"autogen in-place wrapper of {name}")
            else:
                raise RuntimeError(f"autogen {auto!r} of {func!r}: only out= and in-place variants")
    _install_kernels(lib, kernels)


def _install_kernels(lib, kernels):
    """Each op's kernels: those registered by reference, then those its ``dispatch:`` names."""
    from .._kernels import registration
    # the ops ATen has no float8 CPU kernel for raise as there, checked in front of the kernel
    from .._kernels.rules import float8 as _float8
    # Importing the kernel modules runs their tables, which register kernels by reference
    # (module-level code there may look up ``ops.aten``, so every op is defined by now).
    for package in sorted(set(_KERNEL_PACKAGES.values()) - {"ember._kernels.cuda"}):
        _INDEXES[package] = kernel_index(package)
    lib_impl = lib.impl
    for name, dispatch in kernels:
        own = registration.kernels_of(name)
        if dispatch is None and not own:
            base, _, overload = name.partition(".")
            kname = base + (f"_{overload}" if overload else "")
            dispatch = {"CompositeImplicitAutograd": kname}
        for keys, kname in (dispatch or {}).items():
            for key in keys.split(","):
                key = K[key.strip()]
                if key.name in own:
                    raise RuntimeError(f"aten::{name}: native_functions.yaml names {kname!r} for "
                                       f"{key.name}, and {own[key.name]!r} registered itself too")
                fn = _kernel_by_name(key, kname)
                if key is K.CPU:
                    fn = _float8.gate(name, fn)
                lib_impl(name, fn, key.name, _kind=_d.PLAIN,
                         _debug=f"{_KERNEL_PACKAGES[key]}.{kname}")
        for key_name, fn in own.items():  # (gated as they registered: registration.py)
            lib_impl(name, fn, key_name, _kind=_d.PLAIN,
                     _debug=f"{fn.__module__}.{fn.__qualname__} (registered by reference)")
    stray = sorted(set(registration.KERNELS) - {name for name, _ in kernels})
    if stray:
        raise RuntimeError(f"kernels registered for operators native_functions.yaml does not "
                           f"define: {stray}")


def inplace_schema(functional_schema_text, inplace_name):
    head, _, rest = functional_schema_text.partition("(")
    args_text = rest[: rest.rindex(")")]
    args_text = args_text.replace("Tensor self", "Tensor(a!) self", 1)
    return f"{inplace_name}({args_text}) -> Tensor(a!)"


def _as_list(v):
    if v is None:
        return []
    if isinstance(v, str):
        return [v.strip()] if "(" in v else [x.strip() for x in v.split(",")]
    return list(v)


# Keys that every op skips unless it registers a kernel there (PyTorch 2.13's defaults). The
# Autograd keys are not among them: ember.autograd registers per-op kernels generated from
# derivatives.yaml plus a fallback for every other op (see install()).
DEFAULT_FALLTHROUGH_KEYS = [K.BackendSelect, K.ADInplaceOrView, K.AutocastCPU, K.AutocastXPU,
                            K.AutocastCUDA, K.AutocastPrivateUse1]


def install():
    """Called once at import: default fallthroughs, the generated-kernel hook, the yaml, then
    the autograd kernels and the math bits' (conjugate, negative) kernels."""
    from ..library import Library, _entry_setup_hooks, fallthrough_kernel
    _entry_setup_hooks.append(_generated_kernels)
    lib = Library("aten", "DEF")
    for key in DEFAULT_FALLTHROUGH_KEYS:
        lib.fallback(fallthrough_kernel, key.name)
    load(lib)
    from ..autograd import derivatives
    derivatives.install(lib)
    from .._kernels import math_bits
    math_bits.install(lib)  # the Conjugate and Negative keys
    return lib
