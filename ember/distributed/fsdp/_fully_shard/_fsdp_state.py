"""``FSDPState``: what ``fully_shard`` keeps for a module (its parameter groups and hooks).
The forward pre-hook unshards (the root's first runs the lazy initialization: which state is
the root, the parameter names, the shared state) and casts the inputs for mixed precision; the
forward hook reshards and registers the pre-backward hook on the outputs, which unshards
again in backward. The root queues a callback at the end of backward that runs the
post-backward of groups backward did not reach and finalizes the iteration."""
import functools
import warnings

import ember

from ..._composable_state import _State, _get_module_state, _insert_module_state
from ....autograd.graph import _MultiHandle
from ....autograd.variable import Variable
from ._fsdp_common import TrainingState, _apply_to_tensors, _cast_fp_tensor, collect_grad_tensors
from ._fsdp_param_group import FSDPCommContext, FSDPParamGroup


class FSDPStateContext:
    """State shared by the FSDP states of one root."""

    def __init__(self):
        # every state in the root's module tree, in named_modules() pre-order
        self.all_states = []
        # the state whose forward started this iteration (a submodule when only it runs,
        # e.g. an encoder for eval): it runs the once-per-forward logic
        self.iter_forward_root = None
        self.post_backward_final_callback_queued = False
        # whether this backward's final callback finalizes the iteration
        self.is_last_backward = True


class FSDPState(_State):
    _state_name = "FSDP"

    def __init__(self):
        super().__init__()
        self._fsdp_param_groups = []
        self._is_root = None  # decided at lazy init
        self._state_ctx = FSDPStateContext()
        self._comm_ctx = FSDPCommContext()
        self._training_state = TrainingState.IDLE
        self._states_to_forward_prefetch = []
        self._states_to_backward_prefetch = []
        self._modules_to_run_forward = set()
        # False once the user chose reshard_after_forward (fully_shard or
        # set_reshard_after_forward)
        self._auto_reshard_after_forward = True

    def _get_state_for_module(self, module):
        return _get_module_fsdp_state(module)

    @property
    def _fsdp_param_group(self):
        """The parameter group, or None for a module without parameters to manage."""
        return self._fsdp_param_groups[0] if self._fsdp_param_groups else None

    def init(self, modules, device, mp_policy, auto_reshard_after_forward):
        for module in modules:
            _insert_module_state(module, self)
        self._modules = modules
        self._device = device
        self._mp_policy = mp_policy
        self._auto_reshard_after_forward = auto_reshard_after_forward
        if len(modules) == 1:
            self._pre_forward_hook_handle = modules[0].register_forward_pre_hook(
                self._pre_forward, prepend=True, with_kwargs=True)
            self._post_forward_hook_handle = modules[0].register_forward_hook(
                self._post_forward, prepend=False)
        else:
            handles = _register_group_forward_hooks(modules, self._pre_forward,
                                                    self._post_forward,
                                                    self._modules_to_run_forward,
                                                    self._cast_output_dtype)
            self._pre_forward_hook_handle = self._post_forward_hook_handle = handles

    def _root_pre_forward(self, module, args, kwargs):
        self._lazy_init()
        if self._state_ctx.iter_forward_root is not None:
            return args, kwargs
        self._state_ctx.iter_forward_root = self
        if self._device.type != "cpu" and (args or kwargs):
            move = functools.partial(_to_device, self._device)
            args, kwargs = _apply_to_tensors(move, args), _apply_to_tensors(move, kwargs)
        return args, kwargs

    def _lazy_init(self):
        """Once, at the first forward (whose state is the root): mark the other states non-root,
        collect them, name the parameters, share the state and initialize the groups."""
        if self._is_root is not None:
            return
        self._is_root = True
        if len(self._modules) > 1:
            raise RuntimeError(f"{self._state_name} requires a single root module but got "
                               f"{self._modules}")
        root_module = self._modules[0]
        visited_states = set()
        for module_name, module in root_module.named_modules():
            if (state := self._get_state_for_module(module)) is None:
                continue
            if module is not root_module:
                if state not in visited_states and state._is_root is not None:
                    raise RuntimeError(
                        f"{self._state_name} state has already been lazily initialized for "
                        f"{module_name}\n{self._state_name} requires running forward through "
                        "the root module first")
                state._is_root = False
            if state not in visited_states:  # fully_shard([a, b]): one state, two modules
                self._state_ctx.all_states.append(state)
            visited_states.add(state)
        # the root's parameters would be freed and all-gathered again right away in training
        if self._auto_reshard_after_forward:
            for fsdp_param_group in self._fsdp_param_groups:
                fsdp_param_group.post_forward_mesh_info = None
        self._init_fqns()
        self._init_shared_state()
        self._validate_no_duplicate_params()
        for state in self._state_ctx.all_states:
            for fsdp_param_group in state._fsdp_param_groups:
                fsdp_param_group.lazy_init()

    def _validate_no_duplicate_params(self):
        seen = set()
        for state in self._state_ctx.all_states:
            for fsdp_param_group in state._fsdp_param_groups:
                for fsdp_param in fsdp_param_group.fsdp_params:
                    if fsdp_param._orig_param_uid in seen:
                        raise ValueError(
                            f"Parameter '{fsdp_param._param_fqn}' is shared with a parameter "
                            f"already managed by another FSDP group. For shared/tied "
                            f"parameters, use fully_shard([module_a, module_b]) to place them "
                            f"in the same FSDP group.")
                    seen.add(fsdp_param._orig_param_uid)

    def _init_shared_state(self):
        for state in self._state_ctx.all_states:
            state._state_ctx = self._state_ctx
            state._comm_ctx = self._comm_ctx
            for fsdp_param_group in state._fsdp_param_groups:
                fsdp_param_group.comm_ctx = self._comm_ctx

    def _init_fqns(self):
        """Parameter and module names (prefixed from the root), for messages."""
        root_module = self._modules[0]
        param_to_fsdp_param, module_to_groups = {}, {}
        for state in self._state_ctx.all_states:
            for fsdp_param_group in state._fsdp_param_groups:
                for fsdp_param in fsdp_param_group.fsdp_params:
                    param_to_fsdp_param[fsdp_param.sharded_param] = fsdp_param
                for module in fsdp_param_group.modules:
                    module_to_groups.setdefault(module, []).append(fsdp_param_group)
        for param_name, param in root_module.named_parameters():
            if param in param_to_fsdp_param:
                param_to_fsdp_param[param]._param_fqn = param_name
        for module_name, module in root_module.named_modules():
            for fsdp_param_group in module_to_groups.get(module, ()):
                if fsdp_param_group._module_fqn is None:
                    fsdp_param_group._module_fqn = module_name
                else:
                    fsdp_param_group._module_fqn += f", {module_name}"

    def _pre_forward(self, module, args, kwargs):
        # an activation-checkpointing recomputation in backward: the parameters must be
        # unsharded (a previous post-backward may have resharded them)
        if self._training_state == TrainingState.PRE_BACKWARD:
            for fsdp_param_group in self._fsdp_param_groups:
                if not fsdp_param_group.is_unsharded:
                    fsdp_param_group.unshard()
                    fsdp_param_group.wait_for_unshard()
            return self._cast_forward_inputs(args, kwargs)
        # with fully_shard([a, b]) the hook runs per module; the root setup and forward
        # prefetch run at the first
        state_first_in_pass = self._training_state != TrainingState.FORWARD
        self._training_state = TrainingState.FORWARD
        if state_first_in_pass:
            args, kwargs = self._root_pre_forward(module, args, kwargs)
        args, kwargs = self._cast_forward_inputs(args, kwargs)
        for fsdp_param_group in self._fsdp_param_groups:
            args, kwargs = fsdp_param_group.pre_forward(module, args, kwargs)
        if state_first_in_pass:
            for fsdp_state in self._states_to_forward_prefetch:
                for target_param_group in fsdp_state._fsdp_param_groups:
                    FSDPParamGroup._prefetch_unshard(target_param_group, "forward")
        return args, kwargs

    def _post_forward(self, module, input, output):
        # an activation-checkpointing recomputation: the post-backward reshards
        if self._training_state == TrainingState.PRE_BACKWARD:
            return self._cast_output_dtype(output)
        for fsdp_param_group in self._fsdp_param_groups:
            output = fsdp_param_group.post_forward(module, input, output)
        output = self._register_pre_backward_hook(output)
        self._training_state = TrainingState.IDLE
        if self._state_ctx.iter_forward_root is self:
            output = self._force_complete_incomplete_states(output)
            self._state_ctx.iter_forward_root = None
        return self._cast_output_dtype(output)

    def _cast_forward_inputs(self, args, kwargs):
        if not (self._mp_policy.cast_forward_inputs and self._mp_policy.param_dtype):
            return args, kwargs
        cast_fn = functools.partial(_cast_fp_tensor, self._mp_policy.param_dtype)
        return _apply_to_tensors(cast_fn, args), _apply_to_tensors(cast_fn, kwargs)

    def _cast_output_dtype(self, output):
        if self._mp_policy.output_dtype is None:
            return output
        return _apply_to_tensors(functools.partial(_cast_fp_tensor, self._mp_policy.output_dtype),
                                 output)

    def _force_complete_incomplete_states(self, output):
        """The post-forward of grouped states whose forward ran only some of their modules
        (chunked loss: the model's forward skips the head); deepest first."""
        for state in reversed(self._state_ctx.all_states):
            if state is self or not state._modules_to_run_forward:
                continue
            for fsdp_param_group in state._fsdp_param_groups:
                output = fsdp_param_group.post_forward(None, None, output)
            output = state._register_pre_backward_hook(output)
            state._training_state = TrainingState.IDLE
            output = state._cast_output_dtype(output)
            state._modules_to_run_forward.clear()
        return output

    def _pre_backward(self, grad):
        self._training_state = TrainingState.PRE_BACKWARD
        self._register_root_post_backward_final_callback()
        default_prefetch = len(self._states_to_backward_prefetch) == 0
        for fsdp_param_group in self._fsdp_param_groups:
            fsdp_param_group.pre_backward(default_prefetch)
        for fsdp_state in self._states_to_backward_prefetch:
            for target_param_group in reversed(fsdp_state._fsdp_param_groups):
                FSDPParamGroup._prefetch_unshard(target_param_group, "backward")
        return grad

    def _root_post_backward_final_callback(self):
        self._state_ctx.iter_forward_root = None
        for state in self._state_ctx.all_states:
            state._modules_to_run_forward.clear()
            for fsdp_param_group in reversed(state._fsdp_param_groups):
                if fsdp_param_group._training_state != TrainingState.POST_BACKWARD:
                    # backward did not reach it (its forward inputs needed no gradient)
                    fsdp_param_group.post_backward()
                fsdp_param_group._training_state = TrainingState.IDLE
            state._training_state = TrainingState.IDLE
            if self._state_ctx.is_last_backward:
                for fsdp_param_group in state._fsdp_param_groups:
                    fsdp_param_group.finalize_backward()
        if self._state_ctx.is_last_backward:
            self._comm_ctx.post_forward_order.clear()
        self._state_ctx.post_backward_final_callback_queued = False

    def _register_pre_backward_hook(self, output):
        if not ember.is_grad_enabled():
            return output
        for t in collect_grad_tensors(output):
            if t._base is not None:
                cls = ", ".join(type(m).__name__ for m in self._modules) or "?"
                warnings.warn(
                    f"FSDP2-wrapped module ({cls}) returned a view tensor. An in-place op on "
                    "this view (e.g., `x += y`) will silently drop the pre-backward hook and "
                    "skip the all-gather, which can cause backward to fail or produce wrong "
                    "gradients. Use out-of-place ops (`out = out + y`, not `out += y`) or "
                    "`.clone()` the output before any in-place op.", UserWarning, stacklevel=2)
            t.register_hook(self._pre_backward)
        return output

    def _register_root_post_backward_final_callback(self):
        if self._state_ctx.post_backward_final_callback_queued:
            return
        self._state_ctx.post_backward_final_callback_queued = True
        Variable._execution_engine.queue_callback(self._root_post_backward_final_callback)

    def _reset_iter_state(self):
        """After an exception in forward or backward: wait for issued collectives, reshard
        every group and forget the iteration (its gradients are lost)."""
        if self._is_root is False:
            raise RuntimeError("reset_iter_state must be called on the root FSDP module")
        self._comm_ctx.post_forward_order.clear()
        for state in self._state_ctx.all_states:
            state._modules_to_run_forward.clear()
            state._training_state = TrainingState.IDLE
            for fsdp_param_group in state._fsdp_param_groups:
                fsdp_param_group._reset_iter_state()
        self._state_ctx.iter_forward_root = None
        self._state_ctx.post_backward_final_callback_queued = False


def _to_device(device, t):
    return t.to(device)


def _get_module_fsdp_state(module):
    state = _get_module_state(module)
    return state if isinstance(state, FSDPState) else None


def _register_group_forward_hooks(modules, pre_hook, post_hook, modules_to_run,
                                  cast_output_dtype):
    """The hooks of a grouped ``fully_shard([a, b, ...])``: the pre-hook runs before every
    module; the full post-hook runs after the module that completes the group (the others
    only cast their outputs), and the root's post-forward completes a group whose forward
    skipped some modules."""
    modules_set = set(modules)

    @functools.wraps(pre_hook)
    def wrapped_pre_hook(*args, **kwargs):
        if len(modules_to_run) == 0:
            modules_to_run.update(modules_set)
        return pre_hook(*args, **kwargs)

    def get_wrapped_post_hook(module):
        @functools.wraps(post_hook)
        def wrapped_post_hook(hook_module, input, output):
            if module in modules_to_run:
                modules_to_run.remove(module)
                if len(modules_to_run) == 0:
                    return post_hook(hook_module, input, output)
            return cast_output_dtype(output)
        return wrapped_post_hook

    pre_handles = [module.register_forward_pre_hook(wrapped_pre_hook, prepend=True,
                                                    with_kwargs=True) for module in modules]
    post_handles = [module.register_forward_hook(get_wrapped_post_hook(module), prepend=False,
                                                 always_call=True) for module in modules]
    return _MultiHandle(tuple(pre_handles + post_handles))

