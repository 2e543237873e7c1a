"""``ember._inductor.exc`` (PyTorch's ``torch._inductor.exc``): the exceptions Inductor raises
while lowering a graph and while compiling the generated code."""
import os
import tempfile
import textwrap
from functools import lru_cache

__all__ = ["OperatorIssue", "LoweringException", "InvalidCxxCompiler", "CppCompileError",
           "record_missing_op"]


if os.environ.get("TORCHINDUCTOR_WRITE_MISSING_OPS") == "1":
    # PyTorch's switch for collecting the operators that have no lowering (they run as
    # fallbacks), one per line
    @lru_cache(None)
    def record_missing_op(target):
        with open(os.path.join(tempfile.gettempdir(), "missing_ops.txt"), "a") as fd:
            fd.write(str(target) + "\n")
else:
    def record_missing_op(target):
        pass


class OperatorIssue(RuntimeError):
    @staticmethod
    def operator_str(target, args, kwargs):
        lines = [f"target: {target}"] + [f"args[{i}]: {arg}" for i, arg in enumerate(args)]
        if kwargs:
            lines.append(f"kwargs: {kwargs}")
        return textwrap.indent("\n".join(lines), "  ")


class LoweringException(OperatorIssue):
    def __init__(self, exc, target, args, kwargs):
        super().__init__(f"{type(exc).__name__}: {exc}\n{self.operator_str(target, args, kwargs)}")


class InvalidCxxCompiler(RuntimeError):
    """No working compiler. PyTorch's message names its ``config.cpp.cxx``; ember builds C, so the
    message names the environment variables that choose the compiler and each one tried, with
    why it failed. ``tried`` is a list of ``(how it was chosen, command, reason)``."""

    def __init__(self, tried=(), reason=""):
        self.tried = list(tried)
        lines = ["No working C compiler found for ember._inductor's generated kernels."]
        if self.tried:
            lines.append("Tried:")
            lines += [f"  {origin}: {cmd!r}: {why}" for origin, cmd, why in self.tried]
        if reason:
            lines.append(reason)
        lines.append("Set the CC environment variable to a C compiler (or CXX to a C/C++ "
                     "compiler driver such as g++ or clang++, which is then run with -x c), "
                     "or install cc/gcc.")
        super().__init__("\n".join(lines))

    def __reduce__(self):
        return (self.__class__, (self.tried,))


class CppCompileError(RuntimeError):
    """The compiler rejected generated code: the message shows the command, the compiler's
    output and, beyond PyTorch, the path of the source file kept in the cache directory."""

    def __init__(self, cmd, output, source_path=None):
        if isinstance(output, bytes):
            output = output.decode("utf-8", errors="replace")
        self.cmd = list(cmd)
        self.output = output
        self.source_path = source_path
        msg = f"C++ compile error\n\nCommand:\n{' '.join(self.cmd)}\n\nOutput:\n{output}"
        if source_path is not None:
            msg += f"\n\nSource file:\n{source_path}"
        super().__init__(msg)

    def __reduce__(self):
        return (self.__class__, (self.cmd, self.output, self.source_path))
