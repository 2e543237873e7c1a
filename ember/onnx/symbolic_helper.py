"""``torch.onnx.symbolic_helper``: the decorator custom symbolic functions are written with.

``parse_args("v", "i", "fs")`` states what each input of a symbolic function is. PyTorch converts
TorchScript constants to those Python types; ember's exporter already hands a symbolic function
Python values for constants and :class:`~ember.onnx._symbolic.SymbolicValue` objects for
tensors (see ``ember/onnx/_symbolic.py``), so the decorator keeps PyTorch's checks on the call
and passes the values through."""
import functools

__all__ = ["parse_args"]

_FILE_BUG_MSG = ("If you believe this is not due to custom symbolic implementation within your "
                 "code or an external library, please file an issue at "
                 "https://github.com/pytorch/pytorch/issues/new?template=bug-report.yml to "
                 "report this bug.")


def parse_args(*arg_descriptors):
    """Declare the inputs of a symbolic function ``fn(g, *inputs)``: "v" (a value), "i", "is",
    "f", "fs", "b", "s", "t" or "none"."""
    def decorator(fn):
        fn._arg_descriptors = arg_descriptors

        @functools.wraps(fn)
        def wrapper(g, *args, **kwargs):
            if len(arg_descriptors) < len(args):
                raise AssertionError(
                    f"A mismatch between the number of arguments ({len(args)}) and their "
                    f"descriptors ({len(arg_descriptors)}) was found at symbolic function "
                    f"'{fn.__name__}'. {_FILE_BUG_MSG}")
            if len(kwargs) > 1:
                raise AssertionError(f"Symbolic function {fn.__name__}'s '**kwargs' can contain "
                                     f"a single key/value entry. {_FILE_BUG_MSG}")
            if kwargs and "_outputs" not in kwargs:
                raise AssertionError(f"Symbolic function {fn.__name__}'s '**kwargs' can only "
                                     f"contain '_outputs' key at '**kwargs'. {_FILE_BUG_MSG}")
            return fn(g, *args, **kwargs)
        return wrapper
    return decorator
