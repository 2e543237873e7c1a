"""Tangent propagation inside the autograd kernels: PyTorch's generated forward-derivative code
(``gen_variable_type``'s ``FW_DERIVATIVE_*`` templates) as one interpreter of a
:class:`~ember.autograd.derivatives.DerivativeInfo`'s forward formulas.

After an op has run, each visible forward level L present on a differentiable input gets the
outputs' tangents at L from the entry's ``result:`` formulas:

* ``auto_element_wise``: the backward formula of each input with ``grad`` replaced by the
  input's (conjugated) tangent, conjugated back, summed over inputs (the formula is linear in
  ``grad``);
* ``auto_linear``: the op itself applied to the tangents (missing ones are zeros), so views of
  duals are duals whose tangent is the same view of the input's tangent;
* an expression over ``<arg>_t``, ``<arg>_p`` and the results.

Levels are processed from the lowest up and each with only the levels below it visible
(:func:`ember.autograd.forward_ad._only_below`): the formula's ops then carry the lower levels'
tangents, which is what nested ``jvp`` differentiates. In-place ops write the new tangent into
the existing one (``self_t.copy_``), so views of a dual see the update; a view with no tangent
first gives its base a zero tangent and takes the matching view of it.
"""
from . import forward_ad as _fw

NOT_SUPPORTED = ("Trying to use forward AD with {} that does not support it because it has not "
                 "been implemented yet.\nPlease file an issue to PyTorch at "
                 "https://github.com/pytorch/pytorch/issues/new?template=feature-request.yml so "
                 "that we can prioritize its implementation or submit a PR adding the "
                 "implementation to derivatives.yaml")


def _is_tensor(x):
    return hasattr(x, "_keyset")


def _differentiable(t):
    d = t._dtype
    return d.is_floating_point or d.is_complex


def levels_of(args, diff_args, is_list_arg):
    """The visible levels at which a differentiable input has a tangent (sorted)."""
    found = set()
    for i in diff_args:
        a = args[i]
        items = (a or ()) if is_list_arg[i] else (a,)
        for t in items:
            d = getattr(t, "_fw_grad", None)
            if d:
                for lv in d:
                    if lv in _fw.visible:
                        found.add(lv)
    return sorted(found)


def check_supported(info, name, levels, diff_mask):
    if levels and not info.fw_formulas and any(diff_mask):
        raise NotImplementedError(NOT_SUPPORTED.format(name))


def _zeros_like(t):
    from .. import zeros_like
    return zeros_like(t)


def _tangent_or_zeros(t, level):
    if not _is_tensor(t):
        return None if t is None else 0  # a Python number in a Tensor slot: constant
    tan = _fw.get_tangent(t, level)
    if tan is None:
        tan = _zeros_like(t)
    return tan


def _conj(t):
    return t.conj() if t._dtype.is_complex else t


def compute(info, entry, level, args, outs, original_self, inplace):
    """The outputs' tangents at ``level`` (a list, None where an output has none)."""
    from . import _formulas
    from .derivatives import _DERIVED
    if not _formulas.NAMESPACE:
        _formulas.ensure_namespace()
    _formulas.NAMESPACE["_DERIVED"] = _DERIVED
    names = info.arg_names
    diff = set(info.diff_args)
    env = {}
    for i, n in enumerate(names):
        a = args[i]
        if i == 0 and inplace and original_self is not None:
            a = original_self
        env[n] = a
        env[n + "_p"] = a
        if n == "self":
            env["original_self_p"] = a
        if i in diff:  # the tangent of the argument itself (not of self's original copy)
            a = args[i]
            if info.schema.arguments[i].is_list:
                env[n + "_t"] = None if a is None else [_tangent_or_zeros(t, level) for t in a]
            else:
                env[n + "_t"] = _tangent_or_zeros(a, level)
    rn = info.result_names
    for k, n in enumerate(rn):
        idx = k if k < len(outs) else [r.name for r in info.returns].index(n)
        if len(info.returns) == 1 and n == "result":
            idx = 0
        env[n] = outs[idx] if idx < len(outs) else None
    if len(info.returns) == 1 and info.returns[0].is_list:
        env["result"] = list(outs)
    result = [None] * len(outs)
    for out_idx, kind, code, _used in info.fw_formulas:
        if kind == "auto_linear":
            vals = _auto_linear(info, entry, env, args, inplace)
        elif kind == "auto_element_wise":
            vals = _auto_element_wise(info, env, args, level)
        else:
            vals = eval(code, _formulas.NAMESPACE, env)
        if len(out_idx) == 1 and not (len(info.returns) == 1 and info.returns[0].is_list):
            result[out_idx[0]] = vals
        elif len(info.returns) == 1 and info.returns[0].is_list:
            result = list(vals)
        else:
            for i, v in zip(out_idx, vals):
                result[i] = v
    return result


def _auto_linear(info, entry, env, args, inplace):
    call = list(args)
    for i in info.diff_args:
        call[i] = env[info.arg_names[i] + "_t"]
    from .._ops.overload import ops
    op = entry.schema
    ns = getattr(ops, op.namespace or "aten")
    fn = getattr(getattr(ns, op.base_name), op.overload_name or "default")
    return fn._call(*call)


def _auto_element_wise(info, env, args, level):
    from . import _formulas
    from .derivatives import _DERIVED
    total = None
    for arg_idx, code, _text in info.formulas:
        if len(arg_idx) != 1:
            raise NotImplementedError(NOT_SUPPORTED.format(info.schema.base_name))
        i = arg_idx[0]
        a = args[i]
        if not _is_tensor(a) or _fw.get_tangent(a, level) is None:
            continue
        e = dict(env)
        for _, an, attr in info.saved_derived:
            v = env[an]
            e[f"{an}_{attr}"] = _DERIVED[attr](v) if _is_tensor(v) else None
        g = _conj(env[info.arg_names[i] + "_t"])
        e["grad"] = g
        e["grads"] = [g]
        val = _conj(eval(code, _formulas.NAMESPACE, e))
        total = val if total is None else total + val
    return total


def _fit(tangent, out):
    """A tangent laid out for ``out``: its dtype, broadcast to its shape."""
    if tangent is None:
        return None
    if tangent._dtype != out._dtype:
        if out._dtype.is_complex or not tangent._dtype.is_complex:
            tangent = tangent.to(out._dtype)
        else:
            tangent = tangent.real.to(out._dtype)
    if tuple(tangent._size) != tuple(out._size):
        tangent = tangent.expand(out._size)
    return tangent


def propagate(info, entry, levels, args, out, original_self, inplace, diff_mask, multi):
    """Give ``out`` (an op's result) its tangents at ``levels``."""
    outs = list(out) if multi else [out]
    for level in levels:
        with _fw._only_below(level):
            if inplace:
                _propagate_inplace(info, entry, level, args, outs, original_self)
                continue
            tangents = compute(info, entry, level, args, outs, original_self, inplace)
        for i, (o, t) in enumerate(zip(outs, tangents)):
            if t is None or not _is_tensor(o) or not _differentiable(o):
                continue
            if not (diff_mask[i] if i < len(diff_mask) else diff_mask[0]):
                continue
            with _fw._only_below(level):
                t = _fit(t, o)
            _fw.set_tangent(o, level, t)


def _propagate_inplace(info, entry, level, args, outs, original_self):
    self = args[0]
    if not (_is_tensor(self) and _differentiable(self)):
        return
    if info.fw_formulas and info.fw_formulas[0][1] == "auto_linear":
        _ensure_tangent(self, level)
        call = list(args)
        for i in info.diff_args:
            call[i] = _tangent_or_zeros(args[i], level) if not info.schema.arguments[i].is_list \
                else [_tangent_or_zeros(t, level) for t in args[i]]
        _call_same(entry, call)  # the in-place op on the tangent
        return
    new = compute(info, entry, level, args, outs, original_self, True)[0]
    if new is None:
        return
    new = _fit(new, self)
    old = _fw.get_tangent(self, level)
    if old is None and self._base_ is not None:
        old = _ensure_tangent(self, level)
    if old is not None and tuple(old._size) == tuple(self._size):
        old.copy_(new)
    else:
        _fw.set_tangent(self, level, new)


def _ensure_tangent(t, level):
    """``t``'s tangent at ``level``, made zero (as the matching view of its base's tangent for
    a view) when it has none."""
    tan = _fw.get_tangent(t, level)
    if tan is not None:
        return tan
    base = t._base_
    if base is not None:
        bt = _fw.get_tangent(base, level)
        if bt is None:
            bt = _zeros_like(base)
            _fw.set_tangent(base, level, bt)
        tan = bt.as_strided(t._size, t._stride, t._offset - base._offset)
    else:
        tan = _zeros_like(t)
    _fw.set_tangent(t, level, tan)
    return tan


def _call_same(entry, call):
    from .._ops.overload import ops
    op = entry.schema
    ns = getattr(ops, op.namespace or "aten")
    return getattr(getattr(ns, op.base_name), op.overload_name or "default")._call(*call)
