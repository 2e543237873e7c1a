"""``ModuleTracker``: which ``nn.Module`` is running, forward or backward (PyTorch's
``torch.utils.module_tracker``).

Inside the ``with`` block, ``parents`` holds the fully qualified names of the modules whose
forward (or backward) is running, always with "Global"; a name is the root module's class name
followed by the attribute path ("Sequential", "Sequential.0"). Global module forward pre/post
hooks add and remove a module's name; in backward, multi-grad hooks on the module's outputs add
it when their gradients arrive and hooks on its inputs remove it when theirs are computed.
"""
import logging
import weakref

from .._tensor import Tensor
from ..autograd import engine as _engine
from ..autograd.graph import register_multi_grad_hook
from ..nn.modules.module import register_module_forward_hook, register_module_forward_pre_hook
from ._pytree import tree_flatten

logger = logging.getLogger(__name__)

__all__ = ["ModuleTracker"]


class ModuleTracker:
    """Context manager tracking the ``nn.Module`` hierarchy during execution: ``parents`` is the
    set of the fully qualified names of the modules being executed (never empty: "Global" is
    always in it), ``is_bw`` whether a backward pass is running. ``is_bw`` stays ``True`` after
    the forward until another module runs, as in PyTorch."""

    def __init__(self):
        self.parents = {"Global"}
        self._known_modules = weakref.WeakKeyDictionary()
        self._seen_modules = weakref.WeakSet()
        self._has_callback = False
        self._hooks = []

    def _maybe_set_engine_callback(self):
        # assumes no concurrent backward passes, as PyTorch's does
        if self._has_callback:
            return

        def callback():
            self.parents = {"Global"}
            self._has_callback = False

        _engine.queue_callback(callback)
        self._has_callback = True

    @property
    def is_bw(self):
        """Whether this thread is running a backward pass."""
        return _engine.current_graph_task_id() != -1

    def _get_mod_name(self, mod):
        if mod not in self._known_modules:
            self._known_modules[mod] = type(mod).__name__
        mod_name = self._known_modules[mod]
        if mod not in self._seen_modules:
            for name, submod in mod.named_children():
                self._known_modules[submod] = f"{mod_name}.{name}"
                self._get_mod_name(submod)
            self._seen_modules.add(mod)
        return mod_name

    def _get_append_fn(self, name, is_bw):
        def fn(*args):
            if is_bw:
                self._maybe_set_engine_callback()
            if name in self.parents:
                logger.info("The module hierarchy tracking seems to be broken as this Module was "
                            "already entered. %s during %s", name,
                            "backward" if is_bw else "forward")
            self.parents.add(name)
        return fn

    def _get_pop_fn(self, name, is_bw):
        def fn(*args):
            if name in self.parents:
                self.parents.remove(name)
            else:
                logger.info("The Module hierarchy tracking is confused as we're exiting a Module "
                            "that was never entered. %s during %s", name,
                            "backward" if is_bw else "forward")
        return fn

    def _grad_tensors(self, tree):
        return [a for a in tree_flatten(tree)[0] if isinstance(a, Tensor) and a.requires_grad]

    def _fw_pre_hook(self, mod, input):
        name = self._get_mod_name(mod)
        self._get_append_fn(name, False)()
        tensors = self._grad_tensors(input)
        if tensors:
            self._hooks.append(register_multi_grad_hook(tensors, self._get_pop_fn(name, True)))

    def _fw_post_hook(self, mod, input, output):
        name = self._get_mod_name(mod)
        self._get_pop_fn(name, False)()
        tensors = self._grad_tensors(output)
        if tensors:
            self._hooks.append(register_multi_grad_hook(tensors, self._get_append_fn(name, True)))

    def __enter__(self):
        self._fw_pre_handle = register_module_forward_pre_hook(self._fw_pre_hook)
        self._fw_post_handle = register_module_forward_hook(self._fw_post_hook)
        return self

    def __exit__(self, *args):
        self._fw_pre_handle.remove()
        self._fw_post_handle.remove()
        for hook in self._hooks:
            hook.remove()
        self._hooks.clear()
