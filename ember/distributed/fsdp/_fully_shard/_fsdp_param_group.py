"""``FSDPParamGroup``: the parameters one ``fully_shard`` call manages, communicated together.
It unshards them (one all-gather into the group's unsharded buffers, one buffer per dtype)
before forward and again in backward, reshards them (the module holds the sharded DTensors
again and the buffers' storage is freed) after forward and backward, and reduce-scatters
their gradients after backward. A ``RegisterPostBackwardFunction`` on the forward inputs
runs the post-backward when the gradients for the inputs, hence for the parameters, exist.

ember runs the collectives on the calling thread, without CUDA streams: an unshard issued
ahead (``unshard(async_op=True)``, explicit or default backward prefetching) starts a
non-blocking all-gather that the group waits for before it copies the result out; nothing
else overlaps communication with computation.
"""
import contextlib

import ember

from ._fsdp_collectives import foreach_all_gather, foreach_all_gather_copy_out, foreach_reduce
from ._fsdp_common import (DDPMeshInfo, HSDPMeshInfo, TrainingState, collect_grad_tensors, is_bw,
                           replace_grad_tensors)
from ._fsdp_param import FSDPParam, ParamModuleInfo, ShardedState, alloc_storage, free_storage
from ._fsdp_api import CPUOffloadPolicy


class FSDPCommContext:
    """Communication state shared by the FSDP states of one root: the order in which parameter
    groups ran their post-forward, which default backward prefetching walks backwards."""

    def __init__(self):
        self.post_forward_order = []


class FSDPParamGroup:
    """A parameter group to communicate together."""

    def __init__(self, params, modules, mesh_info, post_forward_mesh_info, device,
                 shard_placement_fn, mp_policy, offload_policy):
        self.modules = modules
        param_module_infos = _get_param_module_infos(params, modules)
        self.fsdp_params = [
            FSDPParam(param, module_info, mesh_info, device, shard_placement_fn, offload_policy)
            for param, module_info in zip(params, param_module_infos)]
        self.mesh_info = mesh_info
        self.post_forward_mesh_info = post_forward_mesh_info
        self.device = device
        self.mp_policy = mp_policy
        self.offload_policy = offload_policy
        self._training_state = TrainingState.IDLE
        self._sharded_state = ShardedState.SHARDED
        self._module_fqn = None  # prefixed from the root module
        self._reset_sharded_params = False  # done once, at lazy init
        self._module_to_pre_save_state_dict_hook_handle = {}
        self._module_to_pre_load_state_dict_hook_handle = {}
        self._all_reduce_hook = None
        self._all_reduce_hook_stream = None
        self.comm_ctx = FSDPCommContext()
        self._post_forward_indices = []  # this group's places in comm_ctx.post_forward_order
        self.reduce_grads = True  # reduce at all (FSDP or HSDP)
        self.all_reduce_grads = True  # HSDP: all-reduce after the reduce-scatter
        self.reshard_after_backward = True
        self.gradient_divide_factor = None
        self.reduce_scatter_unused_params = False
        self.force_sum_reduction_for_comms = False
        self.unshard_async_op = False
        self.unshard_in_backward = True
        self._all_gather_result = None  # an unshard waiting for its copy-out
        self._unsharded_buffers = {}  # dtype -> 1-D buffer holding the unsharded parameters
        self._partial_reduce_output = None  # HSDP: reduce-scattered, not yet all-reduced

    # -- initialization

    def _init_mp_dtypes(self):
        for fsdp_param in self.fsdp_params:
            fsdp_param.init_dtype_attrs(self.mp_policy)
        trainable = [p for p in self.fsdp_params if p.sharded_param.requires_grad]
        orig_dtypes = {p.orig_dtype for p in trainable}
        reduce_dtypes = {p.reduce_dtype for p in trainable}
        if trainable and len(orig_dtypes) != 1:
            raise AssertionError(f"FSDP expects uniform original parameter dtype but got "
                                 f"{orig_dtypes}")
        self._orig_dtype = next(iter(orig_dtypes)) if trainable else None
        if trainable and len(reduce_dtypes) != 1:
            raise AssertionError(f"FSDP expects uniform reduce dtype but got {reduce_dtypes}")
        self._reduce_dtype = next(iter(reduce_dtypes)) if trainable else None

    def lazy_init(self):
        # idempotent; parameters may have been changed or loaded since construction
        if self.is_sharded and not self._reset_sharded_params:
            for fsdp_param in self.fsdp_params:
                fsdp_param.reset_sharded_param()
            self._reset_sharded_params = True
        self._validate_no_meta_params()
        self._validate_cpu_offload_params()
        self._init_mp_dtypes()
        self._register_state_dict_hooks()

    # -- runtime

    def unshard(self, async_op=False):
        if self._all_gather_result is not None:  # issued already, waiting for its copy-out
            return
        if self.is_unsharded:
            return
        if not self.unshard_in_backward and self._training_state == TrainingState.PRE_BACKWARD:
            return
        self._all_gather_result = foreach_all_gather(
            self.fsdp_params, self._all_gather_process_group, async_op, self.device)

    def wait_for_unshard(self):
        """Copy the all-gathered parameters into the unsharded buffers and register the
        unsharded parameters."""
        if self._all_gather_result is None:
            return
        self._alloc_unsharded_buffers()
        foreach_all_gather_copy_out(self._all_gather_result, self.fsdp_params,
                                    self._all_gather_process_group.size())
        for fsdp_param in self.fsdp_params:
            fsdp_param.init_unsharded_param()
        self._to_unsharded()
        self._all_gather_result = None

    def _alloc_unsharded_buffers(self):
        """The buffers (made at the first unshard, their storage resized back after each
        reshard), one per all-gather dtype: a single storage resize frees or restores all the
        group's unsharded parameters of that dtype."""
        if not self._unsharded_buffers:
            result = self._all_gather_result
            world_size = self._all_gather_process_group.size()
            sizes = {}
            for fsdp_param, dtype, numel in zip(self.fsdp_params,
                                                result.param_all_gather_input_dtypes,
                                                result.param_all_gather_input_numels):
                start = sizes.get(dtype, 0)
                fsdp_param.all_gather_output = (dtype, start, numel * world_size)
                sizes[dtype] = start + numel * world_size
            self._unsharded_buffers = {dtype: ember.empty(size, dtype=dtype, device=self.device)
                                       for dtype, size in sizes.items()}
            for fsdp_param in self.fsdp_params:
                dtype, start, length = fsdp_param.all_gather_output
                fsdp_param.all_gather_output = self._unsharded_buffers[dtype].narrow(0, start,
                                                                                    length)
        for buffer in self._unsharded_buffers.values():
            alloc_storage(buffer)

    def _free_unsharded_buffers(self):
        for buffer in self._unsharded_buffers.values():
            free_storage(buffer)

    def reshard(self):
        if self._training_state == TrainingState.FORWARD and not self._reshard_after_forward:
            return
        self._to_sharded()

    def _reset_iter_state(self):
        """Forget this iteration after an exception: wait for an issued all-gather, drop
        HSDP's partial reduction, reshard."""
        if self._all_gather_result is not None:
            if self._all_gather_result.all_gather_work is not None:
                self._all_gather_result.all_gather_work.wait()
            self._all_gather_result = None
        self._partial_reduce_output = None
        self._post_forward_indices.clear()
        self._training_state = TrainingState.IDLE
        self._to_sharded()

    def pre_forward(self, module, args, kwargs):
        # FORWARD already: another module of a grouped fully_shard([a, b]) registered the
        # post-backward for this pass
        entering_forward_pass = self._training_state != TrainingState.FORWARD
        self._training_state = TrainingState.FORWARD
        self.unshard(self.unshard_async_op)
        self.wait_for_unshard()
        if entering_forward_pass:
            args, kwargs = self._register_post_backward_hook(args, kwargs)
        return args, kwargs

    def post_forward(self, module, input, output):
        # an activation-checkpointing recomputation does not count as a forward
        if not is_bw():
            self.reshard()
            self._record_post_forward()
        self._training_state = TrainingState.IDLE
        return output

    def _record_post_forward(self):
        # one pre-backward unshard per forward call: each is recorded
        post_forward_index = len(self.comm_ctx.post_forward_order)
        self.comm_ctx.post_forward_order.append(self)
        self._post_forward_indices.append(post_forward_index)

    def pre_backward(self, default_prefetch, *unused):
        if self._training_state == TrainingState.PRE_BACKWARD:
            return
        self._training_state = TrainingState.PRE_BACKWARD
        self.unshard(self.unshard_async_op)  # a no-op if prefetched
        self.wait_for_unshard()
        if default_prefetch:
            self._backward_prefetch()

    def post_backward(self, *unused):
        # idempotent, and a no-op for a group that backward did not reach
        self._training_state = TrainingState.POST_BACKWARD
        for fsdp_param in self.fsdp_params:
            fsdp_param.accumulate_unsharded_grad_if_needed()
        if not self.reduce_grads:
            if self.reshard_after_backward:
                self.reshard()
            for fsdp_param in self.fsdp_params:
                fsdp_param.to_accumulated_grad_if_needed()
            return
        # take the gradients before the reshard (they are not in the freed memory)
        fsdp_params_with_grad, unsharded_grads = [], []
        for fsdp_param in self.fsdp_params:
            if not hasattr(fsdp_param, "_unsharded_param"):
                continue
            # a previous backward without reduction may have left a reduce-dtype gradient
            if fsdp_param.unsharded_accumulated_grad is not None:
                fsdp_params_with_grad.append(fsdp_param)
                unsharded_grads.append(fsdp_param.unsharded_accumulated_grad_data)
                fsdp_param.unsharded_accumulated_grad = None
            elif fsdp_param.unsharded_param.grad is not None:
                fsdp_params_with_grad.append(fsdp_param)
                unsharded_grads.append(fsdp_param.unsharded_grad_data)
                fsdp_param.unsharded_param.grad = None
            elif self.reduce_scatter_unused_params and fsdp_param.unsharded_param.requires_grad:
                fsdp_params_with_grad.append(fsdp_param)
                unsharded_grads.append(fsdp_param.unsharded_zero_grad_data)
        if self.reshard_after_backward:
            self.reshard()
        if not fsdp_params_with_grad:
            return
        all_reduce_group = (self.mesh_info.replicate_process_group
                            if isinstance(self.mesh_info, DDPMeshInfo) else None)
        hook = self._all_reduce_hook
        if hook is not None and self._all_reduce_hook_stream is not None:
            stream, user_hook = self._all_reduce_hook_stream, hook

            def hook(output):
                with ember.cuda.stream(stream):
                    user_hook(output)
        self._partial_reduce_output = foreach_reduce(
            fsdp_params_with_grad, unsharded_grads, self._reduce_scatter_process_group,
            self._orig_dtype, self._reduce_dtype, self.device, self.gradient_divide_factor,
            all_reduce_group, self.all_reduce_grads, self._partial_reduce_output, hook,
            self.force_sum_reduction_for_comms)

    def finalize_backward(self):
        if self._all_gather_result is not None:
            # an unshard issued without a wait (a mistargeted prefetch): finish and drop it
            if self._all_gather_result.all_gather_work is not None:
                self._all_gather_result.all_gather_work.wait()
            self._all_gather_result = None
        self._post_forward_indices.clear()

    def _backward_prefetch(self):
        if self._training_state != TrainingState.PRE_BACKWARD:
            return
        if not self._post_forward_indices:  # cleared by an earlier backward
            return
        curr_index = self._post_forward_indices.pop()
        if curr_index > 0:
            target = self.comm_ctx.post_forward_order[curr_index - 1]
            self._prefetch_unshard(target, "backward")

    @staticmethod
    def _prefetch_unshard(target_fsdp_param_group, pass_type):
        if pass_type == "backward":
            training_state = TrainingState.PRE_BACKWARD
        elif pass_type == "forward":
            training_state = TrainingState.FORWARD
        else:
            raise ValueError(f"Unknown pass type: {pass_type}")
        with target_fsdp_param_group.use_training_state(training_state):
            # non-blocking: the target waits for it in its own pre-forward/pre-backward
            target_fsdp_param_group.unshard(async_op=True)

    # -- utilities

    def _to_sharded(self):
        if not self.is_sharded:
            for fsdp_param in self.fsdp_params:
                fsdp_param.to_sharded()
            self._free_unsharded_buffers()
            self._sharded_state = ShardedState.SHARDED

    def _to_unsharded(self):
        if not self.is_unsharded:
            for fsdp_param in self.fsdp_params:
                fsdp_param.to_unsharded()
            self._sharded_state = ShardedState.UNSHARDED

    @property
    def is_sharded(self):
        return self._sharded_state == ShardedState.SHARDED

    @property
    def is_unsharded(self):
        return self._sharded_state == ShardedState.UNSHARDED

    @contextlib.contextmanager
    def use_training_state(self, training_state):
        old_training_state = self._training_state
        self._training_state = training_state
        try:
            yield
        finally:
            self._training_state = old_training_state

    # -- hook registration

    def _register_post_backward_hook(self, args, kwargs):
        if not ember.is_grad_enabled():
            return args, kwargs
        inp_tensors = collect_grad_tensors((args, kwargs))
        if not inp_tensors:
            return args, kwargs
        out_tensors = RegisterPostBackwardFunction.apply(self, *inp_tensors)
        return replace_grad_tensors((args, kwargs), iter(out_tensors))

    def _register_state_dict_hooks(self):
        num_pre_save = len(self._module_to_pre_save_state_dict_hook_handle)
        num_pre_load = len(self._module_to_pre_load_state_dict_hook_handle)
        if num_pre_save != num_pre_load:
            raise AssertionError(f"Pre-save: {num_pre_save} pre-load: {num_pre_load}")
        if num_pre_save > 0:
            return  # registered already
        modules_with_fsdp_params = {p._module_info.module for p in self.fsdp_params}

        def to_sharded_hook(*args, **kwargs):
            self._to_sharded()

        for module in modules_with_fsdp_params:
            self._module_to_pre_save_state_dict_hook_handle[module] = \
                module.register_state_dict_pre_hook(to_sharded_hook)
            self._module_to_pre_load_state_dict_hook_handle[module] = \
                module._register_load_state_dict_pre_hook(to_sharded_hook)

    # -- properties

    @property
    def _reshard_after_forward(self):
        return self.post_forward_mesh_info is not None

    @property
    def _is_hsdp(self):
        return isinstance(self.mesh_info, HSDPMeshInfo)

    @property
    def _all_gather_process_group(self):
        return self.mesh_info.shard_process_group

    @property
    def _reduce_scatter_process_group(self):
        return self.mesh_info.shard_process_group

    def __repr__(self):
        return f"FSDPParamGroup(fqn={self._module_fqn})"

    def _validate_no_meta_params(self):
        names = [p._param_fqn for p in self.fsdp_params if p.sharded_param.device.type == "meta"]
        if names:
            raise RuntimeError(
                "FSDP parameters should be materialized from meta device before training, "
                f"but the following were still on meta device: {names}\n"
                "For example, call module.to_empty(device) to materialize to device and "
                "call module.reset_parameters() on each module to initialize values.")

    def _validate_cpu_offload_params(self):
        if not isinstance(self.offload_policy, CPUOffloadPolicy):
            return
        not_on_cpu = [p for p in self.fsdp_params if p.sharded_param.device.type != "cpu"]
        if not_on_cpu:
            raise RuntimeError(
                "FSDP parameters should be materialized on CPU when enabling CPU offloading. "
                'For example, load a CPU state dict or call module.to_empty(device="cpu"). '
                "Found following parameters on non-CPU device: "
                f"{[(p._param_fqn, p.sharded_param.device) for p in not_on_cpu]}\n")


def _get_param_module_infos(params, modules):
    """Each parameter's module and name, with the other modules and names sharing it (shared
    modules and shared parameters are both walked with their duplicates)."""
    params_set = set(params)
    param_to_module_info = {}
    for module in modules:
        for _, submodule in module.named_modules(remove_duplicate=False):
            for param_name, param in submodule._parameters.items():
                if param is None or param not in params_set:
                    continue
                info = param_to_module_info.get(param)
                if info is None:
                    param_to_module_info[param] = ParamModuleInfo(submodule, param_name)
                else:
                    info.shared_modules.append(submodule)
                    info.shared_param_names.append(param_name)
    if len(param_to_module_info) != len(params):
        raise AssertionError(f"Some parameters are not in the module tree of {modules}")
    return [param_to_module_info[param] for param in params]


class RegisterPostBackwardFunction(ember.autograd.Function):
    """The identity on a group's forward inputs; its backward (reached once the gradients for
    the inputs, hence for the group's parameters, are computed) runs the post-backward."""

    @staticmethod
    def forward(ctx, param_group, *inputs):
        ctx.param_group = param_group
        return tuple(x.view_as(x) for x in inputs)

    @staticmethod
    def backward(ctx, *grads):
        ctx.param_group.post_backward()
        return (None,) + grads

