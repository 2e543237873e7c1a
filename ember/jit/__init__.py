"""``ember.jit``: the front door of PyTorch's ``torch.jit`` on ember's compile pipeline.

What each entry point does here:

* ``trace(fn_or_module, example_inputs)`` runs the code once on the example inputs and records
  the ATen ops it ran into an ``ember.fx`` graph (``make_fx`` on real tensors; a module's
  parameters and buffers are graph inputs, so the ``TracedModule`` shares them with the original
  and trains like it). Python control flow is frozen at trace time; converting a tensor to a
  Python value warns with ``TracerWarning`` (PyTorch's message). ``check_trace`` re-traces on the
  check inputs (the graphs must agree, else ``TracingCheckError``) and compares the outputs with
  the Python function's (a ``TracerWarning`` on mismatch), as PyTorch. Sizes are literals in the
  graph (PyTorch's tracer records size arithmetic instead): a call with other input shapes
  records a new graph from the Python code.
* ``script(fn_or_module)`` does NOT compile Python as TorchScript. It runs the object through
  ``ember.compile(..., fullgraph=True, backend="eager")`` when that captures the whole forward in
  one graph, and eagerly as plain Python when capture fails; a one-time ``UserWarning`` at the
  first call says which. ``.graph``/``.code`` are the captured fx graph (available after the
  first call). ``is_scripting()`` is False, since the Python code is what runs. A class is
  checked as PyTorch checks a TorchScript class and returned as it is (its Python methods run).
* ``save``/``load`` (and ``ScriptModule.save``) write an ``ember.export`` program, exported on
  the inputs recorded at trace time (or at a scripted object's first call), with a marker; the
  loaded ``RecursiveScriptModule`` runs that program. Like ``ember.export``, the saved program is
  specialised to those input shapes.
* ``script_if_tracing`` returns the function (traced like any other: see its docstring).
* ``ignore``, ``unused``, ``export``, ``Final``, ``annotate``, ``Attribute``, ``fork``/``wait``
  (run synchronously, a completed ``ember.futures.Future``) behave as in eager PyTorch; calling
  an ``@unused`` method through a script module raises, as in PyTorch.

Out of scope: the TorchScript IR (``.graph`` is an ``ember.fx`` graph, not ``torch._C.Graph``),
the TorchScript language (static typing of Python, TorchScript classes, ``@script_method``;
``@interface`` classes are checked and returned as they are, and ``isinstance`` checks container
element types as in eager PyTorch), the C++ runtime (``torch::jit::load``), files written by PyTorch's
``torch.jit.save`` (and PyTorch cannot read ember's), ``freeze``/``optimize_for_inference`` (they
rewrite TorchScript IR; no equivalent is provided), and tracing of methods other than forward.
"""
from ._internal import (Attribute, Final, annotate, export, fork, ignore,  # noqa: F401
                        interface, is_scripting, is_tracing, script_if_tracing, unused, wait)
from ._internal import jit_isinstance as isinstance  # noqa: F401,A001  (PyTorch's name)
from ._script import (RecursiveScriptModule, ScriptFunction, ScriptModule,  # noqa: F401
                      TracedModule, script)
from ._serialization import load, save  # noqa: F401
from ._trace import TracerWarning, TracingCheckError, trace, trace_module  # noqa: F401

__all__ = ["trace", "trace_module", "script", "save", "load", "ScriptModule", "ScriptFunction",
           "RecursiveScriptModule", "TracedModule", "TracerWarning", "TracingCheckError",
           "ignore", "unused", "export", "Final", "annotate", "Attribute", "is_scripting",
           "is_tracing", "script_if_tracing", "fork", "wait", "interface", "isinstance"]

# typed-overload declarations (PyG's `from torch.jit import _overload as overload`)
from ._internal import _overload, _overload_method, _script_if_tracing  # noqa: E402,F401
from . import annotations  # noqa: E402,F401
