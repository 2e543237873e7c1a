"""``DistributedDataParallel``: PyTorch's algorithm (``torch/nn/parallel/distributed.py`` and the
C++ ``Reducer``) in Python.

* construction: every rank checks it holds the same parameter shapes, then takes rank 0's
  parameters and buffers (one coalesced broadcast per dtype);
* gradients live in flat buckets, parameters assigned in reverse registration order (roughly
  the order backward produces them): the first bucket up to 1 MiB, the others ``bucket_cap_mb``;
* a hook after each parameter's gradient accumulation copies it into its bucket; a bucket whose
  gradients are all there is all-reduced asynchronously (buckets launch in index order, the same
  on every rank, as MPI requires) while backward goes on;
* when the last bucket has launched, a callback at the end of backward
  (``Variable._execution_engine.queue_callback``) waits for the reductions and writes the averaged
  gradients back into ``.grad``;
* after the first iteration the buckets are rebuilt in the order the gradients actually arrived
  (rank 0's order, so that every rank agrees);
* under ``join()`` (``ember.distributed.algorithms.join``) a rank that ran out of inputs shadows
  the others' iterations: the buffer broadcast, the backward-sync flag, one all-reduce of zeros
  per bucket (and of the used-parameter map, the bucket rebuild), and at the end every rank takes
  the model of the last rank to join.

Beyond PyTorch: when a parameter got no gradient the error names it (pytorch#43259).
"""
from contextlib import contextmanager

import ember
import ember.distributed as dist
from ember.distributed.algorithms.join import Join, Joinable, JoinHook
from ember.distributed.utils import _sync_params_and_buffers, _verify_param_shape_across_processes

from ..modules.module import Module

__all__ = ["DistributedDataParallel"]

_MiB = 1024 * 1024
# parameters and buffers are broadcast in chunks of this size (PyTorch's broadcast_bucket_size)
_DEFAULT_BROADCAST_BUCKET_BYTES = 250 * _MiB


def _bucket_assignment(params, order, limits):
    """Indices of ``params`` (taken in ``order``) grouped into buckets per dtype; the ``k``-th
    bucket of a dtype closes once it reaches ``limits[min(k, len(limits)-1)]`` bytes
    (PyTorch's ``compute_bucket_assignment_by_size``)."""
    open_, counts, done = {}, {}, []
    for i in order:
        p = params[i]
        key = p.dtype
        b = open_.setdefault(key, [[], 0])
        b[0].append(i)
        b[1] += p.numel() * p.element_size()
        limit = limits[min(counts.get(key, 0), len(limits) - 1)]
        if b[1] >= limit:
            done.append(b[0])
            counts[key] = counts.get(key, 0) + 1
            del open_[key]
    done.extend(b[0] for b in open_.values() if b[0])
    return done


class GradBucket:
    """What a comm hook gets: one bucket's flat gradient buffer and its parameters."""

    def __init__(self, index, buffer, params, offsets, is_last):
        self._index, self._buffer, self._params = index, buffer, params
        self._offsets, self._is_last = offsets, is_last

    def index(self):
        return self._index

    def buffer(self):
        return self._buffer

    def set_buffer(self, buffer):
        self._buffer.copy_(buffer)

    def gradients(self):
        return [self._buffer[o:o + p.numel()].view(p.shape)
                for p, o in zip(self._params, self._offsets)]

    def parameters(self):
        return list(self._params)

    def is_last(self):
        return self._is_last


class _Bucket:
    def __init__(self, index, params, param_idx):
        self.index = index
        self.param_idx = param_idx
        self.params = params
        self.offsets, n = [], 0
        for p in params:
            self.offsets.append(n)
            n += p.numel()
        self.buffer = ember.zeros(n, dtype=params[0].dtype, device=params[0].device)
        self.views = [self.buffer[o:o + p.numel()].view(p.shape)
                      for p, o in zip(params, self.offsets)]
        self.pending = len(params)
        self.work = None  # Work or Future of the running reduction


class _DDPJoinHook(JoinHook):
    def __init__(self, ddp, divide_by_initial_world_size):
        if not isinstance(ddp, DistributedDataParallel):
            raise AssertionError(f"DDP join hook requires passing in a DistributedDataParallel "
                                 f"instance as the state, got {type(ddp).__name__}")
        self.ddp = ddp
        self.ddp._divide_by_initial_world_size = divide_by_initial_world_size
        super().__init__()

    def main_hook(self):
        """Shadow one iteration of the ranks still running: their forward's buffer broadcast and
        backward-sync flag, and (if they sync) their backward's all-reduces."""
        ddp = self.ddp
        if ddp._will_sync_module_buffers():
            ddp._broadcast_coalesced(list(ddp.module.buffers()),
                                     src=ddp._find_common_rank(ddp.process_group.rank(), False))
        should_sync_backwards = ddp._check_global_requires_backward_grad_sync(
            is_joined_rank=True)
        ddp.require_forward_param_sync = should_sync_backwards
        if not should_sync_backwards:
            return
        ddp._match_all_reduce_for_bwd_pass()

    def post_hook(self, is_last_joiner):
        """Every rank takes the model of (the highest rank among) the last to join."""
        self.ddp._sync_final_model(is_last_joiner)


class DistributedDataParallel(Module, Joinable):
    """Data parallelism over processes: wrap the model, run forward/backward as usual, and each
    backward leaves the gradients averaged over the ranks."""

    def __init__(self, module, device_ids=None, output_device=None, dim=0, broadcast_buffers=True,
                 init_sync=True, process_group=None, bucket_cap_mb=None,
                 find_unused_parameters=False, check_reduction=False,
                 gradient_as_bucket_view=False, static_graph=False,
                 delay_all_reduce_named_params=None, param_to_hook_all_reduce=None,
                 mixed_precision=None, device_mesh=None, skip_all_reduce_unused_params=False):
        super().__init__()
        Joinable.__init__(self)
        if process_group is None:
            process_group = dist.distributed_c10d._get_default_group()
        self.module = module
        self.process_group = process_group
        self.device_ids = device_ids
        self.output_device = output_device
        self.dim = dim
        self.broadcast_buffers = broadcast_buffers
        self.find_unused_parameters = find_unused_parameters
        self.gradient_as_bucket_view = gradient_as_bucket_view
        self.static_graph = static_graph
        self.require_backward_grad_sync = True
        self.require_forward_param_sync = True
        self.bucket_bytes_cap = int((25 if bucket_cap_mb is None else bucket_cap_mb) * _MiB)
        self._named = [(n, p) for n, p in module.named_parameters() if p.requires_grad]
        if not self._named:
            raise RuntimeError("DistributedDataParallel is not needed when a module doesn't have "
                               "any parameter that requires a gradient.")
        self._params = [p for _, p in self._named]
        self._names = [n for n, _ in self._named]
        self._index = {id(p): i for i, p in enumerate(self._params)}
        self._comm_hook = None
        self._comm_state = None
        self._divide_by_initial_world_size = True
        self._join_works = []  # join's async all-reduces of this iteration (MPI owns buffers)
        self._verify_param_shapes()
        if init_sync:
            self._broadcast_coalesced(self._params + [b for b in module.buffers()])
        # reverse registration order, first bucket 1 MiB (PyTorch's initial assignment)
        self._build_buckets(list(reversed(range(len(self._params)))))
        self._rebuilt = False
        self._ready_order = []
        self._expect_hooks = False
        self._require_finalize = False
        self._unused = []
        self._static_unused = None
        self._hooks = [p.register_post_accumulate_grad_hook(self._make_hook(i))
                       for i, p in enumerate(self._params)]

    # --- construction

    def _verify_param_shapes(self):
        _verify_param_shape_across_processes(self.process_group, self._params)

    def _broadcast_coalesced(self, tensors, src=0):
        """Rank ``src`` (of the group)'s values of ``tensors``, in coalesced broadcasts."""
        _sync_params_and_buffers(self.process_group, tensors, _DEFAULT_BROADCAST_BUCKET_BYTES,
                                 src)

    def _build_buckets(self, order):
        groups = _bucket_assignment(self._params, order,
                                    [dist._DEFAULT_FIRST_BUCKET_BYTES, self.bucket_bytes_cap])
        self._buckets = [_Bucket(k, [self._params[i] for i in g], g)
                         for k, g in enumerate(groups)]
        self._where = {}
        for b in self._buckets:
            for j, i in enumerate(b.param_idx):
                self._where[i] = (b, j)
        if self.gradient_as_bucket_view:
            with ember.no_grad():
                for b in self._buckets:
                    for p, v in zip(b.params, b.views):
                        if p.grad is not None:
                            v.copy_(p.grad)
                        p.grad = v

    def _rebuild_buckets(self):
        """Buckets in the order gradients arrived during the first iteration, rank 0's order."""
        order = [list(self._ready_order)]
        dist.broadcast_object_list(order, src=self.process_group.global_ranks[0],
                                   group=self.process_group)
        order = order[0]
        if sorted(order) == list(range(len(self._params))):
            self._build_buckets(order)
        self._rebuilt = True

    # --- forward

    def forward(self, *inputs, **kwargs):
        if self._require_finalize:
            self._unfinished_reduction_error()
        grad_on = ember.is_grad_enabled()
        self._wait_join_works()
        work = Join.notify_join_context(self)
        if work:
            self._join_works.append(work)
        if self._will_sync_module_buffers():
            # under join rank 0 may have joined with stale buffers: the highest running rank's
            src = self._find_common_rank(self.process_group.rank(), True) \
                if self._join_config.enable else 0
            self._broadcast_coalesced(list(self.module.buffers()), src=src)
        if self._join_config.enable:
            self._check_global_requires_backward_grad_sync(is_joined_rank=False)
        out = self.module(*inputs, **kwargs)
        # a forward without gradient sync skips the next forward's buffer broadcast (PyTorch's
        # rule, which a joined rank's shadow of that broadcast follows)
        self.require_forward_param_sync = grad_on and self.require_backward_grad_sync
        if grad_on and self.require_backward_grad_sync:
            self._prepare_for_backward(out)
        else:
            self._expect_hooks = False
        return out

    def _prepare_for_backward(self, out):
        self._expect_hooks = True
        self._require_finalize = True
        self._next_bucket = 0
        self._launched_finalize = False
        self._received = [False] * len(self._params)
        self._local_used = [False] * len(self._params)
        for b in self._buckets:
            b.pending = len(b.params)
            b.work = None
        self._unused = []
        if self.find_unused_parameters or (self.static_graph and not self._rebuilt):
            if self.static_graph and self._static_unused is not None:
                self._unused = list(self._static_unused)
            else:
                self._unused = self._find_unused(out)
                if self.static_graph:
                    self._static_unused = list(self._unused)

    def _find_unused(self, out):
        """Parameters the outputs' graph does not reach (PyTorch walks the autograd graph)."""
        from ...autograd.graph import AccumulateGrad
        seen, stack, reached = set(), [], set()
        for t in _tensors_in(out):
            if t.grad_fn is not None:
                stack.append(t.grad_fn)
            elif t.requires_grad and id(t) in self._index:
                reached.add(self._index[id(t)])
        while stack:
            n = stack.pop()
            if id(n) in seen:
                continue
            seen.add(id(n))
            if isinstance(n, AccumulateGrad):
                i = self._index.get(id(n.variable))
                if i is not None:
                    reached.add(i)
            for nx, _ in n._next:
                if nx is not None:
                    stack.append(nx)
        return [i for i in range(len(self._params)) if i not in reached]

    # --- backward

    def _make_hook(self, i):
        def hook(param):
            if self._expect_hooks:
                if self._unused:
                    unused, self._unused = self._unused, []
                    for j in unused:  # locally unused: zeros take part in the average
                        self._mark_ready(j, used=False)
                self._mark_ready(i, used=True)
        return hook

    def _mark_ready(self, i, used):
        if self._received[i]:
            raise RuntimeError(f"Expected to mark a variable ready only once. Parameter "
                               f"{self._names[i]} (index {i}) got its gradient twice in one "
                               f"backward pass (a module used in a loop, or reentrant "
                               f"checkpointing); try static_graph=True.")
        self._received[i] = True
        self._local_used[i] = used
        if not self._rebuilt:
            self._ready_order.append(i)
        b, j = self._where[i]
        p = self._params[i]
        with ember.no_grad():
            if not used or p.grad is None:
                b.views[j].zero_()
            elif not (self.gradient_as_bucket_view and p.grad is b.views[j]):
                b.views[j].copy_(p.grad)
        b.pending -= 1
        if b.pending == 0:
            self._launch_ready_buckets()

    def _launch_ready_buckets(self):
        while self._next_bucket < len(self._buckets) and \
                self._buckets[self._next_bucket].pending == 0:
            b = self._buckets[self._next_bucket]
            if self._comm_hook is not None:
                gb = GradBucket(b.index, b.buffer, b.params, b.offsets,
                                b.index == len(self._buckets) - 1)
                b.work = self._comm_hook(self._comm_state, gb)
            else:
                with ember.no_grad():
                    b.buffer.div_(self._div_factor())
                b.work = dist.distributed_c10d._all_reduce_work(
                    self.process_group, b.buffer, "SUM", name="DDP bucket all_reduce")
            self._next_bucket += 1
        if self._next_bucket == len(self._buckets) and not self._launched_finalize:
            self._launched_finalize = True
            from ...autograd.variable import Variable
            Variable._execution_engine.queue_callback(self._finalize_backward)

    def _div_factor(self):
        """What the default reduction divides by: the world size, or under
        ``join(divide_by_initial_world_size=False)`` the number of ranks still running (this
        iteration's join all-reduce)."""
        if self._join_config.enable and not self._divide_by_initial_world_size and \
                self._join_config.is_first_joinable and self._join_works:
            work = self._join_works[0]
            work.wait()
            return int(work.result()[0].item())
        return self.process_group.size()

    def _finalize_backward(self):
        self._expect_hooks = False
        globally_used = None
        if self.find_unused_parameters or self.static_graph:
            # a parameter no rank used keeps grad None (PyTorch's local_used_map all-reduce)
            used = ember.tensor([1 if u else 0 for u in self._local_used], dtype=ember.int32,
                                device=self._buckets[0].buffer.device)
            dist.distributed_c10d._all_reduce_work(self.process_group, used, "MAX").wait()
            globally_used = used.tolist()
        with ember.no_grad():
            for b in self._buckets:
                w = b.work
                if self._comm_hook is not None:
                    result = w.wait()
                    if result is not b.buffer:
                        b.buffer.copy_(result)
                else:
                    w.wait()
                for j, (p, i) in enumerate(zip(b.params, b.param_idx)):
                    if globally_used is not None and not globally_used[i]:
                        continue
                    v = b.views[j]
                    if self.gradient_as_bucket_view:
                        if p.grad is not v:
                            p.grad = v
                    elif p.grad is None:
                        p.grad = v.clone()
                    else:
                        p.grad.copy_(v)
                b.work = None
        self._require_finalize = False
        if not self._rebuilt and not self.find_unused_parameters:
            self._rebuild_buckets()
        self._rebuilt = True
        self._wait_join_works()

    def _unfinished_reduction_error(self):
        missing = [i for i in range(len(self._params)) if not self._received[i]]
        rank = self.process_group.rank()
        indices = (f"Parameter indices which did not receive grad for rank {rank}: "
                   f"{' '.join(map(str, missing))}")
        # PyTorch names the parameters only from debug level INFO on
        if dist.get_debug_level() == dist.DebugLevel.OFF:
            which = (f"{indices}\n In addition, you can set the environment variable "
                     f"TORCH_DISTRIBUTED_DEBUG to either INFO or DETAIL to print out information "
                     f"about which particular parameters did not receive gradient on this rank "
                     f"as part of this error")
        else:
            names = ", ".join(sorted(self._names[i] for i in missing))
            which = f"Parameters which did not receive grad for rank {rank}: {names}\n{indices}"
        self._require_finalize = False
        raise RuntimeError(
            "Expected to have finished reduction in the prior iteration before starting a new "
            "one. This error indicates that your module has parameters that were not used in "
            "producing loss. You can enable unused parameter detection by passing the keyword "
            "argument `find_unused_parameters=True` to `torch.nn.parallel."
            "DistributedDataParallel`, and by \nmaking sure all `forward` function outputs "
            "participate in calculating loss. \nIf you already have done the above, then the "
            "distributed data parallel module wasn't able to locate the output tensors in the "
            "return value of your module's `forward` function. Please include the loss "
            "function and the structure of the return value of `forward` of your module when "
            "reporting this issue (e.g. list, dict, iterable).\n" + which)

    # --- API

    @contextmanager
    def no_sync(self):
        """Backward passes inside accumulate gradients locally; the first one outside averages
        the accumulated sum."""
        old = self.require_backward_grad_sync
        self.require_backward_grad_sync = False
        try:
            yield
        finally:
            self.require_backward_grad_sync = old

    def register_comm_hook(self, state, hook):
        """``hook(state, GradBucket) -> Future[Tensor]`` reduces the buckets instead of the
        default all-reduce (once, before the first backward)."""
        if self._comm_hook is not None:
            raise RuntimeError("register_comm_hook or register_builtin_comm_hook can only be "
                               "called once.")
        if not callable(hook):
            raise TypeError("Communication hook must be callable.")
        self._comm_hook = hook
        self._comm_state = state

    # --- join (uneven inputs)

    def join(self, divide_by_initial_world_size=True, enable=True,
             throw_on_early_termination=False):
        """Context manager for uneven inputs: ranks that run out of inputs shadow the others'
        collectives until all have, then every rank takes the last joiner's model. Gradients are
        divided by the initial world size (joined ranks add zeros), or with
        ``divide_by_initial_world_size=False`` by the number of ranks still running;
        ``throw_on_early_termination=True`` makes every rank raise once one runs out."""
        return Join([self], enable, throw_on_early_termination,
                    divide_by_initial_world_size=divide_by_initial_world_size)

    def join_hook(self, **kwargs):
        """The ``JoinHook`` shadowing DDP's forward and backward collectives
        (``divide_by_initial_world_size``, default True)."""
        return _DDPJoinHook(self, divide_by_initial_world_size=kwargs.get(
            "divide_by_initial_world_size", True))

    @property
    def join_device(self):
        return self._params[0].device

    @property
    def join_process_group(self):
        return self.process_group

    def _wait_join_works(self):
        for work in self._join_works:
            work.wait()
        self._join_works = []

    def _will_sync_module_buffers(self):
        return (self.require_forward_param_sync and self.broadcast_buffers
                and self.process_group.size() > 1 and any(True for _ in self.module.buffers()))

    def _find_common_rank(self, input_rank, rank_cond):
        """The highest group rank among those passing ``rank_cond``."""
        rank_to_use = ember.tensor([input_rank if rank_cond else -1], device=self.join_device)
        dist.all_reduce(rank_to_use, op=dist.ReduceOp.MAX, group=self.process_group)
        if rank_to_use.item() == -1:
            raise ValueError("BUG! Expected rank_cond to be true for at least one process. This "
                             "indicates a bug in PyTorch, please report an issue.")
        return rank_to_use.item()

    def _check_global_requires_backward_grad_sync(self, is_joined_rank):
        """All-reduce whether the running ranks sync gradients this iteration (a joined rank
        learns it, a running one only contributes)."""
        flag = 1 if not is_joined_rank and self.require_backward_grad_sync else 0
        requires_sync_tensor = ember.full((1,), float(flag), device=self.join_device)
        work = dist.all_reduce(requires_sync_tensor, group=self.process_group, async_op=True)
        if not is_joined_rank:
            self._join_works.append(work)
            return None
        work.wait()
        return requires_sync_tensor.item() != 0

    def _match_all_reduce_for_bwd_pass(self):
        """The running ranks' backward collectives with zero gradients: each bucket's
        reduction (the comm hook's if one is registered), the used-parameter map, the bucket
        rebuild after the first iteration."""
        works = []
        for b in self._buckets:
            zeros = ember.zeros_like(b.buffer)
            if self._comm_hook is not None:
                works.append(self._comm_hook(self._comm_state, GradBucket(
                    b.index, zeros, b.params, b.offsets, b.index == len(self._buckets) - 1)))
            else:
                works.append(dist.distributed_c10d._all_reduce_work(
                    self.process_group, zeros, "SUM", name="DDP bucket all_reduce"))
        if self.find_unused_parameters or self.static_graph:
            used = ember.zeros(len(self._params), dtype=ember.int32, device=self.join_device)
            works.append(dist.distributed_c10d._all_reduce_work(self.process_group, used, "MAX"))
        for work in works:
            work.wait()
        if not self._rebuilt and not self.find_unused_parameters:
            self._rebuild_buckets()
        self._rebuilt = True

    def _sync_final_model(self, is_last_joiner):
        src = self._find_common_rank(self.process_group.rank(), is_last_joiner)
        tensors = [p for p in self.module.parameters()]
        if self.broadcast_buffers:
            tensors += list(self.module.buffers())
        self._broadcast_coalesced(tensors, src=src)

    def _get_ddp_logging_data(self):
        return {"bucket_sizes": [b.buffer.numel() * b.buffer.element_size()
                                 for b in self._buckets],
                "num_buckets": len(self._buckets), "rebuilt": self._rebuilt}

    def _bucket_param_names(self):
        """The parameter names of each bucket, in bucket order (for tests and debugging)."""
        return [[self._names[i] for i in b.param_idx] for b in self._buckets]


def _tensors_in(obj):
    from ..._tensor import Tensor
    if isinstance(obj, Tensor):
        yield obj
    elif isinstance(obj, (list, tuple)):
        for o in obj:
            yield from _tensors_in(o)
    elif isinstance(obj, dict):
        for o in obj.values():
            yield from _tensors_in(o)
