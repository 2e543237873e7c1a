"""``FlatParameter`` and ``FlatParamHandle``: the flat-parameter algorithm of FSDP1 (PyTorch's
``torch/distributed/fsdp/_flat_param.py``), on ember's collectives.

One FSDP unit's original parameters are flattened, in module order, into one 1-D tensor; its
numel is padded to a multiple of the shard group's size and rank ``r`` keeps the ``r``-th
equal slice as the ``FlatParameter`` (``NO_SHARD``: the whole, unpadded). Then, per unit:

* **unshard**: the shard (cast to ``param_dtype`` under mixed precision) is all-gathered into a
  padded full buffer; the module's original parameters become views of it
  (``_UnshardFlatParam`` joins the buffer to the autograd graph, so those views are ordinary
  non-leaf tensors and a linear layer saves them for backward as usual);
* **reshard** frees the full buffer's storage (``resize_(0)``, as PyTorch's
  ``_free_storage``); views saved for backward keep pointing into that storage, and the
  re-gather before backward refills it in place;
* **post-backward** (``_UnshardFlatParam.backward``, which runs once every gradient of the
  views has arrived): the full gradient, cast to ``reduce_dtype`` and pre-divided, is
  reduce-scattered (``NO_SHARD``: all-reduced; hybrid strategies then all-reduce the shard
  over the replica group), post-divided (PyTorch's pre/post divide factors, whose product is
  the data-parallel world size), cast back and accumulated into the flat parameter's
  ``.grad``. Inside ``no_sync()`` the full gradient is accumulated locally instead and joins
  the next synchronised reduction.

With ``use_orig_params=True`` the original parameters stay registered; outside forward and
backward they are views of the rank's slice of the flat shard (1-D, possibly empty), as are
their gradients, so an optimizer built on them updates the shard in place.
"""
import ember
import ember.distributed as dist

from ... import nn
from ...autograd import Function

__all__ = ["FlatParameter", "FlatParamHandle", "HandleShardingStrategy"]

FLAT_PARAM = "_flat_param"


class HandleShardingStrategy:
    FULL_SHARD = "FULL_SHARD"
    SHARD_GRAD_OP = "SHARD_GRAD_OP"
    NO_SHARD = "NO_SHARD"
    HYBRID_SHARD = "HYBRID_SHARD"
    _HYBRID_SHARD_ZERO2 = "_HYBRID_SHARD_ZERO2"


class FlatParameter(nn.Parameter):
    """The rank's shard of one FSDP unit's flattened parameters (padded; ``NO_SHARD``: all of
    them). The metadata (``_fqns``, ``_shapes``, ``_numels``, ``_param_infos``, sizes) says how
    the original parameters lie in it."""


def _gradient_divide_factors(world_size):
    """PyTorch's pre/post divide factors: ``pre * post == world_size``, ``pre`` the largest
    power of two with ``pre * pre`` not above ``world_size`` (keeps low-precision sums in
    range)."""
    factor = 1
    while world_size % factor == 0 and world_size / factor > factor:
        factor *= 2
    return float(factor), world_size / factor


class _UnshardFlatParam(Function):
    """Forward: the unit's padded full buffer, joined to the autograd graph with the flat
    parameter as input. Backward: the unit's post-backward (the full gradient reduced into the
    flat parameter's ``.grad``); nothing flows on to the flat parameter's own accumulator."""

    @staticmethod
    def forward(ctx, flat_param, handle):
        ctx.handle = handle
        return handle._full_for_autograd()

    @staticmethod
    def backward(ctx, grad):
        ctx.handle._post_backward(grad)
        return None, None


class FlatParamHandle:
    """One FSDP unit's flat parameter and the unshard / reshard / gradient-reduction steps."""

    def __init__(self, params, fully_sharded_module, device, sharding_strategy, offload_params,
                 mp_param_dtype, mp_reduce_dtype, keep_low_precision_grads, process_group,
                 use_orig_params, inter_node_group=None):
        self._fully_sharded_module = fully_sharded_module
        self.device = device
        self._sharding_strategy = sharding_strategy
        self._offload_params = offload_params
        self._use_orig_params = use_orig_params
        self._keep_low_precision_grads = keep_low_precision_grads
        self.process_group = process_group
        self._inter_node_group = inter_node_group
        self.rank = process_group.rank()
        self.world_size = process_group.size()
        dp_size = self.world_size * (inter_node_group.size() if inter_node_group else 1)
        self._gradient_predivide_factor, self._gradient_postdivide_factor = \
            _gradient_divide_factors(dp_size)
        self._init_flat_param(params, fully_sharded_module, use_orig_params)
        dtype = self.flat_param.dtype
        self._fwd_bwd_param_dtype = mp_param_dtype or dtype
        self._reduce_dtype = mp_reduce_dtype or self._fwd_bwd_param_dtype
        self._full = None            # the padded full buffer (storage freed while resharded)
        self._unsharded_grad = None  # no_sync()'s accumulated full gradient
        self._full_grad = None       # summon_full_params(with_grads=True)'s
        self._views_unsharded = False
        self._shard()

    # --- construction

    def _init_flat_param(self, params, module, use_orig_params):
        """Record where each original parameter lives (module, name, fqn) and flatten the
        distinct ones; a parameter shared by two modules appears once."""
        param_infos, shared_param_infos, seen = [], [], {}
        flat_params = []
        for submodule_name, submodule in _named_modules_of_unit(module):
            for param_name, param in list(submodule._parameters.items()):
                if param is None or id(param) not in params:
                    continue
                if id(param) in seen:
                    prim = param_infos[seen[id(param)]]
                    shared_param_infos.append((param_name, submodule, submodule_name,
                                               prim[0], prim[1], prim[2]))
                    continue
                seen[id(param)] = len(param_infos)
                param_infos.append((param_name, submodule, submodule_name))
                flat_params.append(param)
        if not flat_params:
            raise ValueError("Cannot construct a FlatParameter from an empty parameter list")
        dtype, requires_grad = flat_params[0].dtype, flat_params[0].requires_grad
        for p in flat_params:
            if p.dtype != dtype:
                raise ValueError("Must flatten tensors with uniform dtype but got "
                                 f"{dtype} and {p.dtype}")
            if not use_orig_params and p.requires_grad != requires_grad:
                raise ValueError("Must flatten tensors with uniform `requires_grad` when "
                                 "`use_orig_params=False`")
        requires_grad = any(p.requires_grad for p in flat_params)
        with ember.no_grad():
            flat = ember.cat([p.detach().reshape(-1) for p in flat_params])
        self.flat_param = FlatParameter(flat, requires_grad=requires_grad)
        fp = self.flat_param
        fp._param_infos = param_infos
        fp._shared_param_infos = shared_param_infos
        fp._params = flat_params if use_orig_params else None
        fp._shapes = [tuple(p.shape) for p in flat_params]
        fp._numels = [p.numel() for p in flat_params]
        fp._fqns = [f"{mn}.{pn}" if mn else pn for pn, _, mn in param_infos]
        fp._unpadded_unsharded_size = (flat.numel(),)
        fp._grad_views = [None] * len(flat_params)

    def _shard(self):
        """Keep the rank's slice of the (padded) flat parameter and, for
        ``use_orig_params``, point the original parameters at it."""
        fp = self.flat_param
        total = fp._unpadded_unsharded_size[0]
        if self.uses_sharded_strategy:
            shard = -(-total // self.world_size)
            start = self.rank * shard
            with ember.no_grad():
                local = ember.zeros(shard, dtype=fp.dtype, device=fp.device)
                n = max(0, min(total, start + shard) - start)
                if n:
                    local[:n].copy_(fp.detach()[start:start + n])
            fp._shard_numel_padded = shard - n
            fp.data = local
        else:
            shard, start = total, 0
            fp._shard_numel_padded = 0
        fp._padded_unsharded_size = (shard * self.world_size,)
        fp._sharded_size = (shard,)
        # per original parameter: (offset in the shard, numel there, offset in the parameter)
        infos, o = [], 0
        for numel in fp._numels:
            lo, hi = max(o, start), min(o + numel, start + shard)
            infos.append((lo - start, hi - lo, lo - o) if lo < hi else (0, 0, 0))
            o += numel
        fp._shard_param_infos = infos
        if self._offload_params:
            fp.data = fp.detach().cpu()
        if self._use_orig_params:
            self._use_sharded_views()

    @property
    def uses_sharded_strategy(self):
        return self._sharding_strategy != HandleShardingStrategy.NO_SHARD

    # --- unshard / reshard

    def needs_unshard(self):
        return self._full is None or self._full.untyped_storage().nbytes() == 0

    def unshard(self, full_precision=False):
        """Gather the full flat parameter (in ``param_dtype``, or the parameters' own dtype
        with ``full_precision``) into the padded buffer."""
        fp = self.flat_param
        dtype = fp.dtype if full_precision else self._fwd_bwd_param_dtype
        with ember.no_grad():
            shard = fp.detach()
            if shard.device != self.device:
                shard = shard.to(self.device)
            if shard.dtype != dtype:
                shard = shard.to(dtype)
            if not self.uses_sharded_strategy:
                # the flat parameter itself (a copy under mixed precision or offloading)
                self._full = shard
                return
            numel = fp._padded_unsharded_size[0]
            if self._full is None or self._full.dtype != dtype \
                    or self._full.device != self.device:
                self._full = ember.empty(numel, dtype=dtype, device=self.device)
            elif self._full.untyped_storage().nbytes() == 0:
                self._full.untyped_storage().resize_(numel * self._full.element_size())
            dist.all_gather_single(self._full, shard.contiguous(), group=self.process_group)

    def offload_full_to_cpu(self):
        self._full = self._full.cpu()

    def writeback(self):
        """Keep the rank's part of changes made to the full parameters."""
        fp = self.flat_param
        with ember.no_grad():
            full = self._unsharded_flat(self._full)
            if self.uses_sharded_strategy:
                fp.detach().copy_(self.shard_of_full(full))
            elif full.data_ptr() != fp.data_ptr():
                fp.detach().copy_(full)

    def reshard(self, free_unsharded=True):
        if free_unsharded and self.uses_sharded_strategy and self._full is not None \
                and self._full.untyped_storage().nbytes():
            self._full.untyped_storage().resize_(0)
        if not self.uses_sharded_strategy:
            self._full = None
        self._views_unsharded = False
        if self._use_orig_params:
            self._use_sharded_views()

    def _full_for_autograd(self):
        # a fresh alias with its own version counter: refilling the buffer before backward
        # must not count as modifying what forward saved
        return self._full.data

    # --- views

    def _unsharded_flat(self, full):
        return full[:self.flat_param._unpadded_unsharded_size[0]]

    def use_unsharded_views(self, as_params=False, detached=False, with_grads=False):
        """Point the modules' original parameter names at views of the full buffer: in
        forward, plain tensors joined to the autograd graph; ``detached``, plain tensors
        outside it; ``as_params``, ``nn.Parameter`` s sharing the buffer (for
        ``summon_full_params`` and state dicts)."""
        fp = self.flat_param
        grad_on = (ember.is_grad_enabled() and fp.requires_grad and not as_params
                   and not detached)
        if grad_on:
            full = _UnshardFlatParam.apply(fp, self)
        else:  # (NO_SHARD between iterations: the flat parameter itself)
            full = (self._full if self._full is not None else fp).detach()
        views = self.unflatten(self._unsharded_flat(full))
        grads = self.unflatten(self._full_grad) if with_grads and self._full_grad is not None \
            else [None] * len(views)
        for i, ((name, module, _), view) in enumerate(zip(fp._param_infos, views)):
            if as_params:
                if self._use_orig_params:
                    param = fp._params[i]
                    param.data = view
                    param._grad = grads[i] if param.requires_grad else None
                else:
                    param = nn.Parameter(view, requires_grad=fp.requires_grad)
                _setattr(module, name, param)
            else:
                _setattr(module, name, view)
        for name, module, _, prim_name, prim_module, _ in fp._shared_param_infos:
            _setattr(module, name, getattr(prim_module, prim_name))
        self._views_unsharded = not as_params and not detached
        self._full_grad = None

    def gather_full_grad(self):
        """``with_grads``: the full flat gradient for ``summon_full_params``."""
        grad = self._flat_grad_from_orig()
        self._full_grad = None if grad is None else self._unsharded_flat(
            self.gather_full_flat(grad)) if self.uses_sharded_strategy else grad

    def _use_sharded_views(self):
        """``use_orig_params``: each original parameter is its slice of the local shard (its
        full shape under ``NO_SHARD``), its gradient the same slice of the flat gradient."""
        fp = self.flat_param
        shard = fp.detach()
        for i, (name, module, _) in enumerate(fp._param_infos):
            param = fp._params[i]
            off, n, _ = fp._shard_param_infos[i]
            view = shard[off:off + n]
            if not self.uses_sharded_strategy:
                view = view.view(fp._shapes[i])
            param.data = view
            _setattr(module, name, param)
        for name, module, _, prim_name, prim_module, _ in fp._shared_param_infos:
            _setattr(module, name, getattr(prim_module, prim_name))
        self._use_sharded_grad_views()

    def _use_sharded_grad_views(self):
        fp = self.flat_param
        # the original parameters' gradients are the truth (zero_grad may have dropped them)
        fp._grad = self._flat_grad_from_orig()
        self._assign_grad_views()

    def _assign_grad_views(self):
        fp = self.flat_param
        grad = fp._grad
        for i, param in enumerate(fp._params):
            if grad is None or not param.requires_grad:
                param._grad = None
                continue
            off, n, _ = fp._shard_param_infos[i]
            view = grad[off:off + n]
            if not self.uses_sharded_strategy:
                view = view.view(fp._shapes[i])
            param._grad = view
        fp._grad_views = [p._grad for p in fp._params]

    def _flat_grad_from_orig(self):
        """``use_orig_params``: the flat gradient the original parameters' gradients describe
        (they may have been zeroed in place, set to None by ``zero_grad`` or replaced)."""
        fp = self.flat_param
        grads = [p._grad for p in fp._params]
        if all(g is None for g in grads):
            return None
        if fp._grad is not None and all(g is v for g, v in zip(grads, fp._grad_views)):
            return fp._grad
        with ember.no_grad():
            flat = ember.zeros(fp._sharded_size, dtype=fp.dtype, device=fp.device)
            for (off, n, _), g in zip(fp._shard_param_infos, grads):
                if g is not None and n:
                    flat[off:off + n].copy_(g.reshape(-1))
        return flat

    # --- backward

    def _post_backward(self, grad):
        """Reduce this unit's full gradient into the flat parameter's (sharded) ``.grad``."""
        fp = self.flat_param
        with ember.no_grad():
            if not self._fsdp_state._sync_gradients:
                if self._unsharded_grad is None:
                    self._unsharded_grad = grad.clone()
                else:
                    self._unsharded_grad += grad
                self.reshard()
                return
            if self._unsharded_grad is not None:
                grad = grad + self._unsharded_grad
                self._unsharded_grad = None
            grad = grad.to(self._reduce_dtype, copy=True).contiguous()
            if self._gradient_predivide_factor > 1:
                grad.div_(self._gradient_predivide_factor)
            if self.uses_sharded_strategy:
                out = ember.empty(fp._sharded_size, dtype=self._reduce_dtype, device=grad.device)
                dist.reduce_scatter_single(out, grad, group=self.process_group)
                if self._inter_node_group is not None and self._inter_node_group.size() > 1:
                    dist.all_reduce(out, group=self._inter_node_group)
            else:
                out = grad
                dist.all_reduce(out, group=self.process_group)
            if self._gradient_postdivide_factor > 1:
                out.div_(self._gradient_postdivide_factor)
            if not self._keep_low_precision_grads:
                out = out.to(fp.dtype)
            if self._offload_params:
                out = out.cpu()
            if self._use_orig_params:
                fp._grad = self._flat_grad_from_orig()
            if fp._grad is None:
                fp._grad = out
            else:
                fp._grad += out.to(fp._grad.dtype)
            if self._use_orig_params:
                self._assign_grad_views()
            self.reshard()

    # --- state

    def param_module_names(self):
        for name, _, module_name in self.flat_param._param_infos:
            yield name, module_name

    def unflatten(self, flat):
        """Views of a full, unpadded flat tensor with the original parameters' shapes."""
        fp = self.flat_param
        return [v.view(s) for v, s in zip(flat.split(fp._numels), fp._shapes)]

    def gather_full_flat(self, local):
        """The full unpadded flat tensor whose rank's slice is ``local`` (shard-shaped)."""
        fp = self.flat_param
        if not self.uses_sharded_strategy:
            return local
        with ember.no_grad():
            full = ember.empty(fp._padded_unsharded_size, dtype=local.dtype, device=local.device)
            dist.all_gather_single(full, local.contiguous(), group=self.process_group)
        return full[:fp._unpadded_unsharded_size[0]]

    def shard_of_full(self, full):
        """The rank's padded slice of a full unpadded flat tensor."""
        fp = self.flat_param
        if not self.uses_sharded_strategy:
            return full.clone()
        shard = fp._sharded_size[0]
        start = self.rank * shard
        n = shard - fp._shard_numel_padded
        out = ember.zeros(shard, dtype=full.dtype, device=full.device)
        if n:
            out[:n].copy_(full[start:start + n])
        return out


def _setattr(module, name, value):
    """Replace ``module.name`` (a parameter or a plain tensor) by ``value`` (PyTorch's
    ``_safe_setattr_tensor_or_param``)."""
    if hasattr(module, name):
        delattr(module, name)
    setattr(module, name, value)


def _named_modules_of_unit(module):
    """``module.named_modules()`` without the subtrees of nested FSDP units."""
    from .fully_sharded_data_parallel import FullyShardedDataParallel
    seen = set()

    def walk(name, m):
        if id(m) in seen:
            return
        seen.add(id(m))
        yield name, m
        for child_name, child in m._modules.items():
            if child is None or isinstance(child, FullyShardedDataParallel):
                continue
            yield from walk(f"{name}.{child_name}" if name else child_name, child)

    yield from walk("", module)
