"""``ember.autograd.functional``: ``vjp`` and ``jacobian`` built on :func:`ember.autograd.grad`."""
__all__ = ["vjp", "jacobian"]


def _as_tuple(x):
    return (tuple(x), True) if isinstance(x, (tuple, list)) else ((x,), False)


def vjp(func, inputs, v=None, create_graph=False, strict=False):
    """(outputs, v^T J) of ``func`` at ``inputs``."""
    from . import grad, enable_grad
    inputs, is_tuple = _as_tuple(inputs)
    with enable_grad():
        inp = tuple(x.detach().requires_grad_(True) for x in inputs)
        out = func(*inp)
        outs, out_tuple = _as_tuple(out)
        vs = _as_tuple(v)[0] if v is not None else None
        gs = grad(outs, inp, vs, create_graph=create_graph, allow_unused=True)
    import ember
    gs = tuple(g if g is not None else ember.zeros_like(x) for g, x in zip(gs, inp))
    outs = tuple(o if create_graph else o.detach() for o in outs)
    return (outs if out_tuple else outs[0]), (gs if is_tuple else gs[0])


def jacobian(func, inputs, create_graph=False, strict=False, vectorize=False, strategy="reverse-mode"):
    """The Jacobian of ``func`` at ``inputs``, one ``autograd.grad`` call per output element."""
    import ember
    from . import grad, enable_grad
    inputs, is_tuple = _as_tuple(inputs)
    with enable_grad():
        inp = tuple(x.detach().requires_grad_(True) for x in inputs)
        out = func(*inp)
        outs, out_tuple = _as_tuple(out)
        result = []
        for o in outs:
            rows = [[] for _ in inp]
            flat = o.reshape(-1)
            for k in range(flat.numel()):
                gs = grad((flat[k],), inp, retain_graph=True, create_graph=create_graph,
                          allow_unused=True)
                for r, g, x in zip(rows, gs, inp):
                    r.append(g if g is not None else ember.zeros_like(x))
            per_in = tuple(ember.stack(r).reshape(tuple(o.shape) + tuple(x.shape))
                           if r else ember.zeros(tuple(o.shape) + tuple(x.shape))
                           for r, x in zip(rows, inp))
            result.append(per_in if is_tuple else per_in[0])
    return tuple(result) if out_tuple else result[0]
