"""Bad input found by fuzzing (issue 18, item 7): PyTorch's exception type and message, and no
NumPy warnings where PyTorch is silent. Each case runs the same call on ember and on PyTorch."""
import warnings

import pytest

import ember

# name -> call taking the library module; each raised, in PyTorch, what ember must raise
ERRORS = {
    "embedding_negative_index": lambda m: m.nn.functional.embedding(m.tensor([-1]), m.ones(3, 2)),
    "nn_Embedding_negative_index": lambda m: m.nn.Embedding(3, 2)(m.tensor([0, -2])),
    "embedding_bag_out_of_range": lambda m: m.nn.functional.embedding_bag(m.tensor([[5]]), m.ones(3, 2)),
    "embedding_bag_negative": lambda m: m.nn.functional.embedding_bag(m.tensor([0, -1]), m.ones(3, 2),
                                                                       m.tensor([0])),
    "masked_fill_overflow": lambda m: m.zeros(2, dtype=m.float16).masked_fill(
        m.tensor([True, False]), 1e10),
    "masked_fill_int_overflow": lambda m: m.zeros(2, dtype=m.int8).masked_fill_(
        m.tensor([True, False]), 300),
    "reshape_str": lambda m: m.ones(2).reshape("a"),
    "permute_str": lambda m: m.ones(2).permute("a"),
    "flip_str": lambda m: m.ones(2).flip("a"),
    "tile_str": lambda m: m.ones(2).tile("a"),
    "cat_int_element": lambda m: m.cat([m.ones(2), 1]),
    "stack_str_element": lambda m: m.stack([m.ones(2), "x"]),
    "add_alpha_str": lambda m: m.add(m.ones(2), m.ones(2), alpha="x"),
    "full_fill_str": lambda m: m.full((2,), "a"),
    "cat_empty": lambda m: m.cat([]),
    "concat_empty": lambda m: m.concat([]),
    "stack_empty": lambda m: m.stack([]),
    "hstack_empty": lambda m: m.hstack([]),
    "vstack_empty": lambda m: m.vstack([]),
    "dstack_empty": lambda m: m.dstack([]),
    "index_add_1d_out_of_range": lambda m: m.zeros(3).index_add_(0, m.tensor([5]), m.ones(1)),
    "index_add_2d_out_of_range": lambda m: m.zeros(3, 2).index_add_(0, m.tensor([5]), m.ones(1, 2)),
    "zeros_overflow": lambda m: m.zeros(2 ** 62),
    "zeros_overflow_2d": lambda m: m.zeros(2 ** 40, 2 ** 40),
    "empty_overflow": lambda m: m.empty(2 ** 62),
    "zeros_unallocatable": lambda m: m.zeros(2 ** 61, dtype=m.int8),
    "avg_pool1d_negative_padding": lambda m: m.nn.functional.avg_pool1d(m.ones(1, 1, 4), 2, padding=-1),
    "max_pool1d_negative_padding": lambda m: m.nn.functional.max_pool1d(m.ones(1, 1, 4), 2, padding=-1),
    "max_pool2d_negative_padding": lambda m: m.nn.functional.max_pool2d(m.ones(1, 1, 4, 4), 2, padding=-1),
    "rms_norm_empty_shape": lambda m: m.nn.functional.rms_norm(m.ones(2, 3), []),
}


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_error_matches_pytorch(name, torch):
    call = ERRORS[name]
    with pytest.raises(Exception) as expected:
        call(torch)
    with pytest.raises(Exception) as got:
        call(ember)
    assert type(got.value) is type(expected.value)
    assert str(got.value) == str(expected.value)


def test_failed_masked_fill_leaves_input_untouched():
    t = ember.zeros(2, dtype=ember.float16)
    with pytest.raises(RuntimeError):
        t.masked_fill_(ember.tensor([True, True]), 1e10)
    assert t.tolist() == [0.0, 0.0]


# computations PyTorch does silently, whose NumPy equivalents warn
SILENT = {
    "inf_times_zero": lambda m: m.tensor([float("inf")]) * 0,
    "inf_minus_inf": lambda m: m.tensor([float("inf")]) - m.tensor([float("inf")]),
    "inf_minus_inf_inplace": lambda m: m.tensor([float("inf")]).sub_(float("inf")),
    "one_over_zero": lambda m: m.tensor([1.0]) / 0,
    "mean_of_empty": lambda m: m.tensor([]).mean(),
    "mean_of_empty_dim": lambda m: m.zeros(0, 3).mean(0),
    "rfftfreq_zero": lambda m: m.fft.rfftfreq(0),
    "half_overflow": lambda m: m.tensor([1e10]).half(),
}


@pytest.mark.parametrize("name", sorted(SILENT))
def test_silent_like_pytorch(name, torch):
    expected = SILENT[name](torch)
    with warnings.catch_warnings():
        # a warning PyTorch would not give fails the test, even where filters make it an error
        warnings.simplefilter("error")
        got = SILENT[name](ember)
    assert got.tolist() == pytest.approx(expected.tolist(), nan_ok=True)
