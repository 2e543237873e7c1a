"""Running the replicas at once, one thread per device (PyTorch's
``torch/nn/parallel/parallel_apply.py``): each thread makes its device and that device's current
stream current, carries the caller's grad mode and autocast setting, and an exception in a
replica is raised in the caller, naming the replica and device."""
import sys
import threading

__all__ = ["parallel_apply", "get_a_var"]


def get_a_var(obj):
    """The first tensor in ``obj`` (through lists, tuples and dicts), or None."""
    if hasattr(obj, "_keyset"):
        return obj
    if isinstance(obj, (list, tuple)):
        for result in map(get_a_var, obj):
            if result is not None:
                return result
    if isinstance(obj, dict):
        for result in map(get_a_var, obj.items()):
            if result is not None:
                return result
    return None


def parallel_apply(modules, inputs, kwargs_tup=None, devices=None):
    """``modules[i](*inputs[i], **kwargs_tup[i])`` on ``devices[i]`` for every i, in threads;
    the outputs in order."""
    import ember
    from ...utils.data.worker import _ExceptionWrapper
    if len(modules) != len(inputs):
        raise AssertionError(f"The number of modules {len(modules)} is not equal to the number "
                             f"of inputs {len(inputs)}")
    if kwargs_tup is not None:
        if len(modules) != len(kwargs_tup):
            raise AssertionError("The number of modules is not equal to the number of kwargs")
    else:
        kwargs_tup = ({},) * len(modules)
    if devices is not None:
        if len(modules) != len(devices):
            raise AssertionError("The number of modules is not equal to the number of devices")
    else:
        devices = [None] * len(modules)
    devices = [ember.cuda._get_device_index(x, optional=True) if x is not None else None
               for x in devices]
    streams = [ember.cuda.current_stream(d) if d is not None else None for d in devices]
    lock = threading.Lock()
    results = {}
    grad_enabled = ember.is_grad_enabled()
    autocast_enabled = ember.is_autocast_enabled("cuda")

    def _worker(i, module, input, kwargs, device=None, stream=None):  # noqa: A002
        ember.set_grad_enabled(grad_enabled)
        if device is None:
            t = get_a_var(input)
            if t is None:
                with lock:
                    results[i] = _ExceptionWrapper(
                        (RuntimeError, RuntimeError("no device"), None),
                        f"in replica {i}, no device was provided and no tensor input was found; "
                        f"device cannot be resolved")
                return
            device = t.get_device()
        if stream is None:
            stream = ember.cuda.current_stream(device)
        try:
            with ember.cuda.device(device), ember.cuda.stream(stream), \
                    ember.autocast("cuda", enabled=autocast_enabled):
                if not isinstance(input, (list, tuple)):
                    input = (input,)  # noqa: A001
                output = module(*input, **kwargs)
            with lock:
                results[i] = output
        except Exception:  # noqa: BLE001  (re-raised in the caller below)
            with lock:
                results[i] = _ExceptionWrapper(sys.exc_info(),
                                               f"in replica {i} on device {device}")

    if len(modules) > 1:
        threads = [threading.Thread(target=_worker, args=(i, m, inp, kw, d, s))
                   for i, (m, inp, kw, d, s) in enumerate(zip(modules, inputs, kwargs_tup,
                                                             devices, streams))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    else:
        _worker(0, modules[0], inputs[0], kwargs_tup[0], devices[0], streams[0])

    outputs = []
    for i in range(len(inputs)):
        output = results[i]
        if isinstance(output, _ExceptionWrapper):
            output.reraise()
        outputs.append(output)
    return outputs
