"""Random operators under vmap: the FuncTorchVmapMode kernels.

While a vmap is active FuncTorchVmapMode is in the thread's included keys (see
:mod:`.interpreter`), so a random op reaches these kernels even with no tensor argument
(``randn(3)``). Every other op falls through the key. Each kernel serves the innermost vmap
layer according to its ``randomness``:

* ``"error"``: PyTorch's error;
* ``"same"``: the op runs once with that layer hidden, so every sample sees the same values;
* ``"different"``: the op runs once over the whole batch -- a factory gets the batch size
  prepended to its size, an in-place op fills the batched value, an op with tensor inputs runs
  on them with the batch dim materialized -- with that layer hidden, so layers further out
  apply their own modes.
"""
from .._dispatch import dispatcher as _d
from .._dispatch.keys import K
from .batched_tensor import BatchedTensor, make_batched
from .batching import aten, front, materialize, pad, wrap
from .interpreter import current_vmap_layer, hidden


def _error():
    raise RuntimeError(
        "vmap: called random operation while in randomness error mode. Please either use the "
        "'same' or 'different' randomness flags on vmap or perform the randomness operation "
        "out of vmap")


def _batched(x, level):
    return x.__class__ is BatchedTensor and x._level == level


def _layer():
    layer = current_vmap_layer()
    if layer.randomness == "error":
        _error()
    return layer


def factory_kernel(entry, size_idx):
    call = entry.overload._call

    def random_factory(*args):
        layer = _layer()
        with hidden(layer):
            if layer.randomness == "same":
                return call(*args)
            new = list(args)
            new[size_idx] = (layer.batch_size,) + tuple(args[size_idx])
            out = call(*new)
        return make_batched(out, 0, layer.level)
    return random_factory


def randperm_kernel(entry):
    call = entry.overload._call

    def random_randperm(*args):
        layer = _layer()
        with hidden(layer):
            if layer.randomness == "same":
                return call(*args)
            outs = [call(*args) for _ in range(layer.batch_size)]
            out = aten.stack.default._call(outs, 0)
        return make_batched(out, 0, layer.level)
    return random_randperm


_LIKE_TO_FACTORY = {
    "aten::rand_like": ("rand", "default", 0), "aten::rand_like.generator": ("rand", "generator", 1),
    "aten::randn_like": ("randn", "default", 0),
    "aten::randn_like.generator": ("randn", "generator", 1),
    "aten::randint_like": ("randint", "default", 1),
    "aten::randint_like.low_dtype": ("randint", "low", 2),
}


def like_kernel(entry, target):
    """``rand_like(x)`` is ``rand(x.shape)`` with x's dtype and device: the factory's kernel
    then applies the mode."""
    name, overload, nscalars = target
    factory = getattr(getattr(aten, name), overload)._call
    n_args = len(entry.schema.arguments)
    names = [a.name for a in entry.schema.arguments]

    def random_like(self, *rest):
        scalars = rest[:nscalars]
        kw = dict(zip(names[1 + nscalars:], rest[nscalars:n_args - 1]))
        dtype = kw.get("dtype") or self._dtype
        device = kw.get("device") or self._device
        if overload == "generator":
            return factory(tuple(self._size), *scalars, dtype, None, device, None)
        return factory(*scalars, tuple(self._size), dtype, None, device, None)
    return random_like


def inplace_kernel(entry):
    call = entry.overload._call
    tpos = [i for i, a in enumerate(entry.schema.arguments) if a.base == "Tensor"]

    def random_inplace(self, *rest):
        layer = _layer()
        level = layer.level
        if _batched(self, level):
            if layer.randomness == "different":
                v, _ = front(self, level)
                new = [v] + list(rest)
                for i in tpos[1:]:  # bernoulli_(p) with a batched p
                    pv, pb = front(rest[i - 1], level)
                    new[i] = pad(pv, rest[i - 1].dim(), self.dim()) if pb else pv
                with hidden(layer):
                    call(*new)
                return self
            # one draw for a single sample (batched at the layers further out), then broadcast
            sample = aten.select.int._call(self._value, self._bdim, 0)
            with hidden(layer):
                tmp = aten.empty_like.default._call(sample, None, None, None, None, None)
                call(tmp, *rest)
            aten.copy_.default._call(self, tmp, False)
            return self
        if layer.randomness == "different":
            raise RuntimeError(
                "vmap: Cannot ask for different inplace randomness on an unbatched tensor. This "
                "will appear like same randomness. If this is necessary for your usage, please "
                "file an issue with functorch.")
        with hidden(layer):
            call(self, *rest)
        return self
    return random_inplace


def tensor_input_kernel(entry):
    call = entry.overload._call
    tpos = [i for i, a in enumerate(entry.schema.arguments)
            if a.base == "Tensor" and not a.is_list]
    multinomial = entry.schema.base_name == "multinomial"

    def random_with_inputs(*args):
        layer = _layer()
        level = layer.level
        batched = any(_batched(args[i], level) for i in tpos)
        if layer.randomness == "same":
            if batched:
                raise RuntimeError("Vmap does not currently support same randomness with a "
                                   "batched tensor input. Please file an issue with functorch")
            with hidden(layer):
                return call(*args)
        size = layer.batch_size
        ts = [args[i] for i in tpos if hasattr(args[i], "_keyset")]
        rank = max(t.dim() for t in ts)
        new = list(args)
        for i in tpos:
            if hasattr(args[i], "_keyset"):
                new[i] = pad(materialize(args[i], level, size), args[i].dim(), rank)
        with hidden(layer):
            if multinomial and rank == 2:
                x = new[0]
                new[0] = aten.reshape.default._call(x, (-1, x._size[-1]))
                out = call(*new)
                out = aten.reshape.default._call(out, x._size[:2] + out._size[-1:])
            else:
                out = call(*new)
        return wrap(out, level)
    return random_with_inputs


def dropout_kernel(feature, alpha):
    from .rules import dropout_impl

    def random_dropout(input, p, train):
        if train and p > 0:
            _layer()
        return dropout_impl(input, p, train, feature, alpha)
    return random_dropout


def out_kernel(entry):
    call = entry.overload._call

    def random_out(*args):
        layer = _layer()
        if layer.randomness == "different":
            raise RuntimeError(f"vmap: randomness='different' is not supported for "
                               f"{entry.qualname} (an out= random op); call the functional "
                               f"form instead")
        with hidden(layer):
            return call(*args)
    return random_out


_FACTORIES = {"aten::rand": 0, "aten::rand.generator": 0, "aten::randn": 0,
              "aten::randn.generator": 0, "aten::randint": 1, "aten::randint.generator": 1,
              "aten::randint.low": 2, "aten::randint.low_generator": 2,
              "aten::normal.float_float": 2}
_INPLACE = ["aten::normal_", "aten::uniform_", "aten::random_", "aten::random_.from",
            "aten::random_.to", "aten::exponential_", "aten::geometric_", "aten::cauchy_",
            "aten::log_normal_", "aten::bernoulli_.float", "aten::bernoulli_.Tensor"]
_FUNCTIONAL_OF_INPLACE = ["aten::uniform", "aten::normal_functional", "aten::random",
                          "aten::random.from", "aten::random.to", "aten::exponential",
                          "aten::geometric", "aten::cauchy", "aten::log_normal"]
_TENSOR_INPUT = ["aten::bernoulli", "aten::bernoulli.p", "aten::bernoulli.Tensor",
                 "aten::normal.Tensor_float", "aten::normal.float_Tensor",
                 "aten::normal.Tensor_Tensor", "aten::poisson", "aten::_standard_gamma",
                 "aten::binomial", "aten::_sample_dirichlet", "aten::multinomial",
                 "aten::native_dropout", "aten::randint_like.Tensor"]
_DROPOUT = {"aten::dropout": (False, False), "aten::feature_dropout": (True, False),
            "aten::alpha_dropout": (False, True), "aten::feature_alpha_dropout": (True, True)}

_installed = [False]


def install():
    if _installed[0]:
        return
    _installed[0] = True
    _d.register_fallback(K.FuncTorchVmapMode, _d.Kernel(_d.FALLTHROUGH, _d.PLAIN,
                                                        "fallthrough (not a random op)"))

    def reg(q, fn):
        entry = _d.get_entry(q)
        if entry is not None:
            entry.register(K.FuncTorchVmapMode, _d.Kernel(fn, _d.PLAIN, "vmap randomness"))
    for q, idx in _FACTORIES.items():
        entry = _d.get_entry(q)
        if entry is not None:
            reg(q, factory_kernel(entry, idx))
    for q in ("aten::randperm", "aten::randperm.generator"):
        entry = _d.get_entry(q)
        if entry is not None:
            reg(q, randperm_kernel(entry))
    for q, target in _LIKE_TO_FACTORY.items():
        entry = _d.get_entry(q)
        if entry is not None:
            reg(q, like_kernel(entry, target))
    for q in _INPLACE:
        entry = _d.get_entry(q)
        if entry is not None:
            reg(q, inplace_kernel(entry))
    # the functional random ops (functionalization's uniform, normal_functional, ...) are a
    # clone and the in-place op: under vmap they run as that, so the in-place kernels apply
    for q in _FUNCTIONAL_OF_INPLACE:
        entry = _d.get_entry(q)
        k = entry._kernel(K.CompositeExplicitAutograd) if entry is not None else None
        if k is not None:
            reg(q, k.fn)
    for q in _TENSOR_INPUT:
        entry = _d.get_entry(q)
        if entry is not None:
            reg(q, tensor_input_kernel(entry))
    for q, (feature, alpha) in _DROPOUT.items():
        reg(q, dropout_kernel(feature, alpha))
    for q, entry in list(_d._operators.items()):
        if entry.namespace == "aten" and "nondeterministic_seeded" in entry.tags and \
                not entry.has_kernel(K.FuncTorchVmapMode) and \
                any(a.is_write and a.kwarg_only for a in entry.schema.arguments):
            reg(q, out_kernel(entry))
