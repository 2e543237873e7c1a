"""``DataParallel``: one process driving several devices (PyTorch's
``torch/nn/parallel/data_parallel.py``). Each call splits its inputs along ``dim`` over
``device_ids``, runs a replica of the module on each device (``replicate``: its parameters are
differentiable copies of the module's, so gradients are summed into the module's own), and
gathers the outputs on ``output_device``. Without CUDA it calls the module; with one device it
calls the module there.

PyTorch recommends ``DistributedDataParallel`` (one process per device) over this, and so does
ember; this is for programs written against it."""
import warnings
from itertools import chain

from ..modules.module import Module
from .parallel_apply import parallel_apply
from .replicate import replicate
from .scatter_gather import gather, scatter_kwargs

__all__ = ["DataParallel", "data_parallel"]


def _cuda():
    import ember
    return ember.cuda if ember.cuda.is_available() else None


def _check_balance(device_ids):
    import ember
    imbalance_warn = ("There is an imbalance between your GPUs. You may want to exclude GPU {} "
                      "which has less than 75% of the memory or cores of GPU {}. You can do so "
                      "by setting the device_ids argument to DataParallel, or by setting the "
                      "CUDA_VISIBLE_DEVICES environment variable.")
    props = [ember.cuda.get_device_properties(i) for i in device_ids]

    def warn_imbalance(values):
        min_pos = min(range(len(values)), key=values.__getitem__)
        max_pos = max(range(len(values)), key=values.__getitem__)
        if values[min_pos] / values[max_pos] < 0.75:
            warnings.warn(imbalance_warn.format(device_ids[min_pos], device_ids[max_pos]),
                          stacklevel=3)
            return True
        return False

    if warn_imbalance([p.total_memory for p in props]):
        return
    warn_imbalance([p.multi_processor_count for p in props])


class DataParallel(Module):
    def __init__(self, module, device_ids=None, output_device=None, dim=0):
        super().__init__()
        import ember
        cuda = _cuda()
        if cuda is None:
            self.module = module
            self.device_ids = []
            return
        if device_ids is None:
            device_ids = list(range(cuda.device_count()))
        if output_device is None:
            output_device = device_ids[0]
        self.dim = dim
        self.module = module
        self.device_ids = [cuda._get_device_index(x, optional=True) for x in device_ids]
        self.output_device = cuda._get_device_index(output_device, optional=True)
        self.src_device_obj = ember.device("cuda", self.device_ids[0])
        _check_balance(self.device_ids)
        if len(self.device_ids) == 1:
            self.module.to(self.src_device_obj)

    def forward(self, *inputs, **kwargs):
        import ember
        with ember.autograd.profiler.record_function("DataParallel.forward"):
            if not self.device_ids:
                return self.module(*inputs, **kwargs)
            for t in chain(self.module.parameters(), self.module.buffers()):
                if t.device != self.src_device_obj:
                    raise RuntimeError(f"module must have its parameters and buffers on device "
                                       f"{self.src_device_obj} (device_ids[0]) but found one of "
                                       f"them on device: {t.device}")
            inputs, module_kwargs = self.scatter(inputs, kwargs, self.device_ids)
            # a forward without inputs runs on the first device
            if not inputs and not module_kwargs:
                inputs = ((),)
                module_kwargs = ({},)
            if len(self.device_ids) == 1:
                return self.module(*inputs[0], **module_kwargs[0])
            replicas = self.replicate(self.module, self.device_ids[:len(inputs)])
            outputs = self.parallel_apply(replicas, inputs, module_kwargs)
            return self.gather(outputs, self.output_device)

    def replicate(self, module, device_ids):
        import ember
        return replicate(module, device_ids, not ember.is_grad_enabled())

    def scatter(self, inputs, kwargs, device_ids):
        return scatter_kwargs(inputs, kwargs, device_ids, dim=self.dim)

    def parallel_apply(self, replicas, inputs, kwargs):
        return parallel_apply(replicas, inputs, kwargs, self.device_ids[:len(replicas)])

    def gather(self, outputs, output_device):
        return gather(outputs, output_device, dim=self.dim)


def data_parallel(module, inputs, device_ids=None, output_device=None, dim=0,
                  module_kwargs=None):
    """``DataParallel(module, device_ids, output_device, dim)(*inputs, **module_kwargs)``
    without keeping the wrapper."""
    import ember
    if not isinstance(inputs, tuple):
        inputs = (inputs,) if inputs is not None else ()
    cuda = _cuda()
    if cuda is None:
        return module(*inputs, **(module_kwargs or {}))
    if device_ids is None:
        device_ids = list(range(cuda.device_count()))
    if output_device is None:
        output_device = device_ids[0]
    device_ids = [cuda._get_device_index(x, optional=True) for x in device_ids]
    output_device = cuda._get_device_index(output_device, optional=True)
    src = ember.device("cuda", device_ids[0])
    for t in chain(module.parameters(), module.buffers()):
        if t.device != src:
            raise RuntimeError(f"module must have its parameters and buffers on device {src} "
                               f"(device_ids[0]) but found one of them on device: {t.device}")
    inputs, module_kwargs = scatter_kwargs(inputs, module_kwargs, device_ids, dim)
    if not inputs and not module_kwargs:
        inputs = ((),)
        module_kwargs = ({},)
    if len(device_ids) == 1:
        return module(*inputs[0], **module_kwargs[0])
    used = device_ids[:len(inputs)]
    replicas = replicate(module, used)
    outputs = parallel_apply(replicas, inputs, module_kwargs, used)
    return gather(outputs, output_device, dim)
