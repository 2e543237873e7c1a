"""Programs built on lucidrains' libraries (x-transformers, vector-quantize-pytorch,
rotary-embedding-torch, ema-pytorch) run the same way in PyTorch and in ember (through
``ember.as_torch``): tests/test_lucidrains_libs.py runs each case in PyTorch in its own process,
and ``python -m ember.as_torch tests/_lucidrains_programs.py DIR NAMES`` runs them in ember with
PyTorch's weights (DIR/NAME_weights.npz), writing what each computed to DIR/NAME_ember.npz.

Each case builds its modules with seed 0, trains or runs them on fixed NumPy inputs and returns
outputs, gradients and the parameters and buffers after its optimizer or EMA steps. Where a
library draws random numbers (k-means initialisation, sampling, dropped quantizers), both sides
draw them from ``torch.manual_seed``: ember's generator gives PyTorch's numbers."""
import os
import random
import sys

import numpy as np

NUM_TOKENS, SEQ = 40, 12


def _x(rs, *shape):
    return rs.randn(*shape).astype(np.float32)


def _np(t):
    t = t.detach()
    return t.float().numpy() if t.dtype.is_floating_point and t.element_size() == 2 else \
        t.numpy()


def _decoder(torch, **kwargs):
    from x_transformers import Decoder, TransformerWrapper
    layers = dict(dim=32, depth=2, heads=4)
    layers.update(kwargs)
    return TransformerWrapper(num_tokens=NUM_TOKENS, max_seq_len=24,
                              attn_layers=Decoder(**layers))


def _decoder_training(torch):
    # rotary embeddings, SDPA (attn_flash), GLU feed-forward, RMSNorm, qk-norm
    return _decoder(torch, rotary_pos_emb=True, attn_flash=True, ff_glu=True, use_rmsnorm=True,
                    attn_qk_norm=True)


def _generation(torch):
    from x_transformers import AutoregressiveWrapper
    return torch.nn.ModuleDict({
        # greedy decoding with a key/value cache, ALiBi
        "alibi": AutoregressiveWrapper(_decoder(torch, alibi_pos_bias=True)),
        # T5 relative position bias, one kv head, residual attention
        "relpos": AutoregressiveWrapper(_decoder(torch, rel_pos_bias=True, attn_kv_heads=1,
                                                 residual_attn=True, depth=1)),
    })


def _encoder_decoder(torch):
    from x_transformers import XTransformer
    return XTransformer(dim=32, enc_num_tokens=NUM_TOKENS, enc_depth=1, enc_heads=4,
                        enc_max_seq_len=16, dec_num_tokens=NUM_TOKENS, dec_depth=1, dec_heads=4,
                        dec_max_seq_len=16, tie_token_emb=True, enc_rel_pos_bias=True,
                        dec_rotary_pos_emb=True)


def _continuous(torch):
    from x_transformers import ContinuousTransformerWrapper, Encoder, ViTransformerWrapper
    return torch.nn.ModuleDict({
        # an encoder over vectors with memory tokens, a key padding mask and dynamic position bias
        "continuous": ContinuousTransformerWrapper(
            dim_in=6, dim_out=3, max_seq_len=16, num_memory_tokens=2,
            attn_layers=Encoder(dim=32, depth=2, heads=4, dynamic_pos_bias=True,
                                ff_glu=True, macaron=True)),
        # a ViT: image patches, class head
        "vit": ViTransformerWrapper(image_size=16, patch_size=4, num_classes=5,
                                    attn_layers=Encoder(dim=32, depth=1, heads=4)),
    })


def _decoder_bf16(torch):
    return _decoder(torch, rotary_pos_emb=True, use_rmsnorm=True).to(torch.bfloat16)


def _vq_ema(torch):
    from vector_quantize_pytorch import VectorQuantize
    return torch.nn.ModuleDict({
        # EMA codebook updates, Euclidean distance, rotation trick (the default)
        "ema": VectorQuantize(dim=16, codebook_size=32, decay=0.8, commitment_weight=1.),
        # k-means initialisation, cosine similarity, dead-code replacement, two heads with
        # their own codebooks
        "kmeans": VectorQuantize(dim=16, codebook_size=8, kmeans_init=True, kmeans_iters=3,
                                 use_cosine_sim=True, threshold_ema_dead_code=2, codebook_dim=8,
                                 heads=2, separate_codebook_per_head=True),
    })


def _vq_learned(torch):
    from vector_quantize_pytorch import VectorQuantize
    # a codebook learned by the optimizer: orthogonal regularisation, diversity loss
    return VectorQuantize(dim=16, codebook_size=32, learnable_codebook=True, ema_update=False,
                          orthogonal_reg_weight=0.1, commitment_weight=0.25,
                          codebook_diversity_loss_weight=0.1)


def _quantizers(torch):
    from vector_quantize_pytorch import FSQ, LFQ, ResidualFSQ, ResidualVQ
    return torch.nn.ModuleDict({
        # (not k-means initialised: a residual that a centroid equals has no direction, and
        # the rotation trick's gradient through it is rounding noise)
        "rvq": ResidualVQ(dim=16, num_quantizers=3, codebook_size=16),
        "rvq_dropout": ResidualVQ(dim=16, num_quantizers=4, codebook_size=16,
                                  quantize_dropout=True, quantize_dropout_cutoff_index=1),
        "fsq": FSQ(levels=[8, 5, 5, 3], dim=16),
        "rfsq": ResidualFSQ(levels=[8, 5, 5], num_quantizers=2, dim=16),
        "lfq": LFQ(codebook_size=64, dim=16, entropy_loss_weight=0.1, diversity_gamma=1.),
    })


def _rotary(torch):
    from rotary_embedding_torch import RotaryEmbedding
    return torch.nn.ModuleDict({
        "plain": RotaryEmbedding(dim=16),
        "xpos": RotaryEmbedding(dim=16, use_xpos=True),
        "learned": RotaryEmbedding(dim=16, learned_freq=True, interpolate_factor=2.),
        "pixel": RotaryEmbedding(dim=8, freqs_for="pixel", max_freq=64),
    })


def _ema_net(torch):
    nn = torch.nn
    # (no bias before the batch norm: its gradient would be rounding noise, which Adam scales
    # to whole steps)
    return nn.Sequential(nn.Linear(8, 16), nn.LayerNorm(16), nn.GELU(),
                         nn.Linear(16, 16, bias=False), nn.BatchNorm1d(16), nn.SiLU(),
                         nn.Linear(16, 2))


# name -> the module (or ModuleDict of modules) the case builds
MODELS = {
    # forward with a padding mask, cross entropy, backward, three Adam steps
    "xt_decoder": _decoder_training,
    # AutoregressiveWrapper: loss, then greedy generation with and without the kv cache
    "xt_generate": _generation,
    # XTransformer: encoder with relative position bias, decoder with cross attention
    "xt_encoder_decoder": _encoder_decoder,
    # ContinuousTransformerWrapper and ViTransformerWrapper
    "xt_continuous": _continuous,
    # a bfloat16 decoder: forward and backward in bfloat16
    "xt_bf16": _decoder_bf16,
    # VectorQuantize in training mode: codebook EMA updates over three steps
    "vq_ema": _vq_ema,
    # VectorQuantize with a learnable codebook, three Adam steps
    "vq_learned": _vq_learned,
    # ResidualVQ, FSQ, ResidualFSQ, LFQ
    "quantizers": _quantizers,
    # rotary-embedding-torch on queries and keys
    "rotary": _rotary,
    # ema-pytorch: EMA (and its foreach update) of a trained network, PostHocEMA synthesis
    "ema": _ema_net,
}


def build(torch, name, weights=None):
    """The module of ``name``: its library's initialisation (seed 0), or ``weights``."""
    torch.manual_seed(0)
    model = MODELS[name](torch)
    if weights is not None:
        dtypes = {k: v.dtype for k, v in model.state_dict().items()}
        model.load_state_dict({k: torch.from_numpy(v.copy()).to(dtypes[k])
                               for k, v in weights.items()})
    return model


def _grads(model, prefix="grad."):
    return {prefix + k: _np(p.grad) for k, p in model.named_parameters() if p.grad is not None}


def _params(model, prefix="param."):
    return {prefix + k: _np(v) for k, v in model.state_dict().items()}


def _adam(torch, model, loss_fn, steps=3, lr=1e-2):
    """``steps`` Adam steps of ``loss_fn()``: the first step's gradients, the losses and the
    parameters (and buffers) after the last."""
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    result, losses = {}, []
    for step in range(steps):
        optimizer.zero_grad()
        loss = loss_fn()
        loss.backward()
        if step == 0:
            result.update(_grads(model))
        optimizer.step()
        losses.append(loss.item())
    result["losses"] = np.array(losses)
    result.update(_params(model))
    return result


def _tokens(torch, rs, *shape):
    return torch.from_numpy(rs.randint(0, NUM_TOKENS, shape).astype(np.int64))


def run(torch, name, weights=None):
    """Run case ``name`` (with ``weights``, a dict of arrays, if given); return the state dict
    (as arrays) and what was computed."""
    F = torch.nn.functional
    model = build(torch, name, weights)
    state = {k: _np(v).copy() for k, v in model.state_dict().items()}
    rs = np.random.RandomState(0)
    torch.manual_seed(1)
    random.seed(0)
    result = {}
    if name == "xt_decoder":
        x = _tokens(torch, rs, 2, SEQ)
        mask = torch.from_numpy(np.arange(SEQ)[None] < np.array([[SEQ], [SEQ - 3]]))

        def loss_fn():
            logits = model(x, mask=mask)
            return F.cross_entropy(logits.transpose(1, 2), x)
        with torch.no_grad():
            result["logits"] = _np(model(x, mask=mask))
        result.update(_adam(torch, model, loss_fn))
    elif name == "xt_generate":
        for key, wrapper in model.items():
            x = _tokens(torch, rs, 2, 17)
            loss = wrapper(x)
            loss.backward()
            result[f"{key}.loss"] = _np(loss)
            result.update(_grads(wrapper, f"{key}.grad."))
            wrapper.eval()
            prompt = x[:, :4]
            result[f"{key}.cached"] = _np(wrapper.generate(prompt, 8, temperature=0.,
                                                           cache_kv=True))
            result[f"{key}.uncached"] = _np(wrapper.generate(prompt, 8, temperature=0.,
                                                             cache_kv=False))
            # top-k sampling from the seeded generator
            torch.manual_seed(2)
            result[f"{key}.sampled"] = _np(wrapper.generate(prompt, 6, temperature=0.7))
    elif name == "xt_encoder_decoder":
        src, tgt = _tokens(torch, rs, 2, 10), _tokens(torch, rs, 2, 12)
        src_mask = torch.from_numpy(np.arange(10)[None] < np.array([[10], [7]]))
        result.update(_adam(torch, model, lambda: model(src, tgt, mask=src_mask)))
        model.eval()
        result["generated"] = _np(model.generate(src, tgt[:, :1], 5, mask=src_mask,
                                                 temperature=0.))
    elif name == "xt_continuous":
        x = torch.from_numpy(_x(rs, 2, 10, 6)).requires_grad_()
        mask = torch.from_numpy(np.arange(10)[None] < np.array([[6], [10]]))
        out = model["continuous"](x, mask=mask)
        images = torch.from_numpy(_x(rs, 2, 3, 16, 16)).requires_grad_()
        labels = torch.tensor([1, 3])
        logits = model["vit"](images)
        ((out ** 2).sum() + F.cross_entropy(logits, labels)).backward()
        result.update(out=_np(out), logits=_np(logits), grad_x=_np(x.grad),
                      grad_images=_np(images.grad))
        result.update(_grads(model))
    elif name == "xt_bf16":
        x = _tokens(torch, rs, 2, SEQ)
        logits = model(x)
        loss = F.cross_entropy(logits.float().transpose(1, 2), x)
        loss.backward()
        result.update(logits=_np(logits), loss=_np(loss), dtype=np.array(str(logits.dtype)))
        result.update(_grads(model))
    elif name == "vq_ema":
        for key, vq in model.items():
            x = torch.from_numpy(_x(rs, 2, 20, 16)).requires_grad_()
            for step in range(3):
                quantized, indices, loss = vq(x)
                (quantized.sum() + loss).backward()
                result.update({f"{key}.quantized{step}": _np(quantized),
                               f"{key}.indices{step}": _np(indices),
                               f"{key}.loss{step}": _np(loss)})
            result[f"{key}.grad_x"] = _np(x.grad)
        result.update(_params(model))
    elif name == "vq_learned":
        x = torch.from_numpy(_x(rs, 2, 20, 16))

        def loss_fn():
            quantized, _, loss = model(x)
            return (quantized ** 2).mean() + loss.sum()
        result.update(_adam(torch, model, loss_fn))
        result["indices"] = _np(model(x)[1])
    elif name == "quantizers":
        x = torch.from_numpy(_x(rs, 4, 16, 16)).requires_grad_()
        rvq = model["rvq"]
        quantized, indices, losses = rvq(x)
        result.update(rvq=_np(quantized), rvq_indices=_np(indices), rvq_losses=_np(losses),
                      rvq_codes=_np(rvq.get_codes_from_indices(indices)),
                      rvq_decoded=_np(rvq.get_output_from_indices(indices)))
        total = (quantized * torch.from_numpy(_x(rs, 4, 16, 16))).sum() + losses.sum()
        quantized, indices, losses = model["rvq_dropout"](x)
        result.update(rvq_dropout=_np(quantized), rvq_dropout_indices=_np(indices))
        total = total + quantized.sum() + losses.sum()
        quantized, indices = model["fsq"](x)
        result.update(fsq=_np(quantized), fsq_indices=_np(indices),
                      fsq_codes=_np(model["fsq"].indices_to_codes(indices)))
        total = total + (quantized ** 2).sum()
        quantized, indices = model["rfsq"](x)
        result.update(rfsq=_np(quantized), rfsq_indices=_np(indices))
        total = total + quantized.sum()
        quantized, indices, aux = model["lfq"](x)
        result.update(lfq=_np(quantized), lfq_indices=_np(indices), lfq_aux=_np(aux))
        total = total + quantized.sum() + aux
        total.backward()
        result["grad_x"] = _np(x.grad)
        result.update(_grads(model))
    elif name == "rotary":
        from rotary_embedding_torch import apply_rotary_emb
        q = torch.from_numpy(_x(rs, 2, 4, 10, 32)).requires_grad_()
        k = torch.from_numpy(_x(rs, 2, 4, 10, 32)).requires_grad_()
        outs = {"q": model["plain"].rotate_queries_or_keys(q),
                "k": model["plain"].rotate_queries_or_keys(k)}
        outs["q_xpos"], outs["k_xpos"] = model["xpos"].rotate_queries_and_keys(q, k)
        outs["q_cached"], outs["k_cached"] = \
            model["plain"].rotate_queries_with_cached_keys(q[:, :, -3:], k)
        outs["q_learned"] = model["learned"].rotate_queries_or_keys(q, offset=3)
        freqs = model["pixel"].get_axial_freqs(4, 5)
        outs["image"] = apply_rotary_emb(freqs, torch.from_numpy(_x(rs, 1, 4, 5, 32)))
        sum((t * torch.from_numpy(_x(rs, *t.shape))).sum() for t in outs.values()).backward()
        result.update({n: _np(t) for n, t in outs.items()})
        result.update(freqs=_np(freqs), grad_q=_np(q.grad), grad_k=_np(k.grad))
        result.update(_grads(model))
    elif name == "ema":
        import tempfile

        from ema_pytorch import EMA, PostHocEMA
        x, y = torch.from_numpy(_x(rs, 32, 8)), torch.from_numpy(_x(rs, 32, 2))
        ema = EMA(model, beta=0.9, update_after_step=2, update_every=1, power=3 / 4)
        ema_foreach = EMA(model, beta=0.8, update_after_step=0, update_every=2, use_foreach=True,
                          param_or_buffer_names_no_ema={"6.bias"})
        with tempfile.TemporaryDirectory() as folder:
            post_hoc = PostHocEMA(model, sigma_rels=(0.05, 0.28), update_every=1,
                                  checkpoint_every_num_steps=3, checkpoint_folder=folder)
            optimizer = torch.optim.Adam(model.parameters(), lr=0.02)
            decays = []
            for _ in range(6):
                optimizer.zero_grad()
                F.mse_loss(model(x), y).backward()
                optimizer.step()
                for e in (ema, ema_foreach, post_hoc):
                    e.update()
                decays.append(ema.get_current_decay())
            synthesized = post_hoc.synthesize_ema_model(sigma_rel=0.15)
        result["decays"] = np.array(decays)
        result.update(_params(ema.ema_model, "ema."))
        result.update(_params(ema_foreach.ema_model, "ema_foreach."))
        result.update(_params(synthesized.ema_model, "post_hoc."))
        ema.eval()
        result["ema_out"] = _np(ema(x))
        result.update(_params(model))
    return state, result


if __name__ == "__main__":  # the ember side, under python -m ember.as_torch
    import torch
    directory, names = sys.argv[1], sys.argv[2].split(",")
    assert torch is sys.modules["ember"], torch
    for name in names:
        weights = dict(np.load(os.path.join(directory, f"{name}_weights.npz")))
        _, result = run(torch, name, weights)
        np.savez(os.path.join(directory, f"{name}_ember.npz"), **result)
