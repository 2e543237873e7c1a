"""Memory overlap (issue 18, item 6): in-place ops and out= that would write one location twice,
or write where an input still to be read lies, raise PyTorch's errors; what PyTorch allows
(a tensor as its own input, fill_ on an expanded tensor) still works."""
import warnings

import pytest

import ember

CASES = {
 "expand_copy_": lambda m: m.zeros(1).expand(3).copy_(m.tensor([1.,2.,3.])),
 "partial_add_": lambda m: (lambda a: a[1:].add_(a[:-1]))(m.arange(4.)),
 "full_add_": lambda m: (lambda a: a.add_(a))(m.arange(4.)),
 "add_out_overlap": lambda m: (lambda a: m.add(a[:-1], 1, out=a[1:]))(m.arange(4.)),
 "add_out_same": lambda m: (lambda a: m.add(a, 1, out=a))(m.arange(4.)),
 "cat_out": lambda m: (lambda a: m.cat([a[:2], a[2:4]], out=a[1:5]))(m.arange(6.)),
 "clamp_out": lambda m: (lambda a: m.clamp(a[:-1], 0, 1, out=a[1:]))(m.arange(4.)),
 "mul_expanded": lambda m: m.ones(1).expand(3).mul_(2),
 "mul_expanded_T": lambda m: m.ones(1,1).expand(3,3).mul_(m.ones(3,3)),
 "neg_out_overlap": lambda m: (lambda a: m.neg(a[:-1], out=a[1:]))(m.arange(4.)),
 "exp_": lambda m: m.ones(1).expand(3).exp_(),
 "fill_expanded": lambda m: m.zeros(1).expand(3).fill_(1),
 "zero_expanded": lambda m: m.zeros(1).expand(3).zero_(),
 "where_out": lambda m: (lambda a: m.where(a>0, a, a, out=a[:]))(m.ones(2)),
 "sigmoid_": lambda m: m.ones(1).expand(3).sigmoid_(),
 "relu_": lambda m: m.ones(1).expand(3).relu_(),
 "setitem": lambda m: (lambda a: a.__setitem__(slice(1,None), a[:-1]))(m.arange(4.)),
 "stack_out": lambda m: (lambda a: m.stack([a[0], a[1]], out=a))(m.ones(2,2)),
 "lerp_": lambda m: (lambda a: a[1:].lerp_(a[:-1], 0.5))(m.arange(4.)),
    "add_transposed_self": lambda m: (lambda b: b.add_(b.t()))(m.ones(2, 2)),
    "copy_full_self": lambda m: (lambda a: a.copy_(a))(m.arange(4.)),
    "div_out_overlap": lambda m: (lambda a: m.div(a[:-1], 2, out=a[1:]))(m.arange(4.)),
    "atan2_out_overlap": lambda m: (lambda a: m.atan2(a[:-1], a[1:], out=a[1:]))(m.arange(4.)),
    "sub_expanded_other_ok": lambda m: m.zeros(3).sub_(m.ones(1).expand(3)),
    "cat_out_full": lambda m: (lambda a: m.cat([a], out=a))(m.arange(4.)),
    "gather_out_is_input": lambda m: (lambda x: m.gather(x, 0, m.tensor([0, 1, 2]), out=x))(m.arange(6.)),
    "take_out_expanded": lambda m: m.take(m.arange(6.), m.tensor([0, 1, 2]), out=m.zeros(1).expand(3)),
    "index_select_out_view": lambda m: (lambda x: m.index_select(x, 0, m.tensor([0, 1]), out=x[:2]))(m.arange(6.)),
    "masked_select_out_is_input": lambda m: (lambda x: m.masked_select(x, x > 2, out=x))(m.arange(6.)),
    "gather_out_fresh_ok": lambda m: m.gather(m.arange(6.), 0, m.tensor([0, 1, 2]), out=m.zeros(3)),
}


def _outcome(f, m):
    try:
        r = f(m)
    except RuntimeError as e:
        return str(e)
    return r.tolist() if hasattr(r, "tolist") else r


@pytest.mark.parametrize("name", sorted(CASES))
def test_overlap_like_pytorch(name, torch):
    assert _outcome(CASES[name], ember) == _outcome(CASES[name], torch)


def test_masked_fill_on_expanded_warns_like_pytorch():
    t = ember.zeros(1).expand(3)
    with pytest.warns(UserWarning, match="Use of masked_fill_ on expanded tensors is deprecated"):
        t.masked_fill_(ember.tensor([True, False, True]), 1.0)
    assert t.tolist() == [1.0, 1.0, 1.0]


def test_failed_write_leaves_tensors_untouched():
    a = ember.arange(4.0)
    with pytest.raises(RuntimeError, match="some elements of the input tensor"):
        a[1:].add_(a[:-1])
    with pytest.raises(RuntimeError, match="some elements of the input tensor"):
        ember.add(a[:-1], 1, out=a[1:])
    assert a.tolist() == [0.0, 1.0, 2.0, 3.0]
