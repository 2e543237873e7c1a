"""``gradcheck`` / ``gradgradcheck``: compare autograd's gradients with central finite
differences (PyTorch's ``torch/autograd/gradcheck.py``, slow mode).

The numerical Jacobian perturbs each input element by ``±eps`` (inputs should be float64) and
differentiates the outputs; the analytical one runs ``autograd.grad`` once per output element
with a one-hot ``grad_outputs``. Perturbation writes the input's host buffer directly: this is a
testing tool for CPU tensors, not an operator.
"""
import numpy as np

__all__ = ["gradcheck", "gradgradcheck", "GradcheckError"]


class GradcheckError(RuntimeError):
    pass


def _is_tensor(x):
    return hasattr(x, "_keyset")


def _as_tuple(x):
    return tuple(x) if isinstance(x, (tuple, list)) else (x,)


def _outputs(func, inputs):
    import ember
    with ember.no_grad():
        out = _as_tuple(func(*inputs))
    # (resolved: a conjugate or negative view's memory is not its values)
    return [np.array(o.detach().resolve_conj().resolve_neg()._nd(), dtype=np.float64, copy=True)
            if _is_tensor(o) else None for o in out]


def _numerical_jacobian(func, inputs, idx, eps):
    x = inputs[idx]
    buf = x._nd()  # writable host view of the input (shares its storage)
    base_out = _outputs(func, inputs)
    jac = [np.zeros((buf.size, o.size if o is not None else 0)) for o in base_out]
    flat_idx = list(np.ndindex(buf.shape)) if buf.ndim else [()]
    for k, pos in enumerate(flat_idx):
        orig = buf[pos].copy()
        buf[pos] = orig + eps
        plus = _outputs(func, inputs)
        buf[pos] = orig - eps
        minus = _outputs(func, inputs)
        buf[pos] = orig
        for j, (p, m) in enumerate(zip(plus, minus)):
            if p is not None:
                jac[j][k] = ((p - m) / (2 * eps)).reshape(-1)
    return jac


def _analytical_jacobian(func, inputs, diff_idx):
    import ember
    from . import grad as autograd_grad
    """Jacobians of the outputs that require grad: ({(output, input): matrix}, their indices)."""
    outs = _as_tuple(func(*inputs))
    diff_inputs = [inputs[i] for i in diff_idx]
    jacs = {}
    diff_outputs = set()
    for j, o in enumerate(outs):
        if not _is_tensor(o) or not o.requires_grad:
            continue
        diff_outputs.add(j)
        n = o.numel()
        cols = {i: np.zeros((inputs[i].numel(), n)) for i in diff_idx}
        for k in range(n):
            onehot = np.zeros(n, dtype=o.dtype._np)
            onehot[k] = 1
            from .._tensor import wrap_array
            g = wrap_array(onehot.reshape(tuple(o.shape)))
            grads = autograd_grad((o,), diff_inputs, (g,), retain_graph=True, allow_unused=True)
            for i, gi in zip(diff_idx, grads):
                if gi is not None:
                    cols[i][:, k] = np.array(gi.detach().resolve_conj().resolve_neg()._nd(),
                                              dtype=np.float64).reshape(-1)
        for i in diff_idx:
            jacs[(j, i)] = cols[i]
    return jacs, diff_outputs


def gradcheck(func, inputs, *, eps=1e-6, atol=1e-5, rtol=1e-3, raise_exception=True,
              nondet_tol=0.0, check_undefined_grad=True, check_grad_dtypes=False,
              check_batched_grad=False, check_batched_forward_grad=False, check_forward_ad=False,
              check_backward_ad=True, fast_mode=False, masked=None):
    inputs = _as_tuple(inputs)
    diff_idx = [i for i, x in enumerate(inputs) if _is_tensor(x) and x.requires_grad]
    if not diff_idx:
        raise ValueError("gradcheck expects at least one input tensor to require gradient, but "
                         "none of the them have requires_grad=True.")
    for i in diff_idx:
        if inputs[i].dtype.name not in ("float64", "complex128"):
            import warnings
            warnings.warn(f"Input #{i} requires gradient and is not a double precision floating "
                          f"point or complex. This check will likely fail if all the inputs are "
                          f"not of double precision floating point or complex. ")
    analytical, diff_outputs = _analytical_jacobian(func, inputs, diff_idx)
    for i in diff_idx:
        numerical = _numerical_jacobian(func, inputs, i, eps)
        for j, num in enumerate(numerical):
            if not diff_outputs:
                # nothing differentiable comes out: the function must not depend on the input
                if num.size and not np.allclose(num, 0.0, rtol=rtol, atol=atol):
                    if not raise_exception:
                        return False
                    raise GradcheckError("Numerical gradient for function expected to be zero")
                continue
            ana = analytical.get((j, i))
            if j not in diff_outputs or num.size == 0:
                continue  # outputs that do not require grad are not compared, as in PyTorch
            if not np.allclose(ana, num, rtol=rtol, atol=atol):
                if not raise_exception:
                    return False
                raise GradcheckError(f"Jacobian mismatch for output {j} with respect to input "
                                     f"{i},\nnumerical:{num}\nanalytical:{ana}\n")
    return True


def gradgradcheck(func, inputs, grad_outputs=None, *, eps=1e-6, atol=1e-5, rtol=1e-3,
                  gen_non_contig_grad_outputs=False, raise_exception=True, nondet_tol=0.0,
                  check_undefined_grad=True, check_grad_dtypes=False, check_batched_grad=False,
                  check_fwd_over_rev=False, check_rev_over_rev=True, fast_mode=False, masked=False):
    import ember
    from . import grad as autograd_grad
    inputs = _as_tuple(inputs)
    outs = _as_tuple(func(*inputs))
    if grad_outputs is None:
        rng = np.random.default_rng(0)
        from .._tensor import wrap_array
        grad_outputs = tuple(wrap_array(rng.standard_normal(tuple(o.shape)).astype(o.dtype._np))
                             .requires_grad_() for o in outs if _is_tensor(o) and o.requires_grad)
    grad_outputs = _as_tuple(grad_outputs)
    n_in = len(inputs)
    diff_idx = [i for i, x in enumerate(inputs) if _is_tensor(x) and x.requires_grad]

    def new_func(*args):
        with ember.enable_grad():
            return _grad_of(args)

    def _grad_of(args):
        inp, gos = args[:n_in], args[n_in:]
        outputs = [o for o in _as_tuple(func(*inp)) if _is_tensor(o) and o.requires_grad]
        diff_in = [inp[i] for i in diff_idx]
        gs = autograd_grad(outputs, diff_in, gos, create_graph=True, allow_unused=True)
        return tuple(g for g in gs if g is not None)

    return gradcheck(new_func, inputs + grad_outputs, eps=eps, atol=atol, rtol=rtol,
                     raise_exception=raise_exception)
