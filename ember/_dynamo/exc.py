"""Dynamo's exceptions (PyTorch's ``torch._dynamo.exc``): what a capture raises and why."""
import textwrap
from enum import Enum, auto

__all__ = ["TorchDynamoException", "Unsupported", "RestartAnalysis",
           "TensorifyScalarRestartAnalysis", "BackendCompilerFailed",
           "InternalTorchDynamoError", "RecompileError", "InvalidBackend", "unimplemented",
           "UserError", "UserErrorType", "SkipFrame", "UncapturedHigherOrderOpError",
           "TorchRuntimeError", "ObservedException", "format_graph_break_message"]


class TorchDynamoException(RuntimeError):
    pass


class InternalTorchDynamoError(TorchDynamoException):
    pass


class TorchRuntimeError(TorchDynamoException):
    """An op failed on the FakeTensors of a capture (an eager ``scan`` is a capture in
    PyTorch, so it raises this for a body whose outputs cannot be stacked)."""


class Unsupported(TorchDynamoException):
    """A construct the symbolic interpreter cannot capture; becomes a graph break, or the error
    itself under ``fullgraph=True``. ``user_stack`` holds the user's frames (file, line)."""

    def __init__(self, msg, *, case_name=None):
        super().__init__(msg)
        self.msg = msg
        self.real_stack = []
        self.case_name = case_name
        # set when ``error_on_graph_break(True)`` was in effect where it was raised: it reaches
        # the caller instead of becoming a graph break or a skipped frame
        self.error_on_graph_break = False

    def add_user_stack(self, stack):
        if not self.real_stack:
            self.real_stack = list(stack)
            if stack:  # outermost first, as PyTorch prints it
                frames = "".join(f"   File \"{fs.filename}\", line {fs.lineno}, in {fs.name}\n"
                                 f"    {fs.line or ''}\n" for fs in stack)
                self.args = (f"{self.msg}\n\nfrom user code:\n{frames.rstrip()}",)


class UserErrorDuringTrace(Unsupported):
    """An op raised on FakeTensors: most likely the user's program raises there. The call runs
    eagerly (nothing cached), so the user's exception surfaces as in eager, with their frames."""


class ObservedException(Unsupported):
    """Captured code raised ``exc`` (an ExceptionVariable). Each interpreter frame it passes
    through sends it to the handler its exception table names, or passes it on to its
    caller; out of the compiled frame it is an ``Unsupported`` like any (a graph break at the
    call it came from, whose residual call raises it for real; else the frame runs eagerly)."""

    def __init__(self, exc):
        super().__init__(f"{exc.cls.__name__} raised in captured code and not caught there")
        self.exc = exc


class UncapturedHigherOrderOpError(TorchDynamoException):
    """A region that must be captured whole (``nested_compile_region``) met a graph break."""

    def __init__(self, msg, real_stack=()):
        super().__init__(msg)
        self.msg = msg
        self.real_stack = list(real_stack)


class SkipFrame(TorchDynamoException):
    """The frame being captured is run eagerly, without a graph (``torch._dynamo.skip_frame()``
    raises it from captured code); ``real_stack`` holds the user's frames."""

    def __init__(self, msg, real_stack=(), compile_callees=False):
        super().__init__(msg)
        self.msg = msg
        self.real_stack = list(real_stack)
        # a graph break in a loop: the frame's calls of user code are still captured
        self.compile_callees = compile_callees


class RestartAnalysis(TorchDynamoException):
    """Internal: the frame is analysed again with more knowledge (where to break)."""


class TensorifyScalarRestartAnalysis(RestartAnalysis):
    """PyTorch's restart when a float scalar becomes a tensor input of the graph. ember
    specialises on float scalars instead and never raises it; code that catches it (kornia's
    RANSAC) imports it."""


class BackendCompilerFailed(TorchDynamoException):
    def __init__(self, backend_fn, inner_exception, graph_name=None):
        self.backend_name = getattr(backend_fn, "__name__", "?")
        self.inner_exception = inner_exception
        where = f" while compiling {graph_name}" if graph_name else ""
        super().__init__(f"backend={self.backend_name!r} raised{where}:\n"
                         f"{type(inner_exception).__name__}: {inner_exception}")


def unimplemented(msg):
    raise Unsupported(msg)


# PyTorch's graph-break registry ids of the breaks ember reports in PyTorch's words
_GB_IDS = {"Attempted to call function marked as skipped": "0007",
           "Failed to trace builtin operator": "0059",
           "Invalid call to __build_class__": "8977",
           "Observed exception": "0088",
           "Unsupported Tensor.item() call with capture_scalar_outputs=False": "0124",
           "Data-dependent branching": "0170"}
FUNDAMENTAL_HINT = ("This graph break is fundamental - it is unlikely that Dynamo will ever be "
                    "able to trace through your code. Consider finding a workaround.")
SUPPORTABLE_HINT = ("It may be possible to write Dynamo tracing rules for this code. Please report "
                    "an issue to PyTorch if you encounter this graph break often and it is "
                    "causing performance issues.")
USER_ERROR_HINT = ("Your code may result in an error when running in eager. Please double check "
                   "that your code doesn't contain a similar error when actually running "
                   "eager/uncompiled. You can do this by removing the `torch.compile` call, or "
                   "by using `torch.compiler.set_stance(\"force_eager\")`. ")


def format_graph_break_message(gb_type, context, explanation, hints):
    """A graph break's message as PyTorch writes it: its type on the first line (what
    ``explain`` shows first), then the explanation, hints, the developer context and the
    type's page on PyTorch's graph-break site."""
    def indent(text):
        return textwrap.indent(text, "    ").lstrip()
    hints_str = "\n".join("  Hint: " + indent(h) for h in hints)
    msg = (f"{gb_type}\n  Explanation: {indent(explanation)}\n{hints_str}\n\n"
           f"  Developer debug context: {indent(context)}")
    if gb_type in _GB_IDS:
        msg += ("\n\n For more details about this graph break, please visit: "
                f"https://meta-pytorch.github.io/compile-graph-break-site/gb/"
                f"gb{_GB_IDS[gb_type]}.html")
    return msg


class RecompileError(TorchDynamoException):
    pass


class InvalidBackend(TorchDynamoException):
    def __init__(self, name):
        super().__init__(f"Invalid backend: {name!r}, run `torch._dynamo.list_backends()` to "
                         f"see valid backends.")


def exportdb_error_message(case_name):
    return ("For more information about this error, see: "
            "https://pytorch.org/docs/main/generated/exportdb/index.html#"
            + case_name.replace("_", "-"))


class UserErrorType(Enum):
    DYNAMIC_CONTROL_FLOW = auto()
    ANTI_PATTERN = auto()
    STANDARD_LIBRARY = auto()
    CONSTRAINT_VIOLATION = auto()
    DYNAMIC_DIM = auto()
    INVALID_INPUT = auto()
    INVALID_OUTPUT = auto()
    UNSUPPORTED_ALIASED_MUTATED_DYNAMIC_INPUTS = auto()


class UserError(TorchDynamoException):
    """A program valid in eager that capture or export cannot take as the user wrote it (a
    dynamic_shapes spec the program contradicts); the message says what to change."""

    def __init__(self, error_type, msg, case_name=None):
        if case_name is not None:  # a pointer to the exportdb example of this error
            msg += " " if msg.endswith(".") else "\n"
            msg += exportdb_error_message(case_name)
        super().__init__(msg)
        self.error_type = error_type
        self.case_name = case_name
