"""NOT_IN_TABLE entries for the top-level ops added for torch's namespace (losses and bag ops
nn.functional calls, dropout's in-place forms, rrelu, SyncBatchNorm's primitives, the legacy
norms, conv_tbc, the sparse products, the assertion ops, from_file ...): their values, gradients,
out= forms and errors are checked against PyTorch by tests/test_toplevel_names.py (random ones
by their distributions, CUDA-only ones on the simulated device)."""
from opinfo import NOT_IN_TABLE

NOT_IN_TABLE.update({name: "checked against PyTorch by tests/test_toplevel_names.py"
                     for name in """
    _assert_async.default _assert_async.msg _assert_scalar.default _assert_tensor_metadata.default
    sym_constrain_range.default sym_constrain_range_for_size.default from_file.default
    cosine_embedding_loss.default hinge_embedding_loss.default margin_ranking_loss.default
    poisson_nll_loss.default triplet_margin_loss.default ctc_loss.IntList ctc_loss.Tensor
    embedding_bag.default embedding_bag.padding_idx dropout_.default feature_dropout_.default
    alpha_dropout_.default feature_alpha_dropout_.default rrelu.default rrelu_.default
    batch_norm_stats.default batch_norm_elemt.default batch_norm_gather_stats.default
    batch_norm_gather_stats_with_counts.default batch_norm_backward_reduce.default
    batch_norm_backward_elemt.default batch_norm_update_stats.default frobenius_norm.dim
    frobenius_norm.out nuclear_norm.default nuclear_norm.dim nuclear_norm.out nuclear_norm.dim_out
    norm_except_dim.default conv_tbc.default conv_tbc.out is_neg.default slice_inverse.default
    values_copy.default indices_copy.default crow_indices_copy.default col_indices_copy.default
    hspmm.default smm.default sspaddmm.default native_norm.default
    native_norm.ScalarOpt_dim_dtype""".split()})
