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
    # common mistakes (a probe of ~70): shapes, dtypes, indices, autograd, modules, optimizers
    "common_mm_shapes": lambda m: m.mm(m.ones(2, 3), m.ones(4, 5)),
    "common_matmul_shapes": lambda m: m.ones(2, 3) @ m.ones(4, 5),
    "common_mm_dtype": lambda m: m.mm(m.ones(2, 3), m.ones(3, 2, dtype=m.float64)),
    "common_add_broadcast": lambda m: m.ones(2, 3) + m.ones(4),
    "common_cat_dims": lambda m: m.cat([m.ones(2, 3), m.ones(2, 4)]),
    "common_cat_ndim": lambda m: m.cat([m.ones(2, 3), m.ones(3)]),
    "common_stack_shapes": lambda m: m.stack([m.ones(2), m.ones(3)]),
    "common_view_noncontig": lambda m: m.ones(2, 3).t().view(6),
    "common_view_size": lambda m: m.ones(2, 3).view(4),
    "common_reshape_size": lambda m: m.ones(2, 3).reshape(4, 2),
    "common_index_oob": lambda m: m.ones(3)[5],
    "common_index_oob_tensor": lambda m: m.ones(3)[m.tensor([5])],
    "common_gather_oob": lambda m: m.gather(m.ones(3), 0, m.tensor([5])),
    "common_embedding_oob": lambda m: m.nn.functional.embedding(m.tensor([5]), m.ones(3, 2)),
    "common_linear_in": lambda m: m.nn.Linear(3, 2)(m.ones(4, 5)),
    "common_conv_channels": lambda m: m.nn.Conv2d(3, 4, 3)(m.ones(1, 2, 8, 8)),
    "common_conv_small": lambda m: m.nn.Conv2d(3, 4, 5)(m.ones(1, 3, 2, 2)),
    "common_cross_entropy_target": lambda m: m.nn.functional.cross_entropy(m.ones(2, 3), m.tensor([0, 3])),
    "common_cross_entropy_dtype": lambda m: m.nn.functional.cross_entropy(m.ones(2, 3), m.tensor([0.0, 1.0])),
    "common_nll_batch": lambda m: m.nn.functional.nll_loss(m.ones(2, 3), m.tensor([0, 1, 2])),
    "common_backward_nonscalar": lambda m: (m.ones(2, requires_grad=True) * 2).backward(),
    "common_inplace_leaf": lambda m: m.ones(2, requires_grad=True).add_(1),
    "common_numpy_grad": lambda m: m.ones(2, requires_grad=True).numpy(),
    "common_item_multi": lambda m: m.ones(2).item(),
    "common_bool_ambiguous": lambda m: bool(m.ones(2)),
    "common_int_tensor_grad": lambda m: m.ones(2, dtype=m.int64).requires_grad_(),
    "common_permute_dims": lambda m: m.ones(2, 3).permute(0),
    "common_transpose_dim": lambda m: m.ones(2, 3).transpose(0, 2),
    "common_sum_dim": lambda m: m.ones(2, 3).sum(2),
    "common_squeeze_dim": lambda m: m.ones(2, 3).squeeze(3),
    "common_expand": lambda m: m.ones(2, 3).expand(4, 3),
    "common_repeat_few": lambda m: m.ones(2, 3).repeat(2),
    "common_split_size": lambda m: m.ones(4).split([1, 2]),
    "common_chunk_0": lambda m: m.ones(4).chunk(0),
    "common_arange_step": lambda m: m.arange(0, 5, 0),
    "common_randn_neg": lambda m: m.randn(-1),
    "common_zeros_float_size": lambda m: m.zeros(2.5),
    "common_tensor_ragged": lambda m: m.tensor([[1, 2], [3]]),
    "common_masked_fill_mask": lambda m: m.ones(2, 3).masked_fill(m.ones(2, 3), 0),
    "common_where_shapes": lambda m: m.where(m.ones(2, dtype=m.bool), m.ones(3), m.ones(2)),
    "common_softmax_dim": lambda m: m.softmax(m.ones(2, 3), dim=2),
    "common_layer_norm_shape": lambda m: m.nn.functional.layer_norm(m.ones(2, 3), (4,)),
    "common_optimizer_empty": lambda m: m.optim.SGD([], lr=0.1),
    "common_optimizer_lr": lambda m: m.optim.Adam([m.ones(2, requires_grad=True)], lr=-1),
    "common_clamp_no_args": lambda m: m.clamp(m.ones(2)),
    "common_div_int_zero": lambda m: m.tensor([1]) // m.tensor([0]),
    "common_pow_int_neg": lambda m: m.tensor([2]) ** -1,
    "common_bitwise_float": lambda m: m.ones(2) & m.ones(2),
    "common_index_select_dim": lambda m: m.index_select(m.ones(2, 3), 0, m.tensor([[0]])),
    "common_scatter_dtype": lambda m: m.zeros(3).scatter_(0, m.tensor([0]), m.ones(1, dtype=m.float64)),
    "common_topk_k": lambda m: m.topk(m.ones(3), 5),
    "common_multinomial_neg": lambda m: m.multinomial(m.tensor([-1.0, 2.0]), 1),
    "common_one_hot_classes": lambda m: m.nn.functional.one_hot(m.tensor([3]), 2),
    "common_pad_neg": lambda m: m.nn.functional.pad(m.ones(2, 2), (-3, 0)),
    "common_interpolate_size": lambda m: m.nn.functional.interpolate(m.ones(1, 1, 4), size=(2, 2)),
    "common_max_pool_big": lambda m: m.nn.functional.max_pool2d(m.ones(1, 1, 2, 2), 3),
    "common_unflatten": lambda m: m.ones(6).unflatten(0, (4, 2)),
    "common_einsum": lambda m: m.einsum("ij,jk->ik", m.ones(2, 3), m.ones(4, 5)),
    "common_bmm_batch": lambda m: m.bmm(m.ones(2, 3, 4), m.ones(3, 4, 5)),
    "common_cumsum_dim": lambda m: m.cumsum(m.ones(2), dim=3),
    "common_flatten_dims": lambda m: m.ones(2, 3).flatten(1, 0),
    "common_narrow": lambda m: m.ones(4).narrow(0, 3, 2),
    "common_copy_shape": lambda m: m.ones(2).copy_(m.ones(3)),
    "common_factory_int_grad": lambda m: m.tensor([1, 2], requires_grad=True),
    "common_ones_int_grad": lambda m: m.ones(2, dtype=m.int32, requires_grad=True),
    "common_parameter_int": lambda m: m.nn.Parameter(m.ones(2, dtype=m.int64)),
    "common_masked_scatter_mask": lambda m: m.ones(2).masked_scatter(m.ones(2, dtype=m.int64),
                                                                     m.ones(2)),
    "common_cross_entropy_int_probabilities": lambda m: m.nn.functional.cross_entropy(
        m.ones(2, 3), m.ones(2, 3, dtype=m.int64)),
    "common_nll_loss_2d_float_target": lambda m: m.nn.functional.nll_loss(m.ones(2, 3, 4),
                                                                          m.ones(2, 4)),
    "common_requires_grad_nonleaf": lambda m: (m.ones(2, requires_grad=True) * 2).requires_grad_(False),
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
