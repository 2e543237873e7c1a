"""PyTorch's whole ``_foreach_*`` family against PyTorch, one table row per overload built from
its schema: values, dtypes, in-place identity and version counters, gradients (where PyTorch
records them), Meta, errors, the simulated CUDA device, and ``ember.compile`` of in-place foreach
updates (an EMA and an AdamW-like step) against eager."""
import numpy as np
import pytest

import ember
from helpers import assert_same, simulated_cuda, to_np


def _overloads(lib):
    """Every ``_foreach_*`` overload but out= ones: "name.overload" -> OpOverload."""
    if lib is ember:
        from ember._dispatch.dispatcher import _operators
        quals = [q for q in _operators if q.startswith("aten::_foreach")]
    else:
        quals = [n for n in lib._C._dispatch_get_all_op_names() if n.startswith("aten::_foreach")]
    out = {}
    for q in quals:
        base = q[len("aten::"):].partition(".")[0]
        packet = getattr(lib.ops.aten, base)
        for ov in packet.overloads():
            if "out" not in ov:
                out[f"{base}.{ov}"] = getattr(packet, ov)
    return out


def test_every_pytorch_overload_is_declared_with_its_schema(torch):
    ours, theirs = _overloads(ember), _overloads(torch)
    assert sorted(ours) == sorted(theirs)
    for name, op in theirs.items():
        assert str(ours[name]._schema) == str(op._schema), name


SHAPES = [(3,), (2, 4), ()]
RNG = np.random.default_rng(7)


def _values(shape, dtype, low=0.1, high=0.9):
    a = np.asarray(RNG.uniform(low, high, shape))
    return np.asarray(a.astype(dtype) if dtype != "int64" else (a * 10).astype(np.int64))


def _arguments(name, schema, dtype, shapes=SHAPES):
    """Numpy values for each argument of overload ``name`` (lists as lists), in a domain every
    op of the family takes: elements in (0.1, 0.9)."""
    args, kwargs = [], {}
    for a in schema.arguments:
        t = a.base + ("[]" if a.is_list else "")
        if t == "Tensor[]":
            if name.startswith("_foreach_mm") and a.name == "mat2":
                v = [_values((s[-1] if s else 1, 2), dtype) for s in shapes]
            else:
                v = [_values(s, dtype) for s in shapes]
        elif t == "Scalar[]":
            v = [0.5 + i for i in range(len(shapes))]
        elif t == "Tensor" and a.name == "other":
            v = np.array(0.75, dtype)
        elif t == "Tensor":
            v = np.arange(1, len(shapes) + 1).astype(dtype) / 2
        elif t == "Scalar":
            v = 2.0 if a.name == "self" else (3 if "pow" in name else 0.5)
        else:
            continue  # dtype, memory_format, non_blocking: their defaults
        (kwargs.__setitem__(a.name, v) if a.kwarg_only else args.append(v))
    return args, kwargs


def _to(lib, v, requires_grad=False):
    if isinstance(v, list):
        return [_to(lib, x, requires_grad) for x in v]
    if isinstance(v, np.ndarray):
        t = lib.tensor(v.copy())
        return t.requires_grad_() if requires_grad and t.is_floating_point() else t
    return v


def _build(lib, name, values):
    args, kwargs = values
    return [_to(lib, a) for a in args], {k: _to(lib, v) for k, v in kwargs.items()}


def _mm_shapes(name):
    return [(3, 2), (2, 4), (1, 1)] if name.startswith("_foreach_mm") else SHAPES


NAMES = sorted(_overloads(ember))


def _compare_lists(e, t, rtol=1e-5, atol=1e-6):
    assert len(e) == len(t)
    for x, y in zip(e, t):
        assert_same(x, y, rtol=rtol, atol=atol)


def _run(lib, op, args, kwargs):
    try:
        return op(*args, **kwargs), None
    except Exception as exc:  # noqa: BLE001 (the type and message are compared)
        return None, exc


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64"])
def test_every_overload_matches_torch(torch, dtype):
    """Values and dtypes (integers promote as the single ops do, or raise as they raise);
    in-place ops write each tensor of self in place, once, and return nothing."""
    ours, theirs = _overloads(ember), _overloads(torch)
    for name in NAMES:
        values = _arguments(name, ours[name]._schema, dtype, _mm_shapes(name))
        e_args, e_kw = _build(ember, name, values)
        t_args, t_kw = _build(torch, name, values)
        inplace = ours[name]._schema.arguments[0].is_write
        targets = e_args[0] if inplace else []
        versions = [t._version for t in targets]
        e_res, e_exc = _run(ember, ours[name], e_args, e_kw)
        t_res, t_exc = _run(torch, theirs[name], t_args, t_kw)
        if t_exc is not None:
            assert e_exc is not None and type(e_exc) is type(t_exc), (name, dtype, t_exc, e_exc)
            continue
        assert e_exc is None, (name, dtype, e_exc)
        if inplace:
            assert e_res is None and t_res is None, name
            assert all(a is b for a, b in zip(e_args[0], targets)), name
            assert [t._version for t in targets] == [v + 1 for v in versions], name
            _compare_lists(e_args[0], t_args[0])
        else:
            _compare_lists(e_res, t_res, rtol=1e-4 if "powsum" in name else 1e-5)


@pytest.mark.parametrize("name", [n for n in NAMES if not n.startswith(("_foreach_mm",))])
def test_meta_matches_torch(torch, name):
    op, top = _overloads(ember)[name], _overloads(torch)[name]
    values = _arguments(name, op._schema, "float32")
    e_args, e_kw = _build(ember, name, values)
    t_args, t_kw = _build(torch, name, values)
    def meta(lib, v):  # the lists and a 0-dim other on the meta device; packed scalars stay
        if isinstance(v, list) and v and hasattr(v[0], "dim"):
            return [x.to("meta") for x in v]
        return v.to("meta") if hasattr(v, "dim") and v.dim() == 0 else v
    e_res = op(*[meta(ember, a) for a in e_args], **{k: meta(ember, v) for k, v in e_kw.items()})
    t_res = top(*[meta(torch, a) for a in t_args], **{k: meta(torch, v) for k, v in t_kw.items()})
    if t_res is None:
        assert e_res is None
        return
    assert [(tuple(r.shape), str(r.dtype).split(".")[-1]) for r in e_res] == \
        [(tuple(r.shape), str(r.dtype).split(".")[-1]) for r in t_res]
    assert all(r.device.type == "meta" for r in e_res)


def _grad_fn_name(lib, r):
    fn = r.grad_fn
    return None if fn is None else fn.name()


def test_gradients_match_torch(torch):
    """Each functional overload's gradients of every differentiable input (float64); where
    PyTorch records no gradient (its NotImplemented node), backward raises in both."""
    ours, theirs = _overloads(ember), _overloads(torch)
    checked = 0
    for name in NAMES:
        if ours[name]._schema.arguments[0].is_write:
            continue
        # (no 0-dim tensor: PyTorch's _foreach_addcdiv backward raises IndexError on one)
        shapes = _mm_shapes(name) if name.startswith("_foreach_mm") else [(3,), (2, 4), (1,)]
        args, kwargs = _arguments(name, ours[name]._schema, "float64", shapes)
        e_args = [_to(ember, a, isinstance(a, list)) for a in args]
        t_args = [_to(torch, a, isinstance(a, list)) for a in args]
        e_res = ours[name](*e_args, **{k: _to(ember, v) for k, v in kwargs.items()})
        t_res = theirs[name](*t_args, **{k: _to(torch, v) for k, v in kwargs.items()})
        weights = [RNG.standard_normal(tuple(r.shape)) for r in t_res]
        t_loss = sum((r * torch.tensor(w)).sum() for r, w in zip(t_res, weights))
        e_loss = sum((r * ember.tensor(w)).sum() for r, w in zip(e_res, weights))
        if t_res[0].grad_fn.name() == "torch::autograd::NotImplemented":
            with pytest.raises(RuntimeError):
                torch.autograd.backward(t_loss)
            with pytest.raises(RuntimeError):
                ember.autograd.backward(e_loss)
            continue
        try:
            t_loss.backward()
        except IndexError:  # PyTorch's _foreach_addcdiv backward: its single op's gradients
            for leaf in (t for a in t_args if isinstance(a, list) for t in a
                         if hasattr(t, "grad")):
                leaf.grad = None
            t_res = [torch.addcdiv(x, a, b, value=v) for x, a, b, v in
                     zip(*[a if isinstance(a, list) else [a] * 3 for a in t_args])]
            sum((r * torch.tensor(w)).sum() for r, w in zip(t_res, weights)).backward()
        e_loss.backward()
        for e, t in zip(e_args, t_args):
            for x, y in zip(e if isinstance(e, list) else [e], t if isinstance(t, list) else [t]):
                if hasattr(y, "grad") and y.grad is not None:
                    assert_same(x.grad, y.grad, rtol=1e-7, atol=1e-9)
                    checked += 1
    assert checked > 100


def test_maximum_minimum_of_numbers_halve_the_gradient_at_ties(torch):
    for name in ("maximum.Scalar", "minimum.Scalar", "maximum.ScalarList", "minimum.ScalarList"):
        arg = [0.5] if name.endswith("List") else 0.5
        grads = []
        for lib in (torch, ember):
            x = lib.tensor([0.25, 0.5, 0.75], requires_grad=True)
            base, ov = name.split(".")
            (getattr(getattr(lib.ops.aten, "_foreach_" + base), ov)([x], arg)[0] * 1).sum() \
                .backward()
            grads.append(x.grad)
        assert_same(grads[1], grads[0])


def test_inplace_gradients_match_torch(torch):
    """In-place overloads on non-leaf tensors: PyTorch's node per tensor (the single op's) and
    its gradients, or its NotImplemented node."""
    ours, theirs = _overloads(ember), _overloads(torch)
    for name in NAMES:
        if not ours[name]._schema.arguments[0].is_write:
            continue
        args, kwargs = _arguments(name, ours[name]._schema, "float64")
        out = []
        for lib, op in ((torch, theirs[name]), (ember, ours[name])):
            leaves = _to(lib, args[0], True)
            lib_args = [[t * 1 for t in leaves]] + [_to(lib, a) for a in args[1:]]
            op(*lib_args, **{k: _to(lib, v) for k, v in kwargs.items()})
            names = [_grad_fn_name(lib, t) for t in lib_args[0]]
            if names[0] == "torch::autograd::NotImplemented":
                out.append((names, None))
                continue
            sum(t.sum() for t in lib_args[0]).backward()
            out.append((names, [t.grad for t in leaves]))
        (t_names, t_grads), (e_names, e_grads) = out
        assert (e_grads is None) == (t_grads is None), name
        if t_grads is not None:
            if name not in ("_foreach_maximum_.List", "_foreach_minimum_.List"):  # (a copy_)
                assert [n.lower() for n in e_names] == [n.lower() for n in t_names], name
            _compare_lists(e_grads, t_grads)


def test_inplace_on_a_leaf_that_requires_grad_writes_nothing(torch):
    for lib in (torch, ember):
        x, leaf = lib.ones(2) * 1, lib.ones(2, requires_grad=True)
        with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
            lib._foreach_add_([x, leaf], [1.0, 2.0])
        assert x.tolist() == [1.0, 1.0]


def _errors(lib):
    one = [lib.ones(2)]
    two = [lib.ones(2), lib.ones(3)]
    return [
        lambda: lib._foreach_exp([]),
        lambda: lib._foreach_add_([], 1.0),
        lambda: lib._foreach_mul(two, one),
        lambda: lib._foreach_lerp_(two, two, one),
        lambda: lib._foreach_addcmul(two, two, one),
        lambda: lib._foreach_add(two, [1.0]),
        lambda: lib._foreach_clamp_min_(two, [1.0, 2.0, 3.0]),
        lambda: lib._foreach_lerp(two, two, [0.5]),
        lambda: lib._foreach_pow(two, [2.0]),
        lambda: lib._foreach_add(two, lib.ones(2)),
        lambda: lib._foreach_div_(two, lib.ones(1)),
        lambda: lib._foreach_addcdiv(two, two, two, lib.ones(2, 1)),
        lambda: lib._foreach_addcmul_(two, two, two, lib.ones(3)),
        lambda: lib._foreach_max([lib.ones(2), lib.zeros(0)]),
        lambda: lib._foreach_add_([lib.ones(2, dtype=lib.int64)], 1.5),
        lambda: lib._foreach_mul(one, [lib.ones(3)]),
        lambda: lib._foreach_abs([lib.tensor([True])]),
        lambda: lib._foreach_powsum([lib.ones(2, dtype=lib.int64)]),
        lambda: lib._foreach_norm([lib.zeros(0)], float("inf")),
    ]


def test_errors_match_torch(torch):
    for i, (t_call, e_call) in enumerate(zip(_errors(torch), _errors(ember))):
        with pytest.raises(Exception) as t_exc:
            t_call()
        with pytest.raises(Exception) as e_exc:
            e_call()
        assert type(e_exc.value) is type(t_exc.value), (i, t_exc.value, e_exc.value)
        assert str(e_exc.value) == str(t_exc.value), i


def test_python_bindings_pick_the_overload_by_argument(torch):
    for lib in (torch, ember):
        x = [lib.tensor([1.0, 2.0]), lib.tensor([3.0])]
        assert lib._foreach_add(x, 1.0)[1].tolist() == [4.0]
        assert lib._foreach_add(x, [1.0, 2.0])[1].tolist() == [5.0]
        assert lib._foreach_add(x, x, alpha=2)[1].tolist() == [9.0]
        assert lib._foreach_add(x, lib.tensor(2.0), alpha=3)[1].tolist() == [9.0]
        assert lib._foreach_pow(2.0, x)[1].tolist() == [8.0]
        assert not hasattr(lib, "_foreach_zero") and not hasattr(lib, "_foreach_copy")


def test_functional_results_are_new_tensors(torch):
    x = [ember.ones(2), ember.ones(3)]
    for r, t in zip(ember._foreach_clone(x), x):
        assert r is not t and r.data_ptr() != t.data_ptr()
    ember.ops.aten._foreach_zero(x)
    assert x[0].tolist() == [1.0, 1.0]
    ember._foreach_zero_(x)
    assert x[1].tolist() == [0.0, 0.0, 0.0]


def test_simulated_cuda_matches_cpu(torch):
    """Every in-place and functional overload of float32 lists on the simulated device: the
    optimizers' kernels and the others' single-op path give the CPU's values."""
    with simulated_cuda():
        ours = _overloads(ember)
        for name in NAMES:
            if name.startswith(("_foreach_mm", "_foreach_copy")):
                continue
            values = _arguments(name, ours[name]._schema, "float32")
            cpu_args, kw = _build(ember, name, values)
            dev_args = [[t.cuda() for t in a] if isinstance(a, list) and a and
                        hasattr(a[0], "dim") else a.cuda() if hasattr(a, "dim") and
                        a.dim() == 0 else a for a in cpu_args]  # (packed scalars: CPU)
            cpu_res = ours[name](*cpu_args, **kw)
            dev_res = ours[name](*dev_args, **kw)
            if cpu_res is None:
                cpu_res, dev_res = cpu_args[0], dev_args[0]
            for c, d in zip(cpu_res, dev_res):
                assert d.device.type == "cuda", name
                np.testing.assert_allclose(to_np(d.cpu()), to_np(c), rtol=1e-6, err_msg=name)


def _ema(ema, params, decay):
    ember._foreach_lerp_(ema, params, 1 - decay)
    return ember._foreach_norm(ema)


def _adamw(params, grads, exp_avg, exp_avg_sq, lr, beta1, beta2, wd, eps, step):
    ember._foreach_mul_(params, 1 - lr * wd)
    ember._foreach_lerp_(exp_avg, grads, 1 - beta1)
    ember._foreach_mul_(exp_avg_sq, beta2)
    ember._foreach_addcmul_(exp_avg_sq, grads, grads, 1 - beta2)
    bias1, bias2 = 1 - beta1 ** step, 1 - beta2 ** step
    denom = ember._foreach_sqrt(exp_avg_sq)
    ember._foreach_div_(denom, bias2 ** 0.5)
    ember._foreach_add_(denom, eps)
    ember._foreach_addcdiv_(params, exp_avg, denom, -lr / bias1)
    ember._foreach_clamp_max_(params, 10.0)
    return sum(p.sum() for p in params)


@pytest.mark.parametrize("case", ["ema", "adamw"])
def test_compile_of_inplace_foreach_updates_matches_eager(torch, case):
    def fresh():
        rng = np.random.default_rng(3)
        return [[ember.tensor(rng.standard_normal(s).astype(np.float32)) for s in ((4, 3), (5,))]
                for _ in range(4)]
    if case == "ema":
        fn, extra = _ema, (0.9,)
        pick = lambda lists: lists[:2]  # noqa: E731
    else:
        fn, extra = _adamw, (1e-2, 0.9, 0.999, 0.1, 1e-8, 3)
        pick = lambda lists: lists  # noqa: E731
    eager_lists, compiled_lists = pick(fresh()), pick(fresh())
    expected = fn(*eager_lists, *extra)
    compiled = ember.compile(fn, fullgraph=True)
    ptrs = [t.data_ptr() for lst in compiled_lists for t in lst]
    got = compiled(*compiled_lists, *extra)
    for g, e in zip(got if isinstance(got, tuple) else [got],
                    expected if isinstance(expected, tuple) else [expected]):
        np.testing.assert_allclose(to_np(g), to_np(e), rtol=1e-5)
    for e_list, c_list in zip(eager_lists, compiled_lists):  # the inputs mutated as eager
        for e, c in zip(e_list, c_list):
            np.testing.assert_allclose(to_np(c), to_np(e), rtol=1e-5, atol=1e-7)
    assert [t.data_ptr() for lst in compiled_lists for t in lst] == ptrs
