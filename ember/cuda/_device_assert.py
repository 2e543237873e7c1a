"""Device-side assertions: index checks that run on the GPU and report at the next synchronisation,
as CUDA's ``CUDA_KERNEL_ASSERT`` does in PyTorch's kernels.

A kernel body that gathers by index (embedding, nll_loss) must refuse an index out of range. On
the host it raises at once; on a GPU, looking would copy to the host and wait for the device —
every call would stall the stream, and none could be captured in a CUDA graph. So the check is a
kernel: :func:`check_range` launches it on the current stream, and it writes the failing check's
number into the device's flag word (the first failure wins). The flag is read where the host
waits for the device anyway (:func:`raise_pending`, from the runtime's synchronize calls and
device-to-host copies), and a set flag raises PyTorch's ``RuntimeError: CUDA error: device-side
assert triggered``, naming the op's message. With ``CUDA_LAUNCH_BLOCKING=1`` the check
synchronises and raises at the op, as it would in PyTorch.

One difference from CUDA: the error is not sticky. CUDA poisons the context after a device-side
assert (every later call fails until the process ends); here the flag is cleared once reported
and the device stays usable.

A graph that captured a check re-arms the device on each replay (:func:`arm`): the check's kernel
is in the graph, its flag read is not.
"""
import os
import threading

import numpy as np

_lock = threading.Lock()
_flags = {}  # device index -> device address of its int32 flag (0: no failure; else a check number)
_messages = [None]  # check number -> the message it raises
_numbers = {}  # message -> check number
_armed = set()  # devices with a check launched since their flag was last cleared
launched = 0  # checks launched in this process (a graph compares it around its capture)

_KERNEL = None

_BLURB = ("CUDA kernel errors might be asynchronously reported at some other API call, so the "
          "stacktrace below might be incorrect.\nFor debugging consider passing "
          "CUDA_LAUNCH_BLOCKING=1")


def _kernel():
    global _KERNEL
    if _KERNEL is None:
        import cupy
        _KERNEL = cupy.ElementwiseKernel(
            "T index, int64 low, int64 high, int32 number, raw int32 flag", "",
            "if (index < low || index >= high) atomicCAS((int *)&flag[0], 0, number);",
            "ember_index_check")
    return _KERNEL


def _flag(rt, device):
    ptr = _flags.get(device)
    if ptr is None:
        ptr = rt.malloc(device, 4)
        rt.memset(ptr, 0, 4, 0)
        rt.device_synchronize(device)
        _flags[device] = ptr
    return ptr


def check_range(index, low, high, message):
    """Fail the device when an element of CuPy array ``index`` is outside ``[low, high)``:
    ``message`` is raised at the next synchronisation (now, under ``CUDA_LAUNCH_BLOCKING=1``)."""
    global launched
    import cupy
    from ._runtime import get_runtime
    if index.size == 0:
        return
    rt = get_runtime()
    device = index.device.id
    with _lock:
        number = _numbers.get(message)
        if number is None:
            number = _numbers[message] = len(_messages)
            _messages.append(message)
        flag = cupy.ndarray((1,), np.int32, cupy.cuda.MemoryPointer(
            cupy.cuda.UnownedMemory(_flag(rt, device), 4, None, device), 0))
        launched += 1
    _kernel()(index, low, high, number, flag)
    arm(device)
    if os.environ.get("CUDA_LAUNCH_BLOCKING") == "1":
        rt.device_synchronize(device)
        raise_pending(rt, device, done=True)


def arm(device):
    """Mark ``device`` as having checks whose flag is still to be read."""
    _armed.add(device)


def raise_pending(rt, device, done):
    """Read ``device``'s flag if a check is pending; raise its failure (and clear it) if one
    failed. ``done``: all of the device's work has finished (a device synchronize), so a clear
    flag means every pending check passed; after a stream's or event's synchronize other streams
    may still run checks, and the device stays armed."""
    if device not in _armed:
        return
    ptr = _flags[device]
    word = np.zeros(1, np.int32)
    rt.read_flag(word, ptr, device)
    if done or word[0]:
        _armed.discard(device)
    if word[0]:
        rt.memset(ptr, 0, 4, 0)
        rt.device_synchronize(device)
        raise RuntimeError(f"CUDA error: device-side assert triggered ({_messages[word[0]]})\n"
                           f"{_BLURB}")


def raise_any_pending(rt):
    """After a stream's, an event's or a copy's synchronisation: a failed check on any device
    raises (the devices stay armed while checks may still run elsewhere)."""
    for device in list(_armed):
        raise_pending(rt, device, done=False)


def forget():
    """Drop every flag (the runtime is being replaced, as in tests)."""
    _flags.clear()
    _armed.clear()
