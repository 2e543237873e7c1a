"""out= tensors of the wrong dtype, against PyTorch: the structured kernels outside
TensorIterator (products, softmax, tril/triu, sort/topk, upsampling ...) refuse an out whose
dtype is not the result's with PyTorch's message, and write nothing; reductions that take their
dtype from out still accept it."""
import pytest

import ember


def _calls(L):
    s, b, v, a = L.ones(3, 3), L.ones(2, 3, 3), L.ones(3), L.ones(2, 3)
    i64 = L.int64
    return {
        "mm": lambda o: L.mm(s, s, out=o(3, 3)), "bmm": lambda o: L.bmm(b, b, out=o(2, 3, 3)),
        "addmm": lambda o: L.addmm(s, s, s, out=o(3, 3)),
        "baddbmm": lambda o: L.baddbmm(b, b, b, out=o(2, 3, 3)),
        "addmv": lambda o: L.addmv(v, s, v, out=o(3)),
        "_softmax": lambda o: L.ops.aten._softmax.out(a, 1, False, out=o(2, 3)),
        "_log_softmax": lambda o: L.ops.aten._log_softmax.out(a, 1, False, out=o(2, 3)),
        "tril": lambda o: L.tril(a, out=o(2, 3)), "triu": lambda o: L.triu(a, out=o(2, 3)),
        "norm": lambda o: L.norm(a, 2, 1, out=o(2)), "diag": lambda o: L.diag(s, out=o(3)),
        "sort": lambda o: L.sort(a, 1, out=(o(2, 3), L.empty(2, 3, dtype=i64))),
        "topk": lambda o: L.topk(a, 2, out=(o(2, 2), L.empty(2, 2, dtype=i64))),
        "upsample_nearest2d": lambda o: L._C._nn.upsample_nearest2d(
            L.ones(1, 1, 2, 2), [4, 4], out=o(1, 1, 4, 4)),
        # reductions whose dtype comes from out
        "sum": lambda o: L.sum(a, 1, out=o(2)), "cumsum": lambda o: L.cumsum(a, 1, out=o(2, 3)),
    }


@pytest.mark.parametrize("name", list(_calls(ember)))
def test_out_of_another_dtype_as_pytorch(torch, name):
    outcomes = []
    for L in (ember, torch):
        outs = []

        def o(*shape):
            t = L.full(shape, 7.0, dtype=L.float64)
            outs.append(t)
            return t
        try:
            _calls(L)[name](o)
            outcomes.append("ok")
        except RuntimeError as e:
            outcomes.append(str(e))
            assert all((t.numpy() == 7.0).all() for t in outs), "out written before the error"
    assert outcomes[0] == outcomes[1]
