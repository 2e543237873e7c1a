"""``ember.futures``: PyTorch's ``Future`` (the value of an asynchronous operation, e.g. a
collective's ``Work.get_future()``), with ``then`` chaining and ``collect_all``.

A future either is completed by ``set_result``/``set_exception`` (from any thread), or is driven
by the operation behind it: waiting on it (or on a future chained from it with ``then``) makes
that operation progress, since MPI's non-blocking requests advance only when they are tested.
"""
import threading
from typing import Generic, TypeVar

__all__ = ["Future", "collect_all", "wait_all"]

T = TypeVar("T")


class Future(Generic[T]):  # (annotations say Future[Tensor], as with PyTorch's)
    def __init__(self, *, devices=None):
        self._done = False
        self._value = None
        self._exc = None
        self._callbacks = []
        self._event = threading.Event()
        self._driver = None  # driver(block): make the operation behind this future progress

    def done(self):
        if not self._done and self._driver is not None:
            self._driver(False)
        return self._done

    def wait(self):
        """Block until completed; returns the value or raises the operation's error."""
        if not self._done:
            if self._driver is not None:
                self._driver(True)
            if not self._done:
                self._event.wait()
        if self._exc is not None:
            raise self._exc
        return self._value

    def value(self):
        if not self.done():
            raise RuntimeError("Future.value() called before the future completed; call wait()")
        if self._exc is not None:
            raise self._exc
        return self._value

    def set_result(self, result):
        if self._done:
            raise RuntimeError("Future can only be marked completed once.")
        self._value = result
        self._finish()

    def set_exception(self, result):
        if self._done:
            raise RuntimeError("Future can only be marked completed once.")
        self._exc = result
        self._finish()

    def _finish(self):
        self._done = True
        self._event.set()
        cbs, self._callbacks = self._callbacks, []
        for cb in cbs:
            cb(self)

    def add_done_callback(self, callback):
        if self._done:
            callback(self)
        else:
            self._callbacks.append(callback)

    def then(self, callback):
        """A future for ``callback(self)``, run when this one completes."""
        fut = Future()

        def run(parent):
            try:
                fut.set_result(callback(parent))
            except Exception as e:  # the chained future carries the callback's error
                fut.set_exception(e)

        def drive(block):
            try:
                self.wait() if block else self.done()
            except Exception:
                pass  # the error reaches ``callback`` through the completed parent

        fut._driver = drive
        self.add_done_callback(run)
        return fut


def collect_all(futures):
    """A future completed with the list of ``futures`` once all of them have completed."""
    futures = list(futures)
    out = Future()
    out._driver = lambda block: ([f.wait() for f in futures] if block
                                 else all(f.done() for f in futures))
    remaining = [len(futures)]

    def one(_):
        remaining[0] -= 1
        if remaining[0] == 0:
            out.set_result(futures)

    if not futures:
        out.set_result([])
    for f in futures:
        f.add_done_callback(one)
    return out


def wait_all(futures):
    return [f.wait() for f in futures]
