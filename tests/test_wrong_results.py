"""Wrong results found by PyTorch's op database and by hand (issue 18, item 3): each case runs
the same program on ember and on PyTorch and compares values, gradients and exception types."""
import warnings

import numpy as np
import pytest

import ember

CASES = {}


def case(name, f):
    CASES[name] = f


def g(m, fn, *inputs):
    """fn's output and the float64 gradients of its sum with respect to each input."""
    xs = [m.tensor(x, dtype=m.float64, requires_grad=True) for x in inputs]
    y = fn(m, *xs)
    gs = m.autograd.grad(y.sum() if y.dim() else y, xs, allow_unused=True)
    return [y] + [z if z is not None else m.zeros(()) for z in gs]


def _outcome(f, m):
    try:
        r = f(m)
    except Exception as e:  # the exception type is part of what is compared
        return type(e)
    rs = r if isinstance(r, (tuple, list)) else [r]
    return [np.asarray(x.detach().tolist() if hasattr(x, "detach") else x, dtype=float) for x in rs]


rng = np.random.default_rng(0)
A = rng.standard_normal((3,3)); S = A + A.T
C1, C2, X2, W2, X3, W3, Q3 = [rng.standard_normal(s).tolist() for s in [(2,1,4),(3,4),(1,4,3,3),(4,1,2,2),(1,2,2,2,2),(2,1,2,2,2),(3,3)]]
case("cosine_similarity_bcast", lambda m: g(m, lambda m,a,b: m.nn.functional.cosine_similarity(a,b,dim=-1), C1, C2))
case("eigh_U", lambda m: m.linalg.eigh(m.tensor(np.triu(A).tolist()), UPLO='U'))
case("eigvalsh_U", lambda m: m.linalg.eigvalsh(m.tensor(np.triu(A).tolist()), UPLO='U'))
case("pinv_herm", lambda m: m.linalg.pinv(m.tensor(np.tril(S).tolist()), hermitian=True))
case("multilabel_margin_rep", lambda m: g(m, lambda m,x: m.nn.functional.multilabel_margin_loss(x, m.tensor([[1,1,2,-1]])), [[0.1,0.2,0.4,0.8]]))
case("prelu_0d", lambda m: m.nn.functional.prelu(m.tensor(-2.0), m.tensor([0.25])))
case("diff_n0", lambda m: m.diff(m.tensor([1.,2.,4.]), n=0, prepend=m.tensor([0.]), append=m.tensor([9.])))
case("scatter_reduce_sum_noself_grad", lambda m: g(m, lambda m,s,src: s.scatter_reduce(0, m.tensor([0,0,2]), src, 'sum', include_self=False), [1.,2.,3.], [4.,5.,6.]))
case("index_fill_0d_value_grad", lambda m: g(m, lambda m,s,v: s.index_fill(0, m.tensor([0,0,2]), v), [1.,2.,3.], 5.0))
case("pinv_grad_rank_def", lambda m: g(m, lambda m,a: m.linalg.pinv(a), [[1.,0.],[0.,0.]]))
case("lppool_zero_grad", lambda m: g(m, lambda m,x: m.nn.functional.lp_pool1d(x, 2, 2), [[[0.,0.,1.,2.]]]))
def bn0(m):  # the running statistics after a training step on an empty batch
    bn = m.nn.BatchNorm1d(3); bn.train()
    bn(m.zeros(0, 3))
    return m.cat([bn.running_mean, bn.running_var])
case("batchnorm_empty", bn0)
case("cdist_p0_grad", lambda m: g(m, lambda m,a,b: m.cdist(a,b,p=0), [[1.,2.],[3.,4.]], [[1.,5.]]))
case("pdist_p0_grad", lambda m: g(m, lambda m,a: m.pdist(a,p=0), [[1.,2.],[3.,4.],[1.,4.]]))
case("vecmat_grad", lambda m: g(m, lambda m,a,b: m.matmul(a,b), [1.,2.], [[1.,2.,3.],[4.,5.,6.]]))
case("linear_1d_grad", lambda m: g(m, lambda m,x,w: m.nn.functional.linear(x,w), [1.,2.], [[1.,2.],[3.,4.],[5.,6.]]))
case("convT2d_grad", lambda m: g(m, lambda m,x,w: m.nn.functional.conv_transpose2d(x,w,stride=2,output_padding=1,dilation=2,groups=2), X2, W2))
case("convT3d_grad", lambda m: g(m, lambda m,x,w: m.nn.functional.conv_transpose3d(x,w,stride=2,output_padding=1,dilation=2,groups=2), X3, W3))
case("solve_1d_b_grad", lambda m: g(m, lambda m,a,b: m.linalg.solve(a,b), (A+3*np.eye(3)).tolist(), [1.,2.,3.]))
case("eig_grad", lambda m: g(m, lambda m,a: m.linalg.eigvals(a).real, (S+np.diag([1.,2.,3.])).tolist()))
case("eig_vec_grad", lambda m: g(m, lambda m,a: m.linalg.eig(a)[0].abs(), (S+np.diag([1.,2.,3.])).tolist()))
case("qr_complete_grad", lambda m: g(m, lambda m,a: m.linalg.qr(a, mode='complete')[1], Q3))
case("qr_r_grad", lambda m: g(m, lambda m,a: m.linalg.qr(a, mode='r')[1], Q3))
for op in ["cholesky","inv","det","slogdet","logdet","matrix_rank","pinv","norm"]:
    for shp in [(0,0),(2,0,0)]:
        def f(m, op=op, shp=shp):
            x = m.zeros(shp)
            fn = {"cholesky": m.linalg.cholesky, "inv": m.linalg.inv, "det": m.linalg.det, "slogdet": lambda a: m.linalg.slogdet(a), "logdet": m.logdet, "matrix_rank": m.linalg.matrix_rank, "pinv": m.linalg.pinv, "norm": m.linalg.norm}[op]
            r = fn(x)
            return list(r) if isinstance(r, tuple) else r
        case(f"{op}_empty{shp}", f)
case("solve_empty", lambda m: m.linalg.solve(m.zeros(0,0), m.zeros(0)))
case("solve_empty_batch", lambda m: m.linalg.solve(m.zeros(2,0,0), m.zeros(2,0,3)))
case("matmul_zero_inner", lambda m: m.matmul(m.zeros(2,0), m.zeros(0,3)))
case("maxpool_bwd_int", lambda m: m.ops.aten.max_pool2d_with_indices_backward(m.ones(1,1,1,1), m.ones(1,1,2,2), 2, 2, 0, 1, False, m.zeros(1,1,1,1,dtype=m.long)))
case("tensor_split_tensor", lambda m: list(m.tensor_split(m.arange(6.), m.tensor(3))))
case("tensor_split_tensor_idx", lambda m: list(m.tensor_split(m.arange(6.), m.tensor([1,4]))))
case("gather_empty_uint8", lambda m: m.gather(m.ones(2,2), 1, m.zeros(2,0,dtype=m.uint8)))
case("take_along_dim_neg", lambda m: m.take_along_dim(m.arange(6.).reshape(2,3), m.tensor([[-1],[0]]), 1))
case("batch_norm_1d", lambda m: m.nn.functional.batch_norm(m.tensor([1.,2.,3.]), m.zeros(3), m.ones(3)))
case("batch_norm_1d_train", lambda m: m.nn.functional.batch_norm(m.tensor([1.,2.,3.]), None, None, training=True))
def inorm(m):
    mod = m.nn.InstanceNorm1d(3, affine=True, bias=False)
    return [mod.weight, m.tensor(float(mod.bias is None)), m.tensor(float(len(mod.state_dict())))]
case("instancenorm_bias", inorm)
case("gaussian_nll_homo", lambda m: g(m, lambda m,x,v: m.nn.GaussianNLLLoss()(x, m.tensor([[1.,2.],[3.,4.]]), v), [[1.,2.],[3.,5.]], [[1.],[2.]]))
for args in [dict(input_size=2, hidden_size=0), dict(input_size=2, hidden_size=3, num_layers=0), dict(input_size=2, hidden_size=3, dropout=2.0), dict(input_size=2, hidden_size=-1), dict(input_size=2, hidden_size=2.5), dict(input_size=2,hidden_size=3,proj_size=3)]:
    for cls in ["RNN","LSTM","GRU"]:
        case(f"{cls}{args}", lambda m, cls=cls, args=args: (getattr(m.nn, cls)(**args), m.zeros(1))[1])
for cls in ["RNNCell","LSTMCell","GRUCell"]:
    case(f"{cls}_h0", lambda m, cls=cls: getattr(m.nn, cls)(2, 0) and m.zeros(1))
    case(f"{cls}_badinput", lambda m, cls=cls: getattr(m.nn, cls)(2, 3)(m.zeros(4,5)))
    case(f"{cls}_3d", lambda m, cls=cls: getattr(m.nn, cls)(2, 3)(m.zeros(4,1,2)))
case("bn_eps0", lambda m: m.nn.functional.batch_norm(m.ones(2,3), m.zeros(3), m.ones(3), eps=0.0))
case("bn_epsneg", lambda m: m.nn.functional.batch_norm(m.ones(2,3), m.zeros(3), m.ones(3), eps=-1.0))
case("bnmod_eps0", lambda m: m.nn.BatchNorm1d(3, eps=0.0)(m.ones(2,3)))


@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_pytorch(name, torch):
    expected = _outcome(CASES[name], torch)
    got = _outcome(CASES[name], ember)
    if isinstance(expected, type):
        assert got is expected
        return
    assert not isinstance(got, type), f"ember raised {got.__name__}"
    assert len(got) == len(expected)
    for a, b in zip(got, expected):
        assert a.shape == b.shape
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6, equal_nan=True)



INF, NAN = float("inf"), float("nan")
_NONFINITE_ROWS = [[1., 2., INF], [1., -INF, 3.], [INF, 1., 2.], [INF, INF, 1.], [1., INF, INF],
                   [INF, -INF, 1.], [1., 2., -INF], [1., NAN, INF], [INF, 2., NAN], [1., 2., 3.]]


def _moments_both(torch, fn, make, **kw):
    """fn(make(m), **kw) on PyTorch and ember, each as float64 arrays (complex: real, imag)."""
    outs = []
    for m in (torch, ember):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # degrees of freedom <= 0
            res = getattr(m, fn)(make(m), **kw)
        arrs = []
        for t in res:
            t = m.view_as_real(t) if t.is_complex() else t
            arrs.append(np.asarray(t.to(m.float64).tolist(), dtype=float))
        outs.append(arrs)
    return outs


def _assert_same(outs):
    want, got = outs
    for a, b in zip(got, want):
        assert a.shape == b.shape
        np.testing.assert_allclose(a, b, rtol=1e-2, equal_nan=True)


@pytest.mark.parametrize("fn", ["var_mean", "std_mean"])
@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16", "complex64"])
@pytest.mark.parametrize("dim,keepdim", [(None, False), (1, False), (1, True), (0, False),
                                         ((0, 1), True), (-1, False)])
@pytest.mark.parametrize("correction", [0, 1])
def test_var_mean_nonfinite_mean_is_welfords(fn, dtype, dim, keepdim, correction, torch):
    """var_mean/std_mean take the mean from a running (Welford) update: it stays +-inf only when
    the one infinity is the last element reduced, NaN for any other non-finite slice (sum/n
    gave +-inf for [inf, inf, 1] or [1, -inf, 3])."""
    rows = _NONFINITE_ROWS
    if dtype == "complex64":  # each component is reduced on its own
        rows = [[complex(a, b) for a, b in zip(r, reversed(r))] for r in rows]
    _assert_same(_moments_both(torch, fn, lambda m: m.tensor(rows, dtype=getattr(m, dtype)),
                               dim=dim, correction=correction, keepdim=keepdim))


@pytest.mark.parametrize("make,dim", [
    (lambda m: m.tensor(INF), None),                                         # 0-d
    (lambda m: m.tensor([[0., INF, 0.], [0., 0., 0.]]).T, 1),                # transposed
    (lambda m: m.tensor([[0., 0., 0.], [0., 0., INF]]).T, None),             # last in memory
    (lambda m: m.tensor([[0., 0., INF], [0., 0., 0.]]).T, None),
    (lambda m: m.tensor([1., INF]).expand(3, 2), 0),                         # one inf, repeated
    (lambda m: m.tensor([[1.], [INF]]).expand(2, 3), 0),
    (lambda m: m.cat([m.zeros(40000), m.tensor([INF])]), None),              # ATen's chunks
    (lambda m: m.zeros(3, 0), 1),                                            # empty: NaN
])
def test_var_mean_nonfinite_layouts(make, dim, torch):
    _assert_same(_moments_both(torch, "var_mean", make, dim=dim))
