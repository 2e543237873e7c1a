"""``DispatchKey`` and ``DispatchKeySet``.

ember flattens PyTorch's (functionality x backend) key space into one bit per runtime key, ordered
so that a higher bit runs first: the winner of a key set is simply its highest set bit. Within each
per-backend group the backend order is PyTorch's (CPU < CUDA < PrivateUse1 < Meta), so e.g. a set
holding AutogradCPU and AutogradMeta picks AutogradMeta, as PyTorch's highest-backend rule does.
Alias keys (CompositeImplicitAutograd, Autograd, ...) exist only at registration time and have no bit.
"""
from enum import IntEnum

# Runtime keys, lowest priority (runs last) first. The position is the bit index.
_RUNTIME_ORDER = [
    # dense backends: where bytes are computed
    "CPU", "CUDA", "MPS", "PrivateUse1", "Meta",
    "SparseCPU", "SparseCUDA", "SparseCsrCPU", "SparseCsrCUDA", "QuantizedCPU", "QuantizedCUDA",
    "NestedTensorCPU", "NestedTensorCUDA",
    "BackendSelect",
    "Fake",
    "Python",
    "FuncTorchDynamicLayerBackMode",
    "Functionalize",
    "Conjugate", "Negative", "ZeroTensor",
    "ADInplaceOrView",
    "AutogradOther", "AutogradCPU", "AutogradCUDA", "AutogradMPS", "AutogradPrivateUse1",
    "AutogradMeta",
    "AutogradNestedTensor",
    "Tracer",
    "AutocastCPU", "AutocastXPU", "AutocastCUDA", "AutocastPrivateUse1",
    "FuncTorchBatched", "BatchedNestedTensor", "FuncTorchVmapMode", "Batched", "VmapMode",
    "FuncTorchGradWrapper", "DeferredInit",
    "PythonTLSSnapshot",
    "FuncTorchDynamicLayerFrontMode",
    "PreDispatch",
    "PythonDispatcher",
]
_ALIAS = [
    "Autograd", "CompositeImplicitAutograd", "CompositeImplicitAutogradNestedTensor",
    "CompositeExplicitAutograd", "CompositeExplicitAutogradNonFunctional",
    "FuncTorchBatchedDecomposition",
]

DispatchKey = IntEnum(
    "DispatchKey",
    [("Undefined", -1)] + [(n, i) for i, n in enumerate(_RUNTIME_ORDER)]
    + [(n, 100 + i) for i, n in enumerate(_ALIAS)],
    module=__name__,
)
DispatchKey.__doc__ = "A dispatch key; runtime keys' values are their bit index (higher runs first)."
DispatchKey.__repr__ = lambda self: f"DispatchKey.{self.name}"
DispatchKey.__str__ = lambda self: self.name

K = DispatchKey
NUM_RUNTIME_KEYS = len(_RUNTIME_ORDER)
FULL = (1 << NUM_RUNTIME_KEYS) - 1
# Old names PyTorch still accepts at registration.
_COMPAT = {"DefaultBackend": "CompositeExplicitAutograd", "Math": "CompositeImplicitAutograd",
           "Autocast": "AutocastCUDA"}


def bit(key):
    return 1 << key


# MPS has a key (so a tensor on device="mps" fails in the dispatcher with PyTorch's message, as
# in a PyTorch build without MPS) but no kernels.
BACKENDS = [K.CPU, K.CUDA, K.MPS, K.PrivateUse1, K.Meta]
BACKEND_BITS = sum(bit(k) for k in BACKENDS)
AUTOGRAD_OF = {K.CPU: K.AutogradCPU, K.CUDA: K.AutogradCUDA, K.MPS: K.AutogradMPS,
               K.PrivateUse1: K.AutogradPrivateUse1, K.Meta: K.AutogradMeta}
BACKEND_OF_AUTOGRAD = {v: k for k, v in AUTOGRAD_OF.items()}
AUTOCAST_OF = {K.CPU: K.AutocastCPU, K.CUDA: K.AutocastCUDA, K.PrivateUse1: K.AutocastPrivateUse1}
AUTOGRAD_KEYS = [K.AutogradOther, K.AutogradCPU, K.AutogradCUDA, K.AutogradMPS,
                 K.AutogradPrivateUse1, K.AutogradMeta, K.AutogradNestedTensor]
AUTOGRAD_BITS = sum(bit(k) for k in AUTOGRAD_KEYS)
AUTOCAST_KEYS = [K.AutocastCPU, K.AutocastXPU, K.AutocastCUDA, K.AutocastPrivateUse1]
AUTOCAST_BITS = sum(bit(k) for k in AUTOCAST_KEYS)
DEVICE_TO_BACKEND = {"cpu": K.CPU, "cuda": K.CUDA, "mps": K.MPS, "meta": K.Meta,
                     "privateuseone": K.PrivateUse1}


# A sparse COO tensor's backend key replaces its device's dense one (PyTorch's SparseCPU and
# SparseCUDA): its kernels (``ember/_kernels/sparse/``) see indices and values, not bytes.
# Sparse CSR tensors have SparseCsrCPU/SparseCsrCUDA likewise.
SPARSE_OF = {K.CPU: K.SparseCPU, K.CUDA: K.SparseCUDA}
SPARSE_CSR_OF = {K.CPU: K.SparseCsrCPU, K.CUDA: K.SparseCsrCUDA}
SPARSE_BITS = bit(K.SparseCPU) | bit(K.SparseCUDA)
SPARSE_CSR_BITS = bit(K.SparseCsrCPU) | bit(K.SparseCsrCUDA)


def sparse_keyset(device_type, inference=False, csr=False):
    """The key set of a sparse COO (or CSR) tensor on ``device_type`` (PyTorch's: SparseCPU,
    ADInplaceOrView, AutogradCPU, AutocastCPU for a COO tensor on the CPU)."""
    backend = DEVICE_TO_BACKEND[device_type]
    table = SPARSE_CSR_OF if csr else SPARSE_OF
    if backend not in table:
        raise NotImplementedError(f"ember has no sparse {'CSR' if csr else 'COO'} tensors on "
                                  f"{device_type}")
    return (tensor_keyset(device_type, inference) & ~bit(backend)) | bit(table[backend])


# A quantized tensor's backend key likewise replaces its device's (PyTorch's QuantizedCPU): its
# kernels (``ember/_kernels/quantized/``) know that its integers mean scale * (q - zero_point).
QUANTIZED_OF = {K.CPU: K.QuantizedCPU}
QUANTIZED_BITS = bit(K.QuantizedCPU) | bit(K.QuantizedCUDA)


def quantized_keyset(device_type, inference=False):
    """The key set of a quantized tensor on ``device_type`` (PyTorch's: QuantizedCPU,
    ADInplaceOrView, AutogradCPU, AutocastCPU on the CPU)."""
    backend = DEVICE_TO_BACKEND[device_type]
    if backend not in QUANTIZED_OF:
        raise NotImplementedError(f"ember has no quantized tensors on {device_type}")
    return (tensor_keyset(device_type, inference) & ~bit(backend)) | bit(QUANTIZED_OF[backend])


def below(key):
    """Mask of the keys strictly below ``key``: what a kernel at ``key`` redispatches to."""
    return bit(key) - 1


def tensor_keyset(device_type, inference=False):
    """The key set a fresh tensor carries (matches PyTorch 2.13's _dispatch_keys)."""
    backend = DEVICE_TO_BACKEND[device_type]
    ks = bit(backend)
    if backend in AUTOCAST_OF:
        ks |= bit(AUTOCAST_OF[backend])
    if not inference:
        ks |= bit(K.ADInplaceOrView) | bit(AUTOGRAD_OF[backend])
    return ks


# Alias keys -> the runtime keys they cover.
ALIAS_EXPANSION = {
    K.Autograd: AUTOGRAD_KEYS,
    # PyTorch's also covers the sparse keys: its composites are written for any layout.
    # ember's read strides and storages (views are CompositeExplicit here, backend kernels
    # there), so a sparse tensor reaching one gets PyTorch's "Could not run ... 'SparseCPU'
    # backend" instead, and sparse kernels are registered on the sparse keys (_kernels/sparse/).
    K.CompositeExplicitAutograd: BACKENDS + [K.QuantizedCPU, K.QuantizedCUDA],
    K.CompositeExplicitAutogradNonFunctional: BACKENDS,
    K.CompositeImplicitAutograd: BACKENDS + AUTOGRAD_KEYS,
    K.CompositeImplicitAutogradNestedTensor: [K.NestedTensorCPU, K.NestedTensorCUDA,
                                              K.AutogradNestedTensor],
    K.FuncTorchBatchedDecomposition: [K.FuncTorchBatched],
}


def parse_key(name):
    """A DispatchKey from its name (accepting PyTorch's legacy aliases), or a ValueError."""
    if isinstance(name, DispatchKey):
        return name
    if name == "":
        return K.CompositeImplicitAutograd
    name = _COMPAT.get(name, name)
    try:
        return DispatchKey[name]
    except KeyError:
        raise ValueError(f"Unknown dispatch key {name!r}") from None


def highest(ks):
    return DispatchKey(ks.bit_length() - 1) if ks else K.Undefined


class DispatchKeySet:
    """An immutable set of runtime dispatch keys (a bitset). ``highestPriorityTypeId`` picks the
    key that runs first; iteration and printing go from lowest to highest, as PyTorch's does."""

    __slots__ = ("repr_",)

    def __init__(self, keys=0):
        if isinstance(keys, DispatchKey):  # (an IntEnum: tested before the raw bitset)
            self.repr_ = bit(keys) if keys >= 0 else 0
        elif isinstance(keys, int):
            self.repr_ = keys
        elif isinstance(keys, str):
            try:
                self.repr_ = bit(DispatchKey[keys])
            except KeyError:
                raise RuntimeError(f"could not parse dispatch key: {keys}") from None
        else:
            self.repr_ = 0
            for k in keys:
                self.repr_ |= bit(parse_key(k))

    def has(self, key):
        return bool(self.repr_ >> parse_key(key) & 1)

    def add(self, key):
        return DispatchKeySet(self.repr_ | bit(parse_key(key)))

    def remove(self, key):
        return DispatchKeySet(self.repr_ & ~bit(parse_key(key)))

    def __or__(self, o):
        return DispatchKeySet(self.repr_ | o.repr_)

    def __and__(self, o):
        return DispatchKeySet(self.repr_ & o.repr_)

    def __sub__(self, o):
        return DispatchKeySet(self.repr_ & ~o.repr_)

    def __eq__(self, o):
        return isinstance(o, DispatchKeySet) and o.repr_ == self.repr_

    def __hash__(self):
        return hash(self.repr_)

    def __iter__(self):
        r = self.repr_
        i = 0
        while r:
            if r & 1:
                yield DispatchKey(i)
            r >>= 1
            i += 1

    def __len__(self):
        return bin(self.repr_).count("1")

    def __bool__(self):
        return bool(self.repr_)

    def empty(self):
        return not self.repr_

    def highestPriorityTypeId(self):
        return highest(self.repr_)

    def raw_repr(self):
        return self.repr_

    def __repr__(self):
        return f"DispatchKeySet({', '.join(k.name for k in self)})"
