"""ember.compile / ember._dynamo: a corpus of functions and modules captured with backend
"eager" (and a counting backend) must give eager's results exactly, with the expected number of
graphs; every graph break asserts its reason; guards, recompiles, side effects, explain, logs."""
import logging
import math
import operator

import pytest

import ember
import ember.nn as nn
import ember.nn.functional as F
from ember._dynamo import config as dconfig
from ember._dynamo.exc import Unsupported
from ember._dynamo.testing import CompileCounter, same


@pytest.fixture(autouse=True)
def _reset():
    ember._dynamo.reset()
    yield
    ember._dynamo.reset()


def _clone(v):
    if isinstance(v, ember.Tensor):
        c = v.detach().clone()
        c.requires_grad_(v.requires_grad)
        return c
    if isinstance(v, list):
        return [_clone(i) for i in v]
    if isinstance(v, tuple):
        return tuple(_clone(i) for i in v)
    if isinstance(v, dict):
        return {k: _clone(i) for k, i in v.items()}
    return v


def run_both(fn, args, graphs=None, ops=None):
    """Eager and compiled on copies of ``args``; outputs equal; returns the counter."""
    cnt = CompileCounter()
    eager_args = _clone(args)
    expected = fn(*eager_args)
    opt = ember.compile(fn, backend=cnt)
    comp_args = _clone(args)
    got = opt(*comp_args)
    assert same(expected, got), (expected, got)
    assert same(eager_args, comp_args)
    if graphs is not None:
        assert cnt.frame_count == graphs
    if ops is not None:
        assert cnt.op_count == ops
    n = cnt.frame_count
    got2 = opt(*_clone(args))  # the cache: no new graph
    assert same(expected, got2)
    assert cnt.frame_count == n
    return cnt


def t(*shape):
    ember.manual_seed(sum(shape) + len(shape))
    return ember.randn(*shape)


# ---------------------------------------------------------------------------------------------
# The corpus: (function, arguments, graphs)
GLOBAL_W = ember.ones(4)
GLOBAL_K = 3


def f_arith(x, y):
    return x * 2 + y - 1


def f_methods(x):
    return x.sin().cos().exp().sum(0)


def f_reductions(x):
    return x.sum(), x.mean(1), x.max(), x.amax(0, keepdim=True)


def f_shape_branch(x):
    if x.shape[0] > 2:
        return x * 2
    return x + 1


def f_size_loop(x):
    out = x
    for i in range(x.size(0)):
        out = out + i
    return out


def f_global(x):
    return x * GLOBAL_W + GLOBAL_K


def f_closure_factory():
    scale = 3.0
    bias = ember.ones(4)

    def f(x):
        return x * scale + bias
    return f


f_closure = f_closure_factory()


def helper_add(a, b, c=2):
    return a + b * c


def f_inline(x, y):
    return helper_add(x, y) + helper_add(y, x, c=3)


def f_kwargs(x, **kw):
    return x * kw["a"] + kw.get("b", 0)


def f_varargs(*xs):
    return sum(xs)


def f_list(x):
    xs = [x, x * 2, x * 3]
    xs.append(x.neg())
    return ember.stack(xs)


def f_tuple_unpack(x):
    a, b = x.chunk(2)
    return b, a


def f_dict(x):
    d = {"a": x, "b": x * 2}
    d["c"] = d["a"] + d["b"]
    return d


def f_listcomp(x):
    return [x * i for i in range(3)]


def f_dictcomp(x):
    return {str(i): x + i for i in range(2)}


def f_nested_comp(x):
    return sum([x * i * j for i in range(2) for j in range(3) if i != j])


def f_lambda(x):
    g = lambda v: v.relu() * 2  # noqa: E731
    return g(x) + g(-x)


def f_inner_closure(x):
    k = 2

    def inner(v):
        return v * k
    return inner(x)


def f_nonlocal(x):
    count = 0

    def bump(v):
        nonlocal count
        count += 1
        return v + count
    y = bump(x)
    y = bump(y)
    return y, count


def f_no_grad(x):
    with ember.no_grad():
        y = x * 2
    return y, y.requires_grad


def f_enable_grad(x):
    with ember.no_grad():
        with ember.enable_grad():
            y = x * 2
    return y * 1


def f_set_grad_enabled(x):
    with ember.set_grad_enabled(False):
        y = x + 1
    return y


def f_inference_mode(x):
    with ember.inference_mode():
        y = x * 2
    return y, y.requires_grad, ember.is_inference_mode_enabled(), y.is_inference()


def f_autocast(x, w):
    with ember.autocast("cpu", dtype=ember.bfloat16):
        y = x @ w
    return y.float() + 1


def f_isinstance(x, n):
    if isinstance(n, int):
        return x * n
    return x


def f_none_default(x, y=None):
    if y is None:
        return x
    return x + y


def f_str_ops(x, mode):
    if mode.startswith("do") and mode.upper() == "DOUBLE":
        return x * 2
    return x


def f_fstring(x, name):
    key = f"{name}_{x.shape[0]}"
    return {key: x}


def f_enumerate_zip(xs, ys):
    out = []
    for i, (a, b) in enumerate(zip(xs, ys)):
        out.append(a * b + i)
    return out


def f_while(x):
    i = 0
    while i < 3:
        x = x * 2
        i += 1
    return x


def f_math(x):
    return x * math.sqrt(2.0) + math.pi


def f_operator_mod(x, y):
    return operator.mul(x, y) + operator.add(x, 1)


def f_indexing(x):
    return x[0], x[:, 1], x[..., None], x[1:3, ::2]


def f_setitem(x):
    y = x.clone()
    y[0] = 5.0
    return y


def f_inplace_input(x):
    x.add_(1)
    x.mul_(2)
    return x


def f_view_ops(x):
    return x.view(-1).reshape(2, -1).t().contiguous().unsqueeze(0).squeeze(0)


def f_cat(x, y):
    return ember.cat([x, y], dim=0), ember.where(x > 0, x, y)


def f_factories(x):
    return x + ember.ones(x.shape) + ember.arange(x.shape[-1]).float()


def f_dtype_cast(x):
    return x.to(ember.float64).double().half().float(), x.dtype


def f_comparisons(x, y):
    return (x > y) & (x < 2), (x == y) | (x != 1)


def f_min_max_python(x, a, b):
    return x * max(a, b) + min(a, b)


def f_tensor_attrs(x):
    return x.ndim, x.dtype, x.device, x.shape, x.numel(), x.dim(), x.is_contiguous()


def f_matmul(a, b):
    return a @ b, ember.matmul(a, b), a.mm(b)


def f_softmax(x):
    return F.softmax(x, dim=-1), F.log_softmax(x, dim=0), F.gelu(x), F.silu(x)


def f_len_tensor(x):
    return x * len(x)


def f_any_all(xs):
    if all(v > 0 for v in xs):
        return 1
    return 0


def f_return_input(x, y):
    return x, [y, 3], {"k": (x, "s")}


def f_chain_methods(x):
    return x.abs().sqrt().log1p().clamp(min=0.1, max=0.9)


def f_gather_scatter(x):
    idx = ember.tensor([[0, 1], [1, 0]])
    return x.gather(1, idx)


def f_reverse(xs):
    return [x * 2 for x in reversed(xs)]


def f_sorted_keys(d):
    return [d[k] * 2 for k in sorted(d)]


def f_tuple_concat(x):
    s = x.shape + (1,)
    return x.reshape(s)


def f_set_literal(x):
    s = {1, 2}
    s.add(5)
    return x * len(s), s


def f_try_except(x):
    try:
        y = x + 1
    except ValueError:
        y = x
    return y


def f_walrus_match(x):
    if (n := x.shape[0]) > 1:
        x = x * n
    match x.dim():
        case 1:
            return x + 3
        case _:
            return x


def f_unary(x):
    return -x, +x, ~(x > 0), abs(x)


def f_pow_div(x):
    return x ** 2 / 3 // 1 % 2


def f_getattr_builtin(x):
    fn = getattr(x, "sin")
    return fn() if hasattr(x, "sin") else x


def f_type_check(x):
    return type(x) is ember.Tensor


def f_unpack_ex(x):
    first, *rest = x.unbind(0)
    return first, ember.stack(rest)


def f_star_call(x):
    args = (x, 2)
    return ember.mul(*args)


def f_kw_call(x):
    return ember.sum(x, dim=0, keepdim=True)


def f_nested_fn_defaults(x):
    def g(v, p=2, *, q=3):
        return v * p + q
    return g(x) + g(x, 5, q=1)


def f_is_grad_enabled(x):
    if ember.is_grad_enabled():
        return x + 1
    return x - 1


def f_compiler_is_compiling(x):
    if ember.compiler.is_compiling():
        return x + 100
    return x


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(8, 16)
        self.fc2 = nn.Linear(16, 4)
        self.act = nn.ReLU()

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x)))


class ConvNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 4, 3, padding=1)
        self.bn = nn.BatchNorm2d(4)
        self.pool = nn.MaxPool2d(2)
        self.fc = nn.Linear(4 * 4 * 4, 10)

    def forward(self, x):
        x = self.pool(F.relu(self.bn(self.conv(x))))
        return self.fc(x.flatten(1))


class SeqModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.Sequential(nn.Linear(4, 4), nn.Tanh(), nn.Linear(4, 2))
        self.norm = nn.LayerNorm(4)
        self.blocks = nn.ModuleList([nn.Linear(4, 4) for _ in range(3)])

    def forward(self, x):
        x = self.norm(x)
        for b in self.blocks:
            x = x + b(x)
        return self.layers(x)


class WithProperty(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.scale = 0.5

    @property
    def factor(self):
        return self.scale * 2

    def helper(self, x):
        return self.lin(x) * self.factor

    def forward(self, x):
        if self.training:
            return self.helper(x)
        return x


class SuperCall(nn.Linear):
    def forward(self, x):
        return super().forward(x) * 2


class Embed(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(10, 4)
        self.drop = nn.Dropout(0.0)

    def forward(self, idx):
        return self.drop(self.emb(idx)).sum(1)


def _mod_fn(mod):
    def f(x):
        return mod(x)
    f.__name__ = type(mod).__name__
    return f


ember.manual_seed(0)
_MLP, _CONV, _SEQ, _PROP, _SUPER, _EMB = MLP(), ConvNet(), SeqModel(), WithProperty(), \
    SuperCall(4, 3), Embed()

CORPUS = [
    (f_arith, lambda: (t(3, 4), t(3, 4)), 1),
    (f_methods, lambda: (t(3, 4),), 1),
    (f_reductions, lambda: (t(3, 4),), 1),
    (f_shape_branch, lambda: (t(3),), 1),
    (f_size_loop, lambda: (t(3),), 1),
    (f_global, lambda: (t(4),), 1),
    (f_closure, lambda: (t(4),), 1),
    (f_inline, lambda: (t(4), t(4)), 1),
    (lambda x: f_kwargs(x, a=2, b=3), lambda: (t(4),), 1),
    (f_varargs, lambda: (t(2), t(2), t(2)), 1),
    (f_list, lambda: (t(3),), 1),
    (f_tuple_unpack, lambda: (t(4),), 1),
    (f_dict, lambda: (t(2),), 1),
    (f_listcomp, lambda: (t(2),), 1),
    (f_dictcomp, lambda: (t(2),), 1),
    (f_nested_comp, lambda: (t(2),), 1),
    (f_lambda, lambda: (t(5),), 1),
    (f_inner_closure, lambda: (t(3),), 1),
    (f_nonlocal, lambda: (t(3),), 1),
    (f_no_grad, lambda: (t(3).requires_grad_(),), 1),
    (f_enable_grad, lambda: (t(3).requires_grad_(),), 1),
    (f_set_grad_enabled, lambda: (t(3).requires_grad_(),), 1),
    (f_autocast, lambda: (t(4, 4), t(4, 4)), 1),
    (f_inference_mode, lambda: (t(3).requires_grad_(),), 1),
    (f_isinstance, lambda: (t(3), 4), 1),
    (f_none_default, lambda: (t(3),), 0),
    (f_none_default, lambda: (t(3), t(3)), 1),
    (f_str_ops, lambda: (t(3), "double"), 1),
    (f_fstring, lambda: (t(3), "n"), 0),
    (f_enumerate_zip, lambda: ([t(2), t(2)], [t(2), t(2)]), 1),
    (f_while, lambda: (t(3),), 1),
    (f_math, lambda: (t(3),), 1),
    (f_operator_mod, lambda: (t(3), t(3)), 1),
    (f_indexing, lambda: (t(4, 4),), 1),
    (f_setitem, lambda: (t(3, 2),), 1),
    (f_inplace_input, lambda: (t(3),), 1),
    (f_view_ops, lambda: (t(2, 3),), 1),
    (f_cat, lambda: (t(2, 3), t(2, 3)), 1),
    (f_factories, lambda: (t(2, 3),), 1),
    (f_dtype_cast, lambda: (t(3),), 1),
    (f_comparisons, lambda: (t(3), t(3)), 1),
    (f_min_max_python, lambda: (t(3), 2, 5), 1),
    (f_tensor_attrs, lambda: (t(2, 3),), 0),
    (f_matmul, lambda: (t(3, 4), t(4, 2)), 1),
    (f_softmax, lambda: (t(3, 4),), 1),
    (f_len_tensor, lambda: (t(3, 2),), 1),
    (f_any_all, lambda: ([1, 2, 3],), 0),
    (f_return_input, lambda: (t(2), t(2)), 0),
    (f_chain_methods, lambda: (t(5),), 1),
    (f_gather_scatter, lambda: (t(2, 2),), 1),
    (f_reverse, lambda: ([t(2), t(3)],), 1),
    (f_sorted_keys, lambda: ({"b": t(2), "a": t(2)},), 1),
    (f_tuple_concat, lambda: (t(2, 3),), 1),
    (f_unary, lambda: (t(4),), 1),
    (f_set_literal, lambda: (t(4),), 1),
    (f_try_except, lambda: (t(4),), 1),
    (f_walrus_match, lambda: (t(4),), 1),
    (f_pow_div, lambda: (t(4),), 1),
    (f_getattr_builtin, lambda: (t(3),), 1),
    (f_type_check, lambda: (t(3),), 0),
    (f_unpack_ex, lambda: (t(3, 2),), 1),
    (f_star_call, lambda: (t(3),), 1),
    (f_kw_call, lambda: (t(3, 2),), 1),
    (f_nested_fn_defaults, lambda: (t(3),), 1),
    (f_is_grad_enabled, lambda: (t(3),), 1),
    (_mod_fn(_MLP), lambda: (t(5, 8),), 1),
    (_mod_fn(_CONV), lambda: (t(2, 1, 8, 8),), 1),
    (_mod_fn(_SEQ), lambda: (t(3, 4),), 1),
    (_mod_fn(_PROP), lambda: (t(2, 4),), 1),
    (_mod_fn(_SUPER), lambda: (t(2, 4),), 1),
    (_mod_fn(_EMB), lambda: (ember.tensor([[1, 2], [3, 4]]),), 1),
]


@pytest.mark.parametrize("fn,make_args,graphs", CORPUS,
                         ids=[f"{i}-{c[0].__name__}" for i, c in enumerate(CORPUS)])
def test_corpus_matches_eager(fn, make_args, graphs):
    run_both(fn, make_args(), graphs=graphs)


def test_corpus_size():
    assert len(CORPUS) >= 60


def test_compiler_is_compiling_folds_true():
    opt = ember.compile(f_compiler_is_compiling, backend="eager")
    x = t(3)
    assert same(opt(x), x + 100)
    assert not ember.compiler.is_compiling()


def test_module_compile_and_gradients():
    ember.manual_seed(1)
    m = MLP()
    x = t(4, 8)
    ref = m(x).sum()
    ref.backward()
    grads = [p.grad.clone() for p in m.parameters()]
    for p in m.parameters():
        p.grad = None
    cnt = CompileCounter()
    opt = ember.compile(m, backend=cnt)
    out = opt(x).sum()
    out.backward()
    assert same(ref, out)
    for g, p in zip(grads, m.parameters()):
        assert same(g, p.grad)
    assert cnt.frame_count == 1
    assert list(opt.state_dict())[0].startswith("_orig_mod.")


def test_nn_module_compile_in_place():
    m = MLP()
    x = t(2, 8)
    ref = m(x)
    m.compile(backend="eager")
    assert same(m(x), ref)
    assert "_compiled_call_impl" in m.__dict__


def test_train_eval_guard_recompiles():
    m = WithProperty()
    cnt = CompileCounter()
    opt = ember.compile(m, backend=cnt)
    x = t(2, 4)
    assert same(opt(x), m(x))
    m.eval()
    assert same(opt(x), x)
    assert cnt.frame_count == 1  # eval returns the input: no graph
    m.train()
    opt(x)
    assert cnt.frame_count == 1  # the training entry is still cached


def _nn_cases():
    ember.manual_seed(0)
    r = ember.randn
    return [
        (nn.MultiheadAttention(8, 2, batch_first=True), lambda: (r(2, 5, 8),) * 3),
        (nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True), lambda: (r(2, 5, 8),)),
        (nn.TransformerDecoderLayer(8, 2, 16, dropout=0.0), lambda: (r(5, 2, 8), r(4, 2, 8))),
        (nn.LSTM(4, 6, batch_first=True), lambda: (r(2, 3, 4),)),
        (nn.GRU(4, 6), lambda: (r(3, 2, 4),)),
        (nn.RNN(3, 4), lambda: (r(2, 1, 3),)),
        (nn.Conv1d(2, 3, 3), lambda: (r(1, 2, 8),)),
        (nn.ConvTranspose2d(2, 3, 3), lambda: (r(1, 2, 4, 4),)),
        (nn.GroupNorm(2, 4), lambda: (r(2, 4, 3),)),
        (nn.InstanceNorm1d(3), lambda: (r(2, 3, 5),)),
        (nn.BatchNorm1d(3), lambda: (r(4, 3),)),
        (nn.Bilinear(3, 4, 5), lambda: (r(2, 3), r(2, 4))),
        (nn.Upsample(scale_factor=2), lambda: (r(1, 1, 4, 4),)),
        (nn.AdaptiveAvgPool2d(2), lambda: (r(1, 2, 5, 5),)),
        (nn.PReLU(), lambda: (r(4),)),
        (nn.CrossEntropyLoss(), lambda: (r(4, 3), ember.tensor([0, 1, 2, 1]))),
        (nn.PixelShuffle(2), lambda: (r(1, 4, 2, 2),)),
    ]


@pytest.mark.parametrize("case", range(17))
def test_nn_modules_one_graph(case):
    mod, make = _nn_cases()[case]
    args = make()
    ember.manual_seed(1)
    expected = mod(*args)
    cnt = CompileCounter()
    opt = ember.compile(mod, backend=cnt)
    ember.manual_seed(1)
    assert same(expected, opt(*args))
    assert cnt.frame_count == 1


# ---------------------------------------------------------------------------------------------
# Graph breaks


def seed_example(x):
    y = x.sin()
    print("hi")  # graph break
    return y.cos()


def test_seed_002_explain(capsys):
    x = t(4)
    e = ember._dynamo.explain(seed_example)(x)
    assert e.graph_count == 2
    assert e.graph_break_count == 1
    r = e.break_reasons[0]
    assert "print" in r.reason
    fs = r.user_stack[-1]
    assert fs.filename == __file__
    assert fs.lineno == seed_example.__code__.co_firstlineno + 2
    s = str(e)
    assert s.startswith("Graph Count: 2\nGraph Break Count: 1\n")
    assert "Break Reason 1:" in s and f"line {fs.lineno} in seed_example" in s
    # (PyTorch's explain counts call_function nodes: the method calls are not ops)
    assert e.ops_per_graph == [[], []] and e.op_count == 0
    assert e.compile_times.startswith("TorchDynamo compilation metrics:\nFunction")
    assert any(g.create_fn == "TENSOR_MATCH" for g in e.out_guards)
    assert "hi" in capsys.readouterr().out


def f_item_branch(x):
    n = x.sum()
    if n.item() > 0:
        return x * 2
    return x - 1


def test_item_branch_breaks_with_reason():
    e = ember._dynamo.explain(f_item_branch)(ember.ones(3))
    assert e.graph_break_count == 1
    assert "Tensor.item" in e.break_reasons[0].reason
    assert e.break_reasons[0].user_stack[-1].lineno == f_item_branch.__code__.co_firstlineno + 2
    for x in (ember.ones(3), -ember.ones(3)):
        cnt = run_both(f_item_branch, (x,))
        assert cnt.frame_count == 2


def f_tensor_if(x):
    y = x * 2
    if y.sum() > 0:
        return y + 1
    return y - 1


def test_data_dependent_jump_breaks():
    e = ember._dynamo.explain(f_tensor_if)(ember.ones(3))
    assert e.graph_break_count == 1
    assert e.break_reasons[0].reason == "generic_jump TensorVariable()"  # PyTorch's
    run_both(f_tensor_if, (ember.ones(3),), graphs=2)
    run_both(f_tensor_if, (-ember.ones(3),), graphs=2)


def f_tolist(x):
    vals = x.tolist()
    return x * len(vals)


def test_tolist_breaks():
    # the break comes before any op: one graph, and no reason reported (as PyTorch's)
    e = ember._dynamo.explain(f_tolist)(t(3))
    assert e.graph_count == 1 and e.break_reasons == []
    run_both(f_tolist, (t(3),))


@ember.compiler.disable
def disabled_helper(x):
    return x * 10


def f_calls_disabled(x):
    y = x + 1
    z = disabled_helper(y)
    return z - 1


def test_disabled_function_breaks():
    e = ember._dynamo.explain(f_calls_disabled)(t(3))
    assert e.graph_count == 2 and e.graph_break_count == 1
    assert "ember.compiler.disable" in e.break_reasons[0].reason
    run_both(f_calls_disabled, (t(3),), graphs=2)


def inner_with_print(x):
    x = x * 3
    print("inner")
    return x + 1


def f_break_in_inlined(x):
    a = x.sin()
    b = inner_with_print(a)
    return b.cos()


def test_break_inside_inlined_call(capsys):
    e = ember._dynamo.explain(f_break_in_inlined)(t(3))
    # outer: before and after the call; inner: before and after the print
    assert e.graph_count == 4
    assert all("print" in r.reason for r in e.break_reasons)
    assert e.break_reasons[0].user_stack[-1].name == "inner_with_print"
    run_both(f_break_in_inlined, (t(3),))


def f_break_in_no_grad(x):
    with ember.no_grad():
        y = x * 2
        print("inside")
        z = y + x
    return z, z.requires_grad, ember.is_grad_enabled()


def test_break_inside_no_grad_block():
    x = t(3).requires_grad_()
    cnt = run_both(f_break_in_no_grad, (x,))
    assert cnt.frame_count == 2
    assert ember.is_grad_enabled()


def f_break_in_loop(xs):
    acc = xs[0] * 0
    for v in xs:
        acc = acc + v
        print("step")
    return acc


def _step(acc, v):
    acc = acc + v
    print("step")
    return acc * 2


def f_break_in_callee_in_loop(xs):
    acc = xs[0] * 0
    for v in xs:
        acc = _step(acc, v)
    return acc


def test_break_in_loop():
    # PyTorch's "graph break in loop": the frame runs eagerly, no graph
    e = ember._dynamo.explain(f_break_in_loop)([t(2), t(2), t(2)])
    assert e.graph_count == 0 and e.break_reasons == []
    run_both(f_break_in_loop, ([t(2), t(2), t(2)],), graphs=0)


def test_break_in_callee_in_loop():
    # the break is at the call: the callee is captured on its own (two graphs around its
    # print, reused each iteration) and the resume functions receive the loop's iterator.
    # (PyTorch skips this frame and its frame hook captures the callee: 2 graphs; ember also
    # keeps the frame's graph before the loop)
    e = ember._dynamo.explain(f_break_in_callee_in_loop)([t(2), t(2), t(2)])
    assert e.graph_count == 3 and len(e.break_reasons) == 2
    run_both(f_break_in_callee_in_loop, ([t(2), t(2), t(2)],), graphs=3)


def f_break_keeps_stack(x):
    return ember.add(x, ember.tensor(float(len(str(print("s"))))))


def test_break_with_values_on_stack():
    # nothing is computed before the print: one graph, after the break
    run_both(f_break_keeps_stack, (t(3),), graphs=1)


def f_break_inside_method_args(x, xs):
    xs.append(x.sum(0) * 2, **{}) if False else None
    return x.add(x * 2, alpha=len(str(print("m"))) - 3)


def test_break_with_pending_method_call():
    run_both(f_break_inside_method_args, (t(3), []), graphs=2)


def test_fullgraph_raises_unsupported():
    opt = ember.compile(seed_example, backend="eager", fullgraph=True)
    with pytest.raises(Unsupported) as ei:
        opt(t(3))
    assert isinstance(ei.value, RuntimeError)
    msg = str(ei.value)
    assert "print" in msg
    assert f"line {seed_example.__code__.co_firstlineno + 2}" in msg and __file__ in msg
    opt2 = ember.compile(f_item_branch, backend="eager", fullgraph=True)
    with pytest.raises(Unsupported, match="Tensor.item"):
        opt2(t(3))


def test_user_exception_surfaces_like_eager():
    def f(x, y):
        return x + y

    opt = ember.compile(f, backend="eager")
    with pytest.raises(RuntimeError) as ce:
        opt(t(3), t(4))
    with pytest.raises(RuntimeError) as ee:
        f(t(3), t(4))
    assert str(ce.value) == str(ee.value)
    # the user's frame (the line of x + y) is in the traceback
    import traceback
    frames = traceback.extract_tb(ce.value.__traceback__)
    assert any(fs.name == "f" and fs.lineno == f.__code__.co_firstlineno + 1 for fs in frames)
    assert same(opt(t(3), t(3)), f(t(3), t(3)))  # nothing was cached: good input captures
    assert len(opt._frame_state.entries) == 1

    def g(x):
        raise ValueError("boom")

    with pytest.raises(ValueError, match="boom"):
        ember.compile(g, backend="eager")(t(2))


def test_backend_error_names_backend():
    def bad_backend(gm, example_inputs):
        raise ValueError("nope")

    with pytest.raises(ember._dynamo.exc.BackendCompilerFailed,
                       match="bad_backend.*__compiled_fn_0 of f_arith"):
        ember.compile(f_arith, backend=bad_backend)(t(2), t(2))


# ---------------------------------------------------------------------------------------------
# Guards and recompilation


def test_recompile_on_shape_dtype_requires_grad():
    cnt = CompileCounter()
    opt = ember.compile(f_arith, backend=cnt)
    opt(t(3), t(3))
    opt(t(3), t(3))
    assert cnt.frame_count == 1
    opt(t(4), t(4))
    assert cnt.frame_count == 2
    opt(t(3).double(), t(3).double())
    assert cnt.frame_count == 3
    opt(t(3).requires_grad_(), t(3))
    assert cnt.frame_count == 4
    opt(t(6)[::2], t(3))  # strides
    assert cnt.frame_count == 5


def test_constant_and_global_guards():
    global GLOBAL_K
    cnt = CompileCounter()
    opt = ember.compile(f_global, backend=cnt)
    x = t(4)
    assert same(opt(x), f_global(x))
    old = GLOBAL_K
    try:
        GLOBAL_K = 7
        assert same(opt(x), f_global(x))
        assert cnt.frame_count == 2
    finally:
        GLOBAL_K = old
    opt2 = ember.compile(f_isinstance, backend=cnt)
    assert same(opt2(x, 2), x * 2)
    assert same(opt2(x, 5), x * 5)
    assert same(opt2(x, 2.5), x)


def test_closure_cell_guard():
    def make(k):
        def f(x):
            return x * k
        return f
    cnt = CompileCounter()
    f2, f3 = make(2), make(3)
    o2, o3 = ember.compile(f2, backend=cnt), ember.compile(f3, backend=cnt)
    x = t(3)
    assert same(o2(x), x * 2) and same(o3(x), x * 3)


def test_grad_mode_and_default_dtype_guards():
    cnt = CompileCounter()
    opt = ember.compile(f_is_grad_enabled, backend=cnt)
    x = t(3)
    assert same(opt(x), x + 1)
    with ember.no_grad():
        assert same(opt(x), x - 1)
    assert cnt.frame_count == 2

    def g(x):
        return ember.ones(2) + x.sum()
    og = ember.compile(g, backend=cnt)
    og(t(2))
    old = ember.get_default_dtype()
    try:
        ember.set_default_dtype(ember.float64)
        assert og(t(2).double()).dtype == ember.float64
    finally:
        ember.set_default_dtype(old)


def test_module_identity_and_attribute_guards():
    m = MLP()
    cnt = CompileCounter()
    opt = ember.compile(m, backend=cnt)
    x = t(2, 8)
    opt(x)
    m.fc2 = nn.Linear(16, 4)
    assert same(opt(x), m(x))
    assert cnt.frame_count == 2


def test_recompile_limit_warns_and_runs_eagerly(caplog):
    cnt = CompileCounter()
    opt = ember.compile(f_isinstance, backend=cnt)
    old = dconfig.recompile_limit
    dconfig.recompile_limit = 2
    try:
        x = t(2)
        with caplog.at_level(logging.WARNING, logger="ember._dynamo"):
            for n in range(5):
                assert same(opt(x, n), x * n)
        assert cnt.frame_count == 2
        assert "hit config.recompile_limit (2)" in caplog.text
        assert "last reason" in caplog.text and "L['n']" in caplog.text
    finally:
        dconfig.recompile_limit = old


def test_guard_function_is_generated_code():
    opt = ember.compile(f_arith, backend="eager")
    opt(t(2), t(2))
    st = opt._frame_state
    guard, residual = st.entries[0]
    assert guard.__code__.co_filename.startswith("<ember dynamo guards f_arith")
    assert "x._size ==" in guard.source
    assert residual.__code__.co_filename.startswith("<ember dynamo residual")


def test_recompiles_log_names_guard(caplog):
    ember._logging.set_logs(recompiles=True)
    try:
        opt = ember.compile(f_arith, backend="eager")
        with caplog.at_level(logging.DEBUG, logger="ember._dynamo"):
            opt(t(2), t(2))
            opt(t(5), t(5))
        assert "Recompiling function f_arith" in caplog.text
        assert "tensor 'L['x']' size mismatch at index 0. expected 2, actual 5" in caplog.text
    finally:
        ember._logging.set_logs()


def test_logs_graph_breaks_and_code(caplog):
    ember._logging.set_logs(graph_breaks=True, graph_code=True, guards=True, bytecode=True)
    try:
        with caplog.at_level(logging.DEBUG, logger="ember._dynamo"):
            ember.compile(seed_example, backend="eager")(t(3))
        text = caplog.text
        assert "Graph break in user code" in text and "print" in text
        assert "TRACED GRAPH" in text and "sin" in text
        assert "GUARDS" in text
        assert "def ___residual(x, ___closure):" in text
    finally:
        ember._logging.set_logs()


def test_torch_logs_environment_variable():
    import subprocess
    import sys
    code = ("import ember\n"
            "def f(x):\n    y = x + 1\n    print('p')\n    return y * 2\n"
            "ember.compile(f, backend='eager')(ember.ones(2))\n")
    root = __import__("os").path.dirname(__import__("os").path.dirname(__file__))
    env = dict(__import__("os").environ, TORCH_LOGS="graph_breaks,recompiles", PYTHONPATH=root)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    assert "[ember._dynamo.__graph_breaks] Graph break in user code" in r.stderr


def test_torch_logs_parse():
    from ember._logging import _parse_torch_logs
    assert _parse_torch_logs("+dynamo,graph_breaks") == {"dynamo": logging.DEBUG,
                                                         "graph_breaks": True}
    with pytest.raises(ValueError):
        _parse_torch_logs("nonsense")


# ---------------------------------------------------------------------------------------------
# Side effects

SIDE = {"count": 0}
GLOBAL_COUNTER = 0


def f_list_mutation(xs, x):
    xs.append(x * 2)
    xs[0] = xs[0] + 1
    return x


def f_dict_mutation(d, x):
    d["new"] = x + 1
    del d["old"]
    return x


def f_global_write(x):
    global GLOBAL_COUNTER
    GLOBAL_COUNTER = GLOBAL_COUNTER + 1
    return x * GLOBAL_COUNTER


class Holder:
    def __init__(self):
        self.value = 1


def f_attr_write(obj, x):
    obj.value = obj.value + 1
    obj.last = x * 2
    return x + obj.value


class Caching(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(3, 3)
        self.calls = 0

    def forward(self, x):
        self.calls += 1
        self.last = self.lin(x)
        return self.last


def test_side_effects_replayed():
    xs_e, xs_c = [t(2)], [t(2)]
    x = t(2)
    f_list_mutation(xs_e, x)
    ember.compile(f_list_mutation, backend="eager")(xs_c, x)
    assert same(xs_e, xs_c)

    d_e, d_c = {"old": 1}, {"old": 1}
    f_dict_mutation(d_e, x)
    ember.compile(f_dict_mutation, backend="eager")(d_c, x)
    assert same(d_e, d_c)

    global GLOBAL_COUNTER
    GLOBAL_COUNTER = 0
    opt = ember.compile(f_global_write, backend="eager")
    out1 = opt(x)
    assert GLOBAL_COUNTER == 1 and same(out1, x * 1)
    out2 = opt(x)  # a new value of the global: guard fails, recompiles
    assert GLOBAL_COUNTER == 2 and same(out2, x * 2)

    h_e, h_c = Holder(), Holder()
    r_e = f_attr_write(h_e, x)
    r_c = ember.compile(f_attr_write, backend="eager")(h_c, x)
    assert same(r_e, r_c) and h_e.value == h_c.value and same(h_e.last, h_c.last)

    m = Caching()
    opt = ember.compile(m, backend="eager")
    y = opt(x.reshape(1, 2)[:, :1].expand(1, 3).contiguous())
    assert m.calls == 1 and same(m.last, y)


def test_inplace_on_input_visible():
    x = t(3)
    x_e = x.clone()
    f_inplace_input(x_e)
    ember.compile(f_inplace_input, backend="eager")(x)
    assert same(x, x_e)


def test_batchnorm_running_stats_match():
    ember.manual_seed(3)
    m1 = ConvNet()
    m2 = ConvNet()
    m2.load_state_dict(m1.state_dict())
    x = t(2, 1, 8, 8)
    m1(x)
    ember.compile(m2, backend="eager")(x)
    assert same(m1.bn.running_mean, m2.bn.running_mean)
    assert same(m1.bn.running_var, m2.bn.running_var)
    assert m1.bn.num_batches_tracked.item() == m2.bn.num_batches_tracked.item()


# ---------------------------------------------------------------------------------------------
# Backends and API


def test_backends_registry():
    names = ember._dynamo.list_backends()
    assert "inductor" in names and "eager" not in names
    assert "eager" in ember._dynamo.list_backends(exclude_tags=())
    seen = []

    @ember._dynamo.register_backend(name="my_test_backend")
    def my_backend(gm, example_inputs):
        seen.append((gm, [tuple(e.shape) for e in example_inputs]))
        return gm.forward
    try:
        out = ember.compile(f_arith, backend="my_test_backend")(t(2), t(2))
        assert same(out, f_arith(t(2), t(2)))
        assert seen[0][1] == [(2,), (2,)]
        assert isinstance(seen[0][0], ember.fx.GraphModule)
        vals = [n.meta["val"] for n in seen[0][0].graph.nodes if n.op == "placeholder"]
        assert all(isinstance(v, ember._subclasses.fake_tensor.FakeTensor) for v in vals)
    finally:
        from ember._dynamo.backends import registry
        registry._BACKENDS.pop("my_test_backend")
        registry._TAGS.pop("my_test_backend")
    with pytest.raises(ember._dynamo.exc.InvalidBackend):
        ember.compile(f_arith, backend="nope")
    for b in ("eager", "aot_eager", "inductor"):
        assert same(ember.compile(f_arith, backend=b)(t(2), t(2)), f_arith(t(2), t(2)))


def test_allow_in_graph_and_disable_context():
    def helper(x):
        return x * 2 + 1
    ember.compiler.allow_in_graph(helper)
    cnt = CompileCounter()

    def f(x):
        return helper(x).sin()
    opt = ember.compile(f, backend=cnt)
    assert same(opt(t(3)), f(t(3)))
    gm = cnt.graphs[0]
    assert any(n.target is helper for n in gm.graph.nodes)
    ember._dynamo.eval_frame._allowed_fns.discard(helper)
    with ember._dynamo.disable():
        opt2 = ember.compile(f_arith, backend=cnt)
        n = cnt.frame_count
        opt2(t(2), t(2))
        assert cnt.frame_count == n


def test_decorator_forms_and_methods():
    @ember.compile
    def f(x):
        return x + 1

    @ember.compile(backend="eager", fullgraph=True)
    def g(x, *, k=2):
        return x * k
    x = t(3)
    assert same(f(x), x + 1)
    assert same(g(x), x * 2) and same(g(x, k=3), x * 3)
    assert g.__name__ == "g"


def test_graph_metadata():
    cnt = CompileCounter()
    ember.compile(f_arith, backend=cnt)(t(2), t(2))
    gm = cnt.graphs[0]
    nodes = [n for n in gm.graph.nodes if n.op == "call_function"]
    assert all("stack_trace" in n.meta and "f_arith" in n.meta["stack_trace"] for n in nodes)
    assert all(isinstance(n.meta["val"], ember.Tensor) for n in nodes)
    gm.graph.lint()


def test_globals_of_other_modules_are_guarded():
    import sys
    import types
    mod = types.ModuleType("_dynamo_test_helpermod")
    exec("SCALE = 2.0\ndef helper(x):\n    return x * SCALE\n", mod.__dict__)
    sys.modules[mod.__name__] = mod
    try:
        def f(x):
            return mod.helper(x) + 1
        cnt = CompileCounter()
        opt = ember.compile(f, backend=cnt)
        x = ember.ones(2)
        assert same(opt(x), x * 2 + 1)
        mod.SCALE = 5.0
        assert same(opt(x), x * 5 + 1)
        assert cnt.frame_count == 2
    finally:
        del sys.modules[mod.__name__]


COND_W = ember.ones(3) * 0.5


def f_cond(x, y):
    z = x * 2
    out = ember.cond(z.sum() > 0, lambda a, b: a + b * COND_W + z, lambda a, b: a - b, (x, y))
    return out.relu()


def test_cond_keeps_both_branches_in_one_graph():
    e = ember._dynamo.explain(f_cond)(ember.ones(3), t(3))
    assert e.graph_count == 1 and e.graph_break_count == 0
    cnt = CompileCounter()
    opt = ember.compile(f_cond, backend=cnt)
    for sign in (1.0, -1.0):
        x, y = ember.ones(3) * sign, t(3)
        assert same(opt(x, y), f_cond(x, y))
    assert cnt.frame_count == 1  # the predicate's value is not guarded: no recompile
    gm = cnt.graphs[0]
    assert isinstance(gm.cond_true_0, ember.fx.GraphModule)
    assert [n.op for n in gm.cond_true_0.graph.nodes].count("placeholder") == 4  # 2 + lifted
    with pytest.raises(RuntimeError, match="single-element"):
        ember.cond(ember.ones(2), lambda: 1, lambda: 2)


def test_cond_fullgraph_and_mismatch():
    opt = ember.compile(f_cond, backend="eager", fullgraph=True)
    assert same(opt(ember.ones(3), t(3)), f_cond(ember.ones(3), t(3)))

    def bad(x):
        return ember.cond(x.sum() > 0, lambda a: a, lambda a: a.sum(), (x,))
    with pytest.raises(Unsupported, match="different metadata"):
        ember.compile(bad, backend="eager", fullgraph=True)(t(3))


def f_star_print(x, *rest):
    y = x * 2
    print(*rest, sep="-")
    return y + len(rest)


def test_break_at_call_function_ex(capsys):
    e = ember._dynamo.explain(f_star_print)(t(2), "a", "b")
    assert e.graph_count == 2 and e.graph_break_count == 1
    assert "a-b" in capsys.readouterr().out
    run_both(f_star_print, (t(2), "a", "b"), graphs=2)


def _outer_with_cell():
    k = ember.ones(3)

    def f(x):
        g = lambda v: v + k  # noqa: E731  (a closure over f's own free variable)
        return g(x) * 2
    return f


def test_lambda_over_free_variable():
    run_both(_outer_with_cell(), (t(3),), graphs=1)


def f_break_in_autocast(x):
    with ember.autocast("cpu", dtype=ember.bfloat16):
        y = x @ x
        print("in autocast")
    return y


def test_break_inside_autocast_runs_frame_eagerly():
    # a break inside an autocast block is not resumable here: the frame runs eagerly
    e = ember._dynamo.explain(f_break_in_autocast)(t(2, 2))
    assert e.graph_count == 0 and e.break_reasons == []  # (no graph, so no reason)
    run_both(f_break_in_autocast, (t(2, 2),), graphs=0)


def test_unsupported_python_runs_eagerly_with_one_warning(monkeypatch):
    from ember._dynamo import convert_frame
    monkeypatch.setattr(convert_frame, "supported_python", lambda: False)
    convert_frame._warned.discard("version")
    cnt = CompileCounter()
    opt = ember.compile(f_arith, backend=cnt)
    with pytest.warns(RuntimeWarning, match="bytecode is not supported"):
        assert same(opt(t(2), t(2)), f_arith(t(2), t(2)))
    assert cnt.frame_count == 0


def test_residual_is_readable_python(caplog):
    ember._logging.set_logs(bytecode=True)
    try:
        with caplog.at_level(logging.DEBUG, logger="ember._dynamo"):
            ember.compile(seed_example, backend="eager")(t(3))
    finally:
        ember._logging.set_logs()
    text = caplog.text
    line = seed_example.__code__.co_firstlineno + 2
    assert f"# graph break ({__file__}:{line}): Failed to trace builtin operator" in text
    assert "___out = __compiled_fn_0(x)" in text
    assert "return __resume_at_" in text


def test_compile_partial_and_callable_object():
    import functools

    class Scaler:
        def __init__(self, k):
            self.k = k

        def __call__(self, x):
            return x * self.k
    cnt = CompileCounter()
    x = t(3)
    assert same(ember.compile(Scaler(3.0), backend=cnt)(x), x * 3.0)
    assert same(ember.compile(functools.partial(helper_add, c=4), backend=cnt)(x, x),
                helper_add(x, x, c=4))
    assert cnt.frame_count == 2
    with pytest.raises(TypeError, match="ember.compile expects"):
        ember.compile(len, backend=cnt)


def test_custom_op_is_one_graph_node():
    @ember.library.custom_op("dynamotest::myadd", mutates_args=())
    def myadd(x: ember.Tensor, y: ember.Tensor) -> ember.Tensor:
        return ember.from_numpy(x.numpy() + y.numpy())

    @myadd.register_fake
    def _(x, y):
        return ember.empty_like(x)

    def f(x, y):
        return myadd(x, y).sin()
    cnt = run_both(f, (t(3), t(3)), graphs=1)
    targets = [n.target for n in cnt.graphs[0].graph.nodes if n.op == "call_function"]
    assert any(getattr(tg, "_opname", None) == "myadd" or "myadd" in str(tg) for tg in targets)


def f_tensor_or(x):
    y = (x * 2).sum() or x
    return y + 1


def f_tensor_and(x):
    y = (x * 0).sum() and x
    return y - 1


def test_break_on_and_or_of_tensors():
    for fn in (f_tensor_or, f_tensor_and):
        e = ember._dynamo.explain(fn)(t(3))
        assert e.graph_break_count == 1
        assert e.break_reasons[0].reason == "generic_jump TensorVariable()"
        run_both(fn, (t(3),))
        run_both(fn, (ember.zeros(3),))


def test_nonlocal_write_to_compiled_functions_own_cell():
    def make():
        count = 0

        def f(x):
            nonlocal count
            count += 1
            return x * count

        def get():
            return count
        return f, get
    cnt = CompileCounter()
    (f1, get1), (f2, get2) = make(), make()
    o1, o2 = ember.compile(f1, backend=cnt), ember.compile(f2, backend=cnt)
    x = t(2)
    assert same(o1(x), x * 1) and get1() == 1
    assert same(o2(x), x * 1) and get2() == 1 and get1() == 1
    assert same(o1(x), x * 2) and get1() == 2 and get2() == 1


def test_mode_and_options_reach_the_backend():
    seen = []

    @ember._dynamo.register_backend(name="opts_test_backend")
    def opts_backend(gm, example_inputs, **kwargs):
        seen.append(kwargs)
        return gm.forward
    try:
        ember.compile(f_arith, backend="opts_test_backend", options={"a": 1})(t(2), t(2))
        assert seen == [{"a": 1}]
    finally:
        from ember._dynamo.backends import registry
        registry._BACKENDS.pop("opts_test_backend")
        registry._TAGS.pop("opts_test_backend")
    with pytest.raises(RuntimeError, match="Either mode or options"):
        ember.compile(f_arith, mode="max-autotune", options={"a": 1})
    with pytest.raises(RuntimeError, match="Unrecognized mode"):
        ember.compile(f_arith, mode="fast")
    out = ember.compile(f_arith, mode="max-autotune")(t(2), t(2))
    assert same(out, f_arith(t(2), t(2)))


def test_named_results_of_ops_are_traced_by_field():
    # sort/max return ember.return_types namedtuples: fields by name or position stay in the
    # graph, and a namedtuple returned from the frame is rebuilt with its own class
    graphs = []

    def backend(gm, inputs):
        graphs.append(gm)
        return gm

    @ember.compile(backend=backend, fullgraph=True)
    def f(x):
        s = x.sort(1)
        return s.values * 2, s[1], x.max(1)
    x = ember.randn(3, 4)
    values2, indices, mx = f(x)
    assert len(graphs) == 1
    assert ember.equal(values2, x.sort(1).values * 2) and ember.equal(indices, x.sort(1).indices)
    assert type(mx) is ember.return_types.max and ember.equal(mx.indices, x.max(1).indices)


def test_compiled_function_called_from_compiled_code_compiles_once():
    """A compiled function called by compiled code is inlined; the guard on it holds on later
    calls (it was on the wrapped function, seen through a wrapper the guard never saw)."""
    inner = ember.compile(lambda x: x * 2, backend="eager")
    holder = type("Holder", (), {})()
    holder.fn = inner
    cnt = CompileCounter()

    def outer(x):
        return inner(x) + holder.fn(x)
    opt = ember.compile(outer, backend=cnt)
    x = t(3)
    for _ in range(4):
        assert same(opt(x), x * 2 + x * 2)
    assert cnt.frame_count == 1
    holder.fn = ember.compile(lambda x: x * 3, backend="eager")  # another function: recompiles
    assert same(opt(x), x * 2 + x * 3) and cnt.frame_count == 2
