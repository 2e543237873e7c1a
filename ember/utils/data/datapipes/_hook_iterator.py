"""The single-iterator-per-IterDataPipe rule: every ``__iter__`` of an ``IterDataPipe`` class
is wrapped (by the metaclass, through :func:`hook_iterator`) so that creating an iterator gives
the datapipe a new iterator id and resets it, and using an older iterator raises. The wrapper
also counts samples yielded (for snapshot restoring), opens a profiler range per ``next`` while
ember's profiler runs, and appends "This exception is thrown by __iter__ of ..." to errors."""
import functools
import inspect
from enum import Enum

from ....profiler import _recorder


class _SnapshotState(Enum):
    """``NotStarted``: may restore a snapshot, a new iterator resets. ``Restored``: the next
    iterator does not reset. ``Iterating``: may restore, a new iterator resets."""

    NotStarted = 0
    Restored = 1
    Iterating = 2


def _simplify_obj_name(obj) -> str:
    return obj.__name__ if inspect.isfunction(obj) else repr(obj)


def _strip_datapipe_from_name(name: str) -> str:
    return name.replace("IterDataPipe", "").replace("MapDataPipe", "")


def _generate_input_args_string(obj):
    """``name=value, ...`` for the constructor parameters that are attributes of ``obj``, in
    ``inspect.getmembers`` (alphabetical) order."""
    input_param_names = set(inspect.signature(obj.__class__).parameters.keys())
    result = [(name, _simplify_obj_name(value)) for name, value in inspect.getmembers(obj)
              if name in input_param_names]
    return ", ".join(f"{name}={value}" for name, value in result)


def _generate_iterdatapipe_msg(datapipe, simplify_dp_name: bool = False):
    output_string = f"{datapipe.__class__.__name__}({_generate_input_args_string(datapipe)})"
    return _strip_datapipe_from_name(output_string) if simplify_dp_name else output_string


def _gen_invalid_iterdatapipe_msg(datapipe):
    return ("This iterator has been invalidated because another iterator has been created "
            f"from the same IterDataPipe: {_generate_iterdatapipe_msg(datapipe)}\n"
            "This may be caused by multiple references to the same IterDataPipe. We recommend "
            "using `.fork()` if that is necessary.")


_feedback_msg = ("\nFor feedback regarding this single iterator per IterDataPipe constraint, feel "
                 "free to comment on this issue: https://github.com/pytorch/data/issues/45.")


def _check_iterator_valid(datapipe, iterator_id, next_method_exists=False):
    """Raise ``RuntimeError`` if ``iterator_id`` is no longer the datapipe's valid one (for a
    fork/demux child: also its container's)."""
    if next_method_exists:
        # __iter__ and __next__ on the datapipe: at most one iterator (id 0) may ever exist
        if datapipe._valid_iterator_id is not None and datapipe._valid_iterator_id != 0:
            extra_msg = ("\nNote that this exception is raised inside your IterDataPipe's a "
                         "`__next__` method")
            raise RuntimeError(_gen_invalid_iterdatapipe_msg(datapipe) + extra_msg
                               + _feedback_msg)
    elif getattr(datapipe, "_is_child_datapipe", False) is True:
        if not hasattr(datapipe, "_check_valid_iterator_id"):
            raise RuntimeError("ChildDataPipe must have method `_check_valid_iterator_id`.")
        if not datapipe._check_valid_iterator_id(iterator_id):
            raise RuntimeError("This iterator has been invalidated, because a new iterator has "
                               "been created from one of the ChildDataPipes of "
                               f"{_generate_iterdatapipe_msg(datapipe.main_datapipe)}."
                               + _feedback_msg)
    elif datapipe._valid_iterator_id != iterator_id:
        raise RuntimeError(_gen_invalid_iterdatapipe_msg(datapipe) + _feedback_msg)


def _set_datapipe_valid_iterator_id(datapipe):
    """A new iterator: bump the datapipe's valid id (a child defers to its container) and
    reset it. Returns the new id."""
    if getattr(datapipe, "_is_child_datapipe", False) is True:
        if not hasattr(datapipe, "_set_main_datapipe_valid_iterator_id"):
            raise RuntimeError(
                "ChildDataPipe must have method `_set_main_datapipe_valid_iterator_id`.")
        datapipe._set_main_datapipe_valid_iterator_id()  # resets the container when due
    else:
        datapipe._valid_iterator_id = (0 if datapipe._valid_iterator_id is None
                                       else datapipe._valid_iterator_id + 1)
        datapipe.reset()
    return datapipe._valid_iterator_id


def _profiler_enabled():
    return _recorder._active[0] is not None


def _profiler_record_fn_context(datapipe):
    if not hasattr(datapipe, "_profile_name"):
        datapipe._profile_name = _generate_iterdatapipe_msg(datapipe, simplify_dp_name=True)
    return _recorder.record_function(datapipe._profile_name)


class IteratorDecorator:
    """The iterator handed out for an ``__iter__`` that is not a generator function (it
    usually returns ``self``): checks validity and counts samples on each ``next``."""

    def __init__(self, iterator, datapipe, iterator_id, has_next_method):
        self.iterator = iterator
        self.datapipe = datapipe
        self.iterator_id = iterator_id
        self._profiler_enabled = _profiler_enabled()
        # the wrapped __next__ counts samples itself in that case
        self.self_and_has_next_method = self.iterator is self.datapipe and has_next_method

    def __iter__(self):
        return self

    def _get_next(self):
        _check_iterator_valid(self.datapipe, self.iterator_id)
        result = next(self.iterator)
        if not self.self_and_has_next_method:
            self.datapipe._number_of_samples_yielded += 1
        return result

    def __next__(self):
        if self._profiler_enabled:
            with _profiler_record_fn_context(self.datapipe):
                return self._get_next()
        return self._get_next()

    def __getattr__(self, name):
        return getattr(self.iterator, name)


def _annotate_exception(e, datapipe):
    """Append which datapipe's ``__iter__`` raised, once (not to the rule's own errors)."""
    msg = "thrown by __iter__ of"
    if not hasattr(e.args, "__len__"):
        return
    full_msg = (f"{msg} {datapipe.__class__.__name__}"
                f"({_generate_input_args_string(datapipe)})")
    if len(e.args) == 0 or not isinstance(e.args[0], str):
        e.args = (f"\nThis exception is {full_msg}",)
    elif msg not in e.args[0] and "single iterator per IterDataPipe constraint" not in e.args[0]:
        e.args = (e.args[0] + f"\nThis exception is {full_msg}",) + e.args[1:]


def hook_iterator(namespace):
    """Wrap ``namespace['__iter__']`` (and ``__next__``) of an IterDataPipe class being
    created."""
    func = namespace["__iter__"]

    if inspect.isgeneratorfunction(func):
        @functools.wraps(func)
        def wrap_generator(*args, **kwargs):
            # a generator itself: nothing (not even the reset) happens before the first next()
            gen = func(*args, **kwargs)
            datapipe = args[0]
            if datapipe._fast_forward_iterator:
                it = datapipe._fast_forward_iterator
                datapipe._fast_forward_iterator = None
                datapipe._snapshot_state = _SnapshotState.Iterating
                while True:
                    try:
                        yield next(it)
                    except StopIteration:
                        return
            iterator_id = _set_datapipe_valid_iterator_id(datapipe)
            profiling = _profiler_enabled()
            try:
                if profiling:
                    with _profiler_record_fn_context(datapipe):
                        response = gen.send(None)
                else:
                    response = gen.send(None)
                while True:
                    datapipe._number_of_samples_yielded += 1
                    request = yield response
                    if profiling:
                        with _profiler_record_fn_context(datapipe):
                            _check_iterator_valid(datapipe, iterator_id)
                            response = gen.send(request)
                    else:
                        _check_iterator_valid(datapipe, iterator_id)
                        response = gen.send(request)
            except StopIteration:
                return
            except Exception as e:
                _annotate_exception(e, args[0])
                raise

        namespace["__iter__"] = wrap_generator
        return

    has_next = "__next__" in namespace
    if has_next:
        next_func = namespace["__next__"]

        @functools.wraps(next_func)
        def wrap_next(*args, **kwargs):
            datapipe = args[0]
            if _profiler_enabled():
                with _profiler_record_fn_context(datapipe):
                    result = next_func(*args, **kwargs)
            else:
                result = next_func(*args, **kwargs)
            datapipe._number_of_samples_yielded += 1
            return result

        namespace["__next__"] = wrap_next

    @functools.wraps(func)
    def wrap_iter(*args, **kwargs):
        iter_ret = func(*args, **kwargs)
        datapipe = args[0]
        datapipe._snapshot_state = _SnapshotState.Iterating
        if datapipe._fast_forward_iterator:
            iter_ret = datapipe._fast_forward_iterator
            datapipe._fast_forward_iterator = None
            return iter_ret
        iterator_id = _set_datapipe_valid_iterator_id(datapipe)
        return IteratorDecorator(iter_ret, datapipe, iterator_id, has_next)

    namespace["__iter__"] = wrap_iter
