"""``ember._logging`` (PyTorch's ``torch._logging``): the ``TORCH_LOGS`` switches and
``set_logs`` for the compiler's Python loggers.

Components are loggers (``dynamo`` -> ``ember._dynamo``); artifacts are single-purpose loggers
under them (``graph_breaks`` -> ``ember._dynamo.__graph_breaks``, ``recompiles``, ``guards``,
``graph_code``, ``bytecode``, ``output_code``: Inductor's generated code, ``perf_hints``:
what kept Inductor from a faster path, such as a graph left out of CUDA graphs).
``TORCH_LOGS="dynamo,graph_breaks"`` (read when ember._dynamo is imported) or
``set_logs(dynamo=logging.INFO, graph_breaks=True)`` turns them on; a ``+``
prefix means DEBUG, a ``-`` prefix ERROR, as in PyTorch. Records go to stderr through one
handler on the ``ember`` logger."""
import logging
import os
import sys

__all__ = ["set_logs", "getArtifactLogger"]

COMPONENTS = {"dynamo": "ember._dynamo", "inductor": "ember._inductor",
              "aot": "ember._functorch.aot_autograd", "fx": "ember.fx"}
ARTIFACTS = {"graph_breaks": "ember._dynamo.__graph_breaks",
             "recompiles": "ember._dynamo.__recompiles",
             "guards": "ember._dynamo.__guards",
             "graph_code": "ember._dynamo.__graph_code",
             "graph": "ember._dynamo.__graph_code",
             "bytecode": "ember._dynamo.__bytecode",
             "output_code": "ember._inductor.__output_code",
             "perf_hints": "ember._inductor.__perf_hints"}
_handler = None


def getArtifactLogger(module_qname, artifact_name):
    return logging.getLogger(ARTIFACTS.get(artifact_name, f"{module_qname}.__{artifact_name}"))


def _ensure_handler():
    global _handler
    if _handler is None:
        _handler = logging.StreamHandler(sys.stderr)
        _handler.setFormatter(logging.Formatter("[%(name)s] %(message)s"))
        root = logging.getLogger("ember")
        root.addHandler(_handler)


def _reset():
    for name in COMPONENTS.values():
        logging.getLogger(name).setLevel(logging.NOTSET)
    # an artifact is off until named, even under a component at DEBUG ("+dynamo")
    for name in ARTIFACTS.values():
        logging.getLogger(name).setLevel(logging.WARNING)
    logging.getLogger("ember").setLevel(logging.NOTSET)


def set_logs(**kwargs):
    """``set_logs(dynamo=logging.DEBUG, graph_breaks=True, ...)``: components take a level,
    artifacts a bool. A call replaces the previous settings, as PyTorch's does."""
    _reset()
    any_on = False
    for key, value in kwargs.items():
        if key in COMPONENTS:
            if value is None:
                continue
            logging.getLogger(COMPONENTS[key]).setLevel(value)
            any_on = True
        elif key in ARTIFACTS:
            lg = logging.getLogger(ARTIFACTS[key])
            if value:
                lg.setLevel(logging.DEBUG)
                any_on = True
        else:
            raise ValueError(f"Unrecognized log or artifact name passed to set_logs: {key}")
    if any_on:
        _ensure_handler()
        logging.getLogger("ember").propagate = True


def _parse_torch_logs(spec):
    out = {}
    for item in filter(None, (s.strip() for s in spec.split(","))):
        level = logging.INFO
        if item.startswith("+"):
            item, level = item[1:], logging.DEBUG
        elif item.startswith("-"):
            item, level = item[1:], logging.ERROR
        if item in COMPONENTS:
            out[item] = level
        elif item in ARTIFACTS:
            out[item] = True
        else:
            raise ValueError(f"Unknown TORCH_LOGS setting: {item!r}; valid: "
                             f"{sorted(COMPONENTS) + sorted(ARTIFACTS)}")
    return out


def _init_from_env():
    spec = os.environ.get("TORCH_LOGS")
    if spec:
        set_logs(**_parse_torch_logs(spec))
