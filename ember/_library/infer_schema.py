"""``infer_schema``: an operator schema from a Python function's type hints (PyTorch's rules:
``int`` is ``SymInt``, ``Union[int, float, bool]`` is ``Scalar``, a mutated Tensor argument
``x`` at position ``i`` is ``Tensor(ai!) x``, ``-> None`` is ``-> ()``)."""
import collections.abc
import inspect
import typing

__all__ = ["infer_schema"]


def _scalar_types():
    from .._core.device import device
    from .._core.dtype import dtype
    from .._tensor import Tensor
    return {Tensor: "Tensor", int: "SymInt", float: "float", bool: "bool", str: "str",
            typing.Union[int, float, bool]: "Scalar", dtype: "ScalarType", device: "Device"}


def _type_table():
    """annotation -> schema type, with the Optional / Sequence / list variants PyTorch lists."""
    table = {}
    for py, name in _scalar_types().items():
        table[py] = name
        table[typing.Optional[py]] = name + "?"
        if name in ("str", "ScalarType", "Device"):
            continue
        seqs = (typing.Sequence[py], typing.List[py], collections.abc.Sequence[py], list[py])
        for s in seqs:
            table[s] = name + "[]"
            if name != "Tensor":
                table[typing.Optional[s]] = name + "[]?"
        if name == "Tensor":
            opt = typing.Optional[py]
            for s in (typing.Sequence[opt], typing.List[opt], collections.abc.Sequence[opt],
                      list[opt]):
                table[s] = "Tensor?[]"
    return table


def _return_type(ann, table, error):
    if ann is None or ann is type(None):
        return "()"
    origin = typing.get_origin(ann)
    if origin is tuple:
        return "(" + ", ".join(_return_type(a, table, error) for a in typing.get_args(ann)) + ")"
    t = table.get(ann)
    if t is None or t.endswith("?"):
        error(f"Return has unsupported type {ann}.")
    return t


def _default(v, error, name):
    if v is None:
        return "None"
    if isinstance(v, bool):
        return str(v)
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, str):
        return f'"{v}"'
    error(f"Parameter {name} has an unsupported default value type {type(v)}. Please file an "
          f"issue on GitHub so we can prioritize this.")


def infer_schema(prototype_function, /, *, mutates_args, op_name=None):
    """The schema string for ``prototype_function`` (without a name unless ``op_name``)."""
    sig = inspect.signature(prototype_function)

    def error(what):
        raise ValueError(f"infer_schema(func): {what} Got func with signature {sig})")
    hints = typing.get_type_hints(prototype_function)
    table = _type_table()
    params = []
    seen_kwonly = False
    names = list(sig.parameters)
    if mutates_args != "unknown":
        if isinstance(mutates_args, str):
            error("mutates_args must be a tuple/list/set of argument names or 'unknown'.")
        missing = set(mutates_args) - set(names)
        if missing:
            error(f"{missing} in mutates_args were not found in the custom op's signature. "
                  f"mutates_args should contain the names of all args that the custom op "
                  f"mutates, or just the string 'unknown' if you don't know.")
    for idx, (name, p) in enumerate(sig.parameters.items()):
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            error("We do not support positional-only args, varargs, or varkwargs.")
        if name not in hints:
            error(f"Parameter {name} must have a type annotation.")
        t = table.get(hints[name])
        if t is None:
            error(f"Parameter {name} has unsupported type {hints[name]}. The valid types are: "
                  f"{list(table)}.")
        if p.kind == p.KEYWORD_ONLY and not seen_kwonly:
            params.append("*")
            seen_kwonly = True
        mutated = mutates_args == "unknown" or name in mutates_args
        if mutated:
            if not t.startswith("Tensor"):
                error(f"Parameter {name} is in mutable_args but only Tensors or collections of "
                      f"Tensors can be mutated")
            t = t.replace("Tensor", f"Tensor(a{idx}!)", 1)
        s = f"{t} {name}"
        if p.default is not p.empty:
            s += "=" + _default(p.default, error, name)
        params.append(s)
    if "return" not in hints:
        error("No return type annotation was provided. Please add one.")
    ret = _return_type(hints["return"], table, error)
    schema = f"({', '.join(params)}) -> {ret}"
    return f"{op_name}{schema}" if op_name else schema
