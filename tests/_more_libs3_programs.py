"""Short programs of sbi, performer-pytorch, linear-attention-transformer,
rtdl_revisiting_models and torchmetrics' less-used domains, run the same way in PyTorch and in
ember (through ``ember.as_torch``): tests/test_more_libs3.py runs
``python tests/_more_libs3_programs.py torch DIR NAMES`` and
``python -m ember.as_torch tests/_more_libs3_programs.py ember DIR NAMES`` side by side
(``helpers.pytorch_beside_ember``), and each writes what every case computed to
DIR/NAME_<library>.npz.

Every case seeds torch's generator (and Python's and NumPy's) itself: ember's CPU generator
draws PyTorch's numbers, so initial weights, shuffled batches, random features and posterior
samples are the same on both sides. Inputs are fixed NumPy arrays; nothing is downloaded."""
import contextlib
import os
import sys
import tempfile
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _torchvision_schemas  # noqa: E402
from _program_helpers import params as _params, seed as _seed, x as _x  # noqa: E402

# (torchmetrics imports torchvision when it is installed, whose wheel needs its schemas defined
# in PyTorch)
_torchvision_schemas.install()


def _grads(model, prefix):
    return {prefix + k: p.grad.numpy().copy() for k, p in model.named_parameters()
            if p.grad is not None}


# -- sbi -------------------------------------------------------------------------------------------

def _sbi(torch):
    """Neural posterior estimation on a linear-Gaussian simulator: a conditional MAF and a
    neural spline flow (nflows) and a mixture density network trained a few epochs through
    sbi's own loader, validation split and early-stopping bookkeeping, then the posterior's
    log-probabilities and samples drawn by rejection from the prior's box; and neural
    likelihood estimation with its posterior's potential and slice-sampled MCMC chains."""
    # (sbi's trainers log to TensorBoard under ./sbi-logs: keep them out of the checkout)
    with tempfile.TemporaryDirectory() as logs, contextlib.chdir(logs):
        return _sbi_fit(torch)


def _sbi_fit(torch):
    from sbi.inference import NLE, NPE
    from sbi.utils import BoxUniform
    rs = np.random.RandomState(0)
    theta = torch.from_numpy(rs.uniform(-2, 2, (300, 2)).astype(np.float32))
    x = theta * torch.tensor([1.0, -0.5]) + 0.1 + 0.2 * torch.from_numpy(_x(rs, 300, 2))
    x_o = torch.tensor([[0.5, -0.3]])
    probe = torch.from_numpy(rs.uniform(-1.5, 1.5, (16, 2)).astype(np.float32))
    result = {}
    for name in ("maf", "nsf", "mdn"):
        _seed(torch)
        prior = BoxUniform(low=-2 * torch.ones(2), high=2 * torch.ones(2))
        inference = NPE(prior=prior, density_estimator=name, show_progress_bars=False)
        estimator = inference.append_simulations(theta, x).train(
            max_num_epochs=4, training_batch_size=50, stop_after_epochs=100)
        summary = inference.summary
        result[f"{name}.train_loss"] = np.array(summary["training_loss"])
        result[f"{name}.valid_loss"] = np.array(summary["validation_loss"])
        posterior = inference.build_posterior(estimator)
        posterior.set_default_x(x_o)
        result[f"{name}.log_prob"] = posterior.log_prob(probe).detach().numpy()
        result[f"{name}.sample"] = posterior.sample((64,), show_progress_bars=False).numpy()
        result.update(_params(estimator, f"{name}.param."))

    # likelihood estimation, the posterior sampled by vectorised slice sampling: the chains'
    # steps draw from NumPy's generator, their starts from torch's prior
    _seed(torch)
    prior = BoxUniform(low=-2 * torch.ones(2), high=2 * torch.ones(2))
    inference = NLE(prior=prior, density_estimator="mdn", show_progress_bars=False)
    estimator = inference.append_simulations(theta, x).train(max_num_epochs=3,
                                                             training_batch_size=50)
    result["nle.train_loss"] = np.array(inference.summary["training_loss"])
    posterior = inference.build_posterior(
        estimator, sample_with="mcmc", mcmc_method="slice_np_vectorized",
        mcmc_parameters=dict(num_chains=2, thin=1, warmup_steps=5, init_strategy="proposal"))
    posterior.set_default_x(x_o)
    result["nle.potential"] = posterior.potential(probe).detach().numpy()
    result["nle.sample"] = posterior.sample((10,), show_progress_bars=False).numpy()
    return result


# -- performer-pytorch -----------------------------------------------------------------------------

def _performer(torch):
    """A causal PerformerLM (FAVOR+ attention on Gaussian orthogonal random features made with
    QR, rotary embeddings) and a non-causal one with generalized ReLU-kernel attention and a
    local-attention head, trained by Adam a few steps through the autoregressive wrapper;
    losses, logits, gradients, a redraw of the projections and greedy generation."""
    from performer_pytorch import AutoregressiveWrapper, PerformerLM
    rs = np.random.RandomState(0)
    tokens = torch.from_numpy(rs.randint(0, 32, (4, 17)))
    result = {}
    for name, kwargs in [("causal", dict(causal=True, nb_features=16)),
                         ("local", dict(generalized_attention=True, local_attn_heads=1,
                                        local_window_size=8, ff_glu=True, nb_features=12))]:
        _seed(torch)
        model = PerformerLM(num_tokens=32, max_seq_len=32, dim=32, depth=2, heads=2,
                            dim_head=16, feature_redraw_interval=2, **kwargs)
        wrapper = AutoregressiveWrapper(model)
        optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
        losses = []
        for step in range(3):
            optimizer.zero_grad()
            loss = wrapper(tokens)
            loss.backward()
            if step == 0:
                result.update(_grads(model, f"{name}.grad."))
            optimizer.step()
            losses.append(loss.item())
        result[f"{name}.losses"] = np.array(losses)
        model.eval()
        with torch.no_grad():
            result[f"{name}.logits"] = model(tokens[:, :16]).numpy()
            result[f"{name}.generated"] = wrapper.generate(
                tokens[:2, :4], 6, filter_thres=0.9, temperature=1.0).numpy()
        result.update(_params(model, f"{name}.param."))
    return result


# -- rtdl_revisiting_models ------------------------------------------------------------------------

def _rtdl(torch):
    """The tabular models of "Revisiting Deep Learning Models for Tabular Data": an
    FT-Transformer over numeric and categorical features (with its own parameter groups, no
    weight decay on embeddings and norms), a ResNet and an MLP, each trained a few steps on a
    synthetic regression; losses, predictions and parameters."""
    import rtdl_revisiting_models as rtdl
    rs = np.random.RandomState(0)
    x_num = torch.from_numpy(_x(rs, 128, 5))
    x_cat = torch.from_numpy(np.stack([rs.randint(0, 3, 128), rs.randint(0, 5, 128)], 1))
    y = (x_num[:, 0] - x_num[:, 1] * x_num[:, 2] + (x_cat[:, 1] == 2).float()).unsqueeze(1)
    result = {}
    for name in ("ft", "resnet", "mlp"):
        _seed(torch)
        if name == "ft":
            model = rtdl.FTTransformer(n_cont_features=5, cat_cardinalities=[3, 5], d_out=1,
                                       **rtdl.FTTransformer.get_default_kwargs(n_blocks=2))
            groups = model.make_parameter_groups()
            forward = lambda xn, xc: model(xn, xc)  # noqa: E731
        else:
            cls = rtdl.ResNet if name == "resnet" else rtdl.MLP
            kwargs = (dict(n_blocks=2, d_block=32, d_hidden=None, d_hidden_multiplier=2.0,
                           dropout1=0.1, dropout2=0.0) if name == "resnet"
                      else dict(n_blocks=2, d_block=32, dropout=0.1))
            model = cls(d_in=5 + 3 + 5, d_out=1, **kwargs)
            groups = model.parameters()

            def forward(xn, xc):
                onehot = [torch.nn.functional.one_hot(xc[:, i], n).float()
                          for i, n in enumerate((3, 5))]
                return model(torch.cat([xn, *onehot], 1))
        # (SGD, not the paper's AdamW: the attention's key biases and the biases feeding only
        # batch norms have gradients of rounding noise (1e-10), which Adam's normalisation turns
        # into steps the size of the learning rate, different on any two libraries)
        optimizer = torch.optim.SGD(groups, lr=0.01, momentum=0.9, weight_decay=1e-5)
        losses = []
        for step in range(4):
            batch = torch.randperm(128)[:32]
            optimizer.zero_grad()
            loss = torch.nn.functional.mse_loss(forward(x_num[batch], x_cat[batch]), y[batch])
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
        result[f"{name}.losses"] = np.array(losses)
        model.eval()
        with torch.no_grad():
            result[f"{name}.pred"] = forward(x_num, x_cat).numpy()
        result.update(_params(model, f"{name}.param."))
    return result


# -- linear-attention-transformer ------------------------------------------------------------------

def _linear_attention(torch):
    """linear-attention-transformer's language models: a causal, reversible one (a custom
    autograd function that recomputes its blocks with the saved random states) with local
    attention heads, a product-key memory layer and axial positions, and a non-causal one with
    Linformer projections and rotary embeddings, trained by Adam a few steps through the
    autoregressive wrapper; and the convolutional linear attention over an image."""
    from linear_attention_transformer import (AutoregressiveWrapper, ImageLinearAttention,
                                              LinearAttentionTransformerLM, LinformerSettings)
    rs = np.random.RandomState(0)
    tokens = torch.from_numpy(rs.randint(0, 40, (4, 33)))
    result = {}
    for name, kwargs in [("causal", dict(causal=True, reversible=True, n_local_attn_heads=1,
                                         local_attn_window_size=8, pkm_layers=(2,),
                                         pkm_num_keys=8, ff_dropout=0.1, attn_dropout=0.1)),
                         ("linformer", dict(linformer_settings=LinformerSettings(k=8),
                                            use_axial_pos_emb=False, use_rotary_emb=True,
                                            ff_glu=True))]:
        _seed(torch)
        model = LinearAttentionTransformerLM(num_tokens=40, dim=32, depth=2, max_seq_len=64,
                                             heads=2, dim_head=16, **kwargs)
        wrapper = AutoregressiveWrapper(model)
        optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
        losses = []
        for step in range(3):
            optimizer.zero_grad()
            loss = wrapper(tokens, return_loss=True)
            loss.backward()
            if step == 0:
                result.update(_grads(model, f"{name}.grad."))
            optimizer.step()
            losses.append(loss.item())
        result[f"{name}.losses"] = np.array(losses)
        model.eval()
        with torch.no_grad():
            result[f"{name}.logits"] = model(tokens[:, :32]).numpy()
            if name == "causal":
                result[f"{name}.generated"] = wrapper.generate(tokens[:2, :4], 6).numpy()
        result.update(_params(model, f"{name}.param."))
    _seed(torch)
    attention = ImageLinearAttention(chan=8, heads=2, key_dim=8, value_dim=8, kernel_size=3,
                                     padding=1)
    image = torch.from_numpy(_x(rs, 2, 8, 6, 6)).requires_grad_()
    out = attention(image)
    out.square().mean().backward()
    result["image.out"] = out.detach().numpy()
    result["image.grad"] = image.grad.numpy()
    result.update(_grads(attention, "image.grad."))
    return result


# -- torchmetrics ----------------------------------------------------------------------------------

def _torchmetrics(torch):
    """torchmetrics' retrieval (MAP, MRR, nDCG, precision/recall@k, R-precision, hit rate over
    grouped queries, updated in batches), audio (SI-SNR, SI-SDR, SNR, SDR and permutation-
    invariant training) and pairwise/regression metrics beyond the common ones, each the
    metric objects' accumulated states and the functional forms."""
    import torchmetrics.audio as audio
    import torchmetrics.functional as F
    import torchmetrics.retrieval as retrieval
    rs = np.random.RandomState(0)
    result = {}
    preds = torch.from_numpy(rs.rand(60).astype(np.float32))
    target = torch.from_numpy(rs.rand(60) > 0.6)
    indexes = torch.from_numpy(np.repeat(np.arange(6), 10))
    relevance = torch.from_numpy(rs.randint(0, 4, 60))
    metrics = {"map": retrieval.RetrievalMAP(), "mrr": retrieval.RetrievalMRR(),
               "ndcg": retrieval.RetrievalNormalizedDCG(top_k=5),
               "p_at_3": retrieval.RetrievalPrecision(top_k=3),
               "r_at_3": retrieval.RetrievalRecall(top_k=3),
               "rprec": retrieval.RetrievalRPrecision(),
               "hit": retrieval.RetrievalHitRate(top_k=2),
               "fallout": retrieval.RetrievalFallOut(top_k=4),
               "auroc": retrieval.RetrievalAUROC()}
    for name, metric in metrics.items():
        rel = relevance if name == "ndcg" else target
        for part in (slice(0, 25), slice(25, 60)):
            metric.update(preds[part], rel[part], indexes=indexes[part])
        result[f"retrieval.{name}"] = metric.compute().numpy()
    result["retrieval.f_map"] = F.retrieval_average_precision(preds[:10], target[:10]).numpy()
    result["retrieval.f_ndcg"] = F.retrieval_normalized_dcg(preds[:10], relevance[:10]).numpy()

    clean = torch.from_numpy(_x(rs, 3, 2, 400))
    noisy = clean + 0.3 * torch.from_numpy(_x(rs, 3, 2, 400))
    swapped = noisy.flip(1)
    si_snr = audio.ScaleInvariantSignalNoiseRatio()
    si_sdr = audio.ScaleInvariantSignalDistortionRatio(zero_mean=True)
    for b in range(3):
        si_snr.update(noisy[b], clean[b])
        si_sdr.update(noisy[b], clean[b])
    result["audio.si_snr"] = si_snr.compute().numpy()
    result["audio.si_sdr"] = si_sdr.compute().numpy()
    result["audio.snr"] = F.signal_noise_ratio(noisy, clean).numpy()
    result["audio.sdr"] = F.audio.signal_distortion_ratio(noisy, clean).numpy()
    pit = audio.PermutationInvariantTraining(
        F.scale_invariant_signal_noise_ratio, mode="speaker-wise", eval_func="max")
    pit.update(swapped, clean)
    result["audio.pit"] = pit.compute().numpy()
    best, perm = F.permutation_invariant_training(
        swapped, clean, F.scale_invariant_signal_distortion_ratio)
    result["audio.pit_best"], result["audio.pit_perm"] = best.numpy(), perm.numpy()
    result["audio.pit_permuted"] = F.pit_permutate(swapped, perm).numpy()

    a, b = torch.from_numpy(_x(rs, 8, 5)), torch.from_numpy(_x(rs, 6, 5))
    result["pairwise.cosine"] = F.pairwise_cosine_similarity(a, b).numpy()
    result["pairwise.manhattan"] = F.pairwise_manhattan_distance(a, b).numpy()
    result["pairwise.minkowski"] = F.pairwise_minkowski_distance(a, b, exponent=3).numpy()
    yp, yt = torch.from_numpy(_x(rs, 50)), torch.from_numpy(_x(rs, 50))
    result["regression.kendall"] = F.kendall_rank_corrcoef(yp, yt).numpy()
    result["regression.spearman"] = F.spearman_corrcoef(yp, yt).numpy()
    result["regression.concordance"] = F.concordance_corrcoef(yp, yt).numpy()
    result["regression.tweedie"] = F.tweedie_deviance_score(yp.exp(), yt.exp(), power=1.5).numpy()
    return result


CASES = {"sbi": _sbi, "performer": _performer, "rtdl": _rtdl, "torchmetrics": _torchmetrics,
         "linear_attention": _linear_attention}


def run(torch, name):
    """Case ``name``'s results, as arrays keyed by name."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return {k: np.asarray(v) for k, v in CASES[name](torch).items()}


if __name__ == "__main__":
    library, directory, names = sys.argv[1], sys.argv[2], sys.argv[3].split(",")
    import torch
    # under ember.as_torch, torch *is* the ember module
    assert (sys.modules.get("ember") is torch) == (library == "ember"), library
    for name in names:
        np.savez(os.path.join(directory, f"{name}_{library}.npz"), **run(torch, name))
