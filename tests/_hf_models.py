"""HuggingFace transformers models run the same way in PyTorch and in ember (through
``ember.as_torch``): tests/test_as_torch.py runs them in PyTorch in its own process, and
``python -m ember.as_torch tests/_hf_models.py DIR NAMES`` runs them in ember with PyTorch's
weights, writing what each computed to DIR/NAME_ember.npz."""
import os
import sys

import numpy as np

# name -> (config class, model class, config, inputs kind). Tiny configs: two layers, 64 wide.
_DEC = dict(num_hidden_layers=2, hidden_size=64, intermediate_size=128, num_attention_heads=4,
            vocab_size=128, max_position_embeddings=64)
MODELS = {
    # learned positions, Conv1D projections, causal mask with padding, greedy generation
    "gpt2": ("GPT2Config", "GPT2LMHeadModel",
             dict(n_layer=2, n_embd=64, n_head=4, vocab_size=128, n_positions=64), "lm"),
    # rotary embeddings, grouped-query attention, RMSNorm, SwiGLU
    "llama": ("LlamaConfig", "LlamaForCausalLM", dict(_DEC, num_key_value_heads=2), "lm"),
    # mixture of experts: top-2 routing, per-expert index_add
    "mixtral": ("MixtralConfig", "MixtralForCausalLM",
                dict(_DEC, num_key_value_heads=2, num_local_experts=4, num_experts_per_tok=2),
                "lm"),
    # bidirectional attention with a padding mask, GELU, LayerNorm, masked-LM head
    "bert": ("BertConfig", "BertForMaskedLM", _DEC, "mlm"),
    # encoder-decoder with a learned relative position bias (a float mask that needs its grad)
    "t5": ("T5Config", "T5ForConditionalGeneration",
           dict(num_layers=2, d_model=64, d_ff=128, num_heads=4, d_kv=16, vocab_size=128,
                decoder_start_token_id=0, pad_token_id=0), "s2s"),
    # audio encoder (Conv1d over mel features) and decoder
    "whisper": ("WhisperConfig", "WhisperForConditionalGeneration",
                dict(encoder_layers=2, decoder_layers=2, d_model=64, encoder_ffn_dim=128,
                     decoder_ffn_dim=128, encoder_attention_heads=4, decoder_attention_heads=4,
                     vocab_size=128, num_mel_bins=16, max_source_positions=32,
                     max_target_positions=32, decoder_start_token_id=1, pad_token_id=0),
                "audio"),
}


# the models ember also runs through torch.compile(fullgraph=True): one graph each way
COMPILED = ("gpt2", "llama", "mixtral", "bert", "t5", "whisper")


def run(torch, transformers, name, weights=None, compiled=False):
    """Build ``name`` (with ``weights``, a dict of arrays, if given), run a forward and
    backward pass on fixed inputs and, for decoders, greedy generation; return the state dict
    (as arrays) and what was computed. ``compiled``: the forward and backward pass through
    ``torch.compile(model, fullgraph=True)``, no generation."""
    cfg_cls, model_cls, kw, kind = MODELS[name]
    cfg = getattr(transformers, cfg_cls)(**kw)
    torch.manual_seed(0)
    model = getattr(transformers, model_cls)(cfg)
    if weights is not None:
        model.load_state_dict({k: torch.from_numpy(v.copy()) for k, v in weights.items()})
    model.eval()  # no dropout: the two libraries' random streams differ
    forward = torch.compile(model, fullgraph=True) if compiled else model
    rs = np.random.RandomState(0)
    if kind in ("lm", "mlm"):
        ids = torch.from_numpy(rs.randint(0, 128, (2, 12)))
        mask = torch.ones(2, 12, dtype=torch.long)
        mask[1, :3] = 0
        out = forward(input_ids=ids, attention_mask=mask, labels=ids)
    elif kind == "s2s":
        out = forward(input_ids=torch.from_numpy(rs.randint(2, 128, (2, 12))),
                      labels=torch.from_numpy(rs.randint(2, 128, (2, 7))))
    else:
        out = forward(input_features=torch.from_numpy(rs.randn(2, 16, 64).astype(np.float32)),
                      labels=torch.from_numpy(rs.randint(2, 128, (2, 7))))
    out.loss.backward()
    result = {"loss": out.loss.detach().numpy(), "logits": out.logits.detach().numpy()}
    result.update({"grad." + k: p.grad.numpy() for k, p in model.named_parameters()
                   if p.grad is not None})
    if kind == "lm" and not compiled:
        with torch.no_grad():
            result["generated"] = model.generate(ids[:1, :5], max_new_tokens=6,
                                                 do_sample=False, pad_token_id=0).numpy()
    state = {k: v.detach().numpy() for k, v in model.state_dict().items()}
    return state, result


if __name__ == "__main__":  # the ember side, under python -m ember.as_torch
    import torch
    import transformers
    directory, names = sys.argv[1], sys.argv[2].split(",")
    assert torch is sys.modules["ember"], torch
    for name in names:
        weights = dict(np.load(os.path.join(directory, f"{name}_weights.npz")))
        _, result = run(torch, transformers, name, weights)
        np.savez(os.path.join(directory, f"{name}_ember.npz"), **result)
        if name in COMPILED:
            _, result = run(torch, transformers, name, weights, compiled=True)
            np.savez(os.path.join(directory, f"{name}_ember_compiled.npz"), **result)
