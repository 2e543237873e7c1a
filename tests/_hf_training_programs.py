"""The HuggingFace training stack run the same way in PyTorch and in ember (through
``ember.as_torch``): tests/test_hf_training.py runs each case in PyTorch in its own process, and
``python -m ember.as_torch tests/_hf_training_programs.py DIR NAMES`` runs them in ember,
writing what each computed to DIR/NAME_ember.npz.

Every model is built from a small config with random initialisation under a fixed seed (no
downloads), and its data come from NumPy's seeded generator or from torch's (shuffling,
masking), whose CPU streams ember reproduces; so both libraries train the same model on the
same batches and every loss, gradient norm, weight, prediction and embedding can be compared.
Files the libraries write (checkpoints, adapters, accelerate states) go to temporary folders and
are read back within the case."""
import os
import sys
import tempfile

import numpy as np

# name -> what the case covers
CASES = {
    # transformers.Trainer on a tiny GPT-2: gradient accumulation, warmup + cosine schedule,
    # max_grad_norm, an eval loop every two steps, Trainer.predict
    "trainer_gpt2": "transformers.Trainer (causal LM)",
    # Trainer on a tiny BERT classifier with a tokenizer from a local vocab: padding collator,
    # label smoothing, weight decay, gradient checkpointing, compute_metrics, checkpoints saved
    # each epoch and training resumed from the first; a masked-LM run whose masking collator
    # draws from torch's generator, with Adafactor
    "trainer_bert": "transformers.Trainer (classification, resume, MLM collator)",
    # LoRA on GPT-2's attention and MLP projections: training, save_pretrained /
    # PeftModel.from_pretrained, merge_and_unload; IA3 and prefix tuning trained the same way
    "peft": "peft LoRA, IA3, prefix tuning",
    # Accelerator(cpu=True): prepare (model, optimizer, shuffled dataloader, scheduler),
    # accumulate, backward, clip_grad_norm_, gather / gather_for_metrics, save_state/load_state
    "accelerate": "accelerate.Accelerator",
    # SentenceTransformer from a tiny local BERT (models.Transformer + Pooling) and from
    # WordEmbeddings + Pooling + Dense + Normalize: encode, old_fit with
    # MultipleNegativesRankingLoss + CosineSimilarityLoss, CachedMultipleNegativesRankingLoss
    # (GradCache: a backward pass per mini-batch through one shared graph)
    "sentence_transformers": "sentence_transformers",
    # rearrange / reduce / repeat / einsum / pack, and the einops.layers.torch layers
    # (Rearrange, Reduce, EinMix) inside a small attention model trained with SGD + momentum
    "einops": "einops",
}

VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + (
    "the a cat dog sat on mat ran fast slow red blue big small house tree car road sky sun"
).split()
SENTENCES = ["the cat sat on the mat", "a dog ran fast", "the red car", "big blue sky",
             "small house tree", "the sun", "a slow dog on the road", "red tree"]


def _np(t):
    return t.detach().float().numpy().copy()


def _logs(history, prefix):
    """The numbers of a Trainer's log history (not its timings), as arrays."""
    out = {}
    for key in ("loss", "grad_norm", "learning_rate", "eval_loss", "eval_acc", "train_loss"):
        vals = [h[key] for h in history if key in h]
        if vals:
            out[f"{prefix}{key}"] = np.array(vals, np.float64)
    return out


def _weights(model, prefix, names=None):
    return {f"{prefix}{n}": _np(p) for n, p in model.named_parameters()
            if names is None or any(s in n for s in names)}


def _gpt2(transformers, torch, seed=0):
    cfg = transformers.GPT2Config(n_layer=2, n_head=2, n_embd=32, vocab_size=100, n_positions=32,
                                  bos_token_id=0, eos_token_id=0)
    torch.manual_seed(seed)
    return transformers.GPT2LMHeadModel(cfg)


def _tokenizer(transformers, directory):
    path = os.path.join(directory, "vocab.txt")
    with open(path, "w") as f:
        f.write("\n".join(VOCAB) + "\n")
    return transformers.BertTokenizerFast(path)


def _bert_config(transformers, **kw):
    return transformers.BertConfig(vocab_size=len(VOCAB), hidden_size=32, num_hidden_layers=2,
                                   num_attention_heads=2, intermediate_size=64,
                                   max_position_embeddings=32, **kw)


def _trainer_gpt2(torch, result):
    import transformers
    model = _gpt2(transformers, torch)
    rs = np.random.RandomState(0)
    ids = rs.randint(0, 100, (24, 16))

    class Data(torch.utils.data.Dataset):
        def __init__(self, rows):
            self.rows = rows

        def __len__(self):
            return len(self.rows)

        def __getitem__(self, i):
            x = torch.tensor(ids[self.rows[i]])
            return {"input_ids": x, "labels": x}

    with tempfile.TemporaryDirectory() as d:
        args = transformers.TrainingArguments(
            output_dir=d, use_cpu=True, report_to=[], per_device_train_batch_size=4,
            per_device_eval_batch_size=4, gradient_accumulation_steps=2, max_steps=4,
            learning_rate=1e-3, lr_scheduler_type="cosine", warmup_steps=1, max_grad_norm=0.5,
            logging_steps=1, eval_strategy="steps", eval_steps=2, save_strategy="no", seed=0,
            disable_tqdm=True)
        trainer = transformers.Trainer(model=model, args=args, train_dataset=Data(range(16)),
                                       eval_dataset=Data(range(16, 24)))
        out = trainer.train()
        result.update(_logs(trainer.state.log_history, ""))
        result["training_loss"] = np.float64(out.training_loss)
        pred = trainer.predict(Data(range(16, 24)))
    result["predictions"] = pred.predictions
    result["label_ids"] = pred.label_ids
    result["test_loss"] = np.float64(pred.metrics["test_loss"])
    result.update(_weights(model, "w:"))


def _trainer_bert(torch, result):
    import transformers
    rs = np.random.RandomState(0)
    words = VOCAB[5:]
    texts = [" ".join(rs.choice(words, rs.randint(3, 9))) for _ in range(24)]
    labels = rs.randint(0, 3, 24)
    with tempfile.TemporaryDirectory() as d:
        tok = _tokenizer(transformers, d)

        class Data(torch.utils.data.Dataset):
            def __init__(self, lo, hi, with_labels=True):
                self.lo, self.hi, self.with_labels = lo, hi, with_labels

            def __len__(self):
                return self.hi - self.lo

            def __getitem__(self, i):
                e = tok(texts[self.lo + i])
                if self.with_labels:
                    e["labels"] = int(labels[self.lo + i])
                return e

        cfg = _bert_config(transformers, num_labels=3)

        def metrics(p):
            return {"acc": float((p.predictions.argmax(-1) == p.label_ids).mean())}

        args = transformers.TrainingArguments(
            output_dir=os.path.join(d, "out"), use_cpu=True, report_to=[],
            per_device_train_batch_size=4, per_device_eval_batch_size=4,
            gradient_accumulation_steps=2, num_train_epochs=2, learning_rate=1e-3,
            lr_scheduler_type="linear", warmup_steps=1, max_grad_norm=1.0, logging_steps=1,
            eval_strategy="epoch", save_strategy="epoch", seed=0, label_smoothing_factor=0.1,
            weight_decay=0.01, gradient_checkpointing=True, disable_tqdm=True)

        def trainer():
            torch.manual_seed(0)
            model = transformers.BertForSequenceClassification(cfg)
            return transformers.Trainer(
                model=model, args=args, train_dataset=Data(0, 16), eval_dataset=Data(16, 24),
                data_collator=transformers.DataCollatorWithPadding(tok),
                compute_metrics=metrics, processing_class=tok)

        first = trainer()
        first.train()
        result.update(_logs(first.state.log_history, "cls:"))
        pred = first.predict(Data(16, 24))
        result["cls:predictions"] = pred.predictions
        result.update(_weights(first.model, "cls:w:", ["classifier", "layer.1.output"]))
        # resume from the epoch-1 checkpoint (model, optimizer, scheduler, rng states)
        resumed = trainer()
        resumed.train(resume_from_checkpoint=os.path.join(d, "out", "checkpoint-2"))
        result.update(_logs(resumed.state.log_history[-3:], "resumed:"))
        result.update(_weights(resumed.model, "resumed:w:", ["classifier", "layer.1.output"]))
        # masked LM: the collator picks the masked positions with torch's generator
        torch.manual_seed(0)
        mlm = transformers.BertForMaskedLM(_bert_config(transformers))
        args = transformers.TrainingArguments(
            output_dir=os.path.join(d, "mlm"), use_cpu=True, report_to=[],
            per_device_train_batch_size=4, max_steps=3, learning_rate=1e-3, save_strategy="no",
            seed=0, logging_steps=1, optim="adafactor", disable_tqdm=True)
        t = transformers.Trainer(
            model=mlm, args=args, train_dataset=Data(0, 16, False),
            data_collator=transformers.DataCollatorForLanguageModeling(tok, mlm_probability=0.3))
        t.train()
        result.update(_logs(t.state.log_history, "mlm:"))
        result.update(_weights(mlm, "mlm:w:", ["layer.1.output"]))


def _peft(torch, result):
    import peft
    import transformers
    x = torch.from_numpy(np.random.RandomState(0).randint(0, 100, (4, 16)))

    def train(model, name, steps=3):
        opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-2)
        losses = []
        for _ in range(steps):
            out = model(input_ids=x, labels=x)
            out.loss.backward()
            opt.step()
            opt.zero_grad()
            losses.append(out.loss.item())
        result[f"{name}:losses"] = np.array(losses)
        model.eval()
        with torch.no_grad():
            result[f"{name}:logits"] = _np(model(input_ids=x).logits)
        result.update({f"{name}:trainable:{n}": _np(p) for n, p in model.named_parameters()
                       if p.requires_grad})

    torch.manual_seed(1)
    lora = peft.get_peft_model(_gpt2(transformers, torch), peft.LoraConfig(
        r=4, lora_alpha=8, target_modules=["c_attn", "c_proj"], lora_dropout=0.0,
        fan_in_fan_out=True, task_type="CAUSAL_LM"))
    train(lora, "lora")
    with tempfile.TemporaryDirectory() as d:
        lora.save_pretrained(d)
        result["lora:files"] = np.array(sorted(os.listdir(d)))
        loaded = peft.PeftModel.from_pretrained(_gpt2(transformers, torch), d)
        with torch.no_grad():
            result["lora:loaded_logits"] = _np(loaded(input_ids=x).logits)
    merged = lora.merge_and_unload()
    result["lora:merged_type"] = np.array(type(merged).__name__)
    with torch.no_grad():
        result["lora:merged_logits"] = _np(merged(input_ids=x).logits)
    result.update(_weights(merged, "lora:merged:", ["h.0.attn.c_attn"]))
    for name, config in [
            ("ia3", peft.IA3Config(target_modules=["c_attn", "mlp.c_proj"],
                                   feedforward_modules=["mlp.c_proj"], fan_in_fan_out=True,
                                   task_type="CAUSAL_LM")),
            ("prefix", peft.PrefixTuningConfig(num_virtual_tokens=4, task_type="CAUSAL_LM"))]:
        torch.manual_seed(1)
        train(peft.get_peft_model(_gpt2(transformers, torch), config), name)


def _accelerate(torch, result):
    from accelerate import Accelerator
    from accelerate.utils import set_seed
    set_seed(0)
    acc = Accelerator(cpu=True, gradient_accumulation_steps=2)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.GELU(), torch.nn.LayerNorm(16),
                                torch.nn.Linear(16, 1))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    sched = torch.optim.lr_scheduler.StepLR(opt, 2, 0.5)
    rs = np.random.RandomState(0)
    X = torch.from_numpy(rs.randn(30, 8).astype(np.float32))
    Y = torch.from_numpy(rs.randn(30, 1).astype(np.float32))
    dl = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(X, Y), batch_size=4,
                                     shuffle=True)
    model, opt, dl, sched = acc.prepare(model, opt, dl, sched)
    losses, norms, gathered = [], [], []
    for x, y in dl:
        with acc.accumulate(model):
            loss = torch.nn.functional.mse_loss(model(x), y)
            acc.backward(loss)
            if acc.sync_gradients:
                norms.append(float(acc.clip_grad_norm_(model.parameters(), 0.5)))
            opt.step()
            sched.step()
            opt.zero_grad()
        losses.append(loss.item())
        gathered.append(_np(acc.gather(y)).ravel())
    result.update(losses=np.array(losses), norms=np.array(norms),
                  gathered=np.concatenate(gathered), lr=np.array(sched.get_last_lr()))
    with torch.no_grad():
        result["metrics"] = _np(acc.gather_for_metrics(model(X[:5])))
    result.update(_weights(acc.unwrap_model(model), "w:"))
    with tempfile.TemporaryDirectory() as d:
        acc.save_state(d)
        result["files"] = np.array(sorted(os.listdir(d)))
        saved = [p.detach().clone() for p in model.parameters()]
        with torch.no_grad():
            for p in model.parameters():
                p.zero_()
        acc.load_state(d)
        result["restored"] = np.array([torch.equal(a, b) for a, b in
                                       zip(saved, model.parameters())])
        result["restored_step"] = np.array(opt.state_dict()["state"][0]["step"].item())


def _sentence_transformers(torch, result):
    import transformers
    from sentence_transformers import InputExample, SentenceTransformer, losses, models
    from sentence_transformers.models.tokenizer import WhitespaceTokenizer
    from torch.utils.data import DataLoader
    with tempfile.TemporaryDirectory() as d:
        _tokenizer(transformers, d).save_pretrained(d)
        torch.manual_seed(0)
        transformers.BertModel(_bert_config(transformers)).save_pretrained(d)
        tr = models.Transformer(d, max_seq_length=16)
        st = SentenceTransformer(modules=[tr, models.Pooling(32, pooling_mode="mean")],
                                 device="cpu")
        result["bert:encode"] = st.encode(SENTENCES)
        pairs = [InputExample(texts=[SENTENCES[i], SENTENCES[(i + 2) % 8]]) for i in range(8)]
        scored = [InputExample(texts=[SENTENCES[i], SENTENCES[(i + 1) % 8]], label=(i % 3) / 2)
                  for i in range(8)]
        torch.manual_seed(0)
        st.old_fit([(DataLoader(pairs, batch_size=4, shuffle=True),
                     losses.MultipleNegativesRankingLoss(st)),
                    (DataLoader(scored, batch_size=4, shuffle=True),
                     losses.CosineSimilarityLoss(st))],
                   epochs=2, warmup_steps=1, optimizer_params={"lr": 1e-3},
                   show_progress_bar=False)
        result["bert:trained"] = st.encode(SENTENCES)
        result["bert:similarity"] = _np(st.similarity(st.encode(SENTENCES[:4]),
                                                      st.encode(SENTENCES[4:])))
    torch.manual_seed(0)
    emb = torch.randn(len(VOCAB), 16).numpy()
    words = models.WordEmbeddings(WhitespaceTokenizer(VOCAB, do_lower_case=True), emb,
                                  update_embeddings=True)
    st = SentenceTransformer(modules=[words, models.Pooling(16, pooling_mode="mean"),
                                      models.Dense(16, 8, activation_function=torch.nn.Tanh()),
                                      models.Normalize()], device="cpu")
    result["words:encode"] = st.encode(SENTENCES)
    triples = [InputExample(texts=[SENTENCES[i], SENTENCES[(i + 2) % 8], SENTENCES[(i + 3) % 8]])
               for i in range(8)]
    torch.manual_seed(0)
    st.old_fit([(DataLoader(triples, batch_size=4, shuffle=True),
                 losses.CachedMultipleNegativesRankingLoss(st, mini_batch_size=2))],
               epochs=2, warmup_steps=1, optimizer_params={"lr": 1e-2}, show_progress_bar=False)
    result["words:trained"] = st.encode(SENTENCES)
    result.update(_weights(st, "words:w:"))
    # the saved Dense names its activation by __module__ and reloads only torch.* paths
    with tempfile.TemporaryDirectory() as d:
        st.save(d)
        result["words:reloaded"] = SentenceTransformer(d, device="cpu").encode(SENTENCES)


def _einops(torch, result):
    from einops import einsum, pack, rearrange, reduce, repeat, unpack
    from einops.layers.torch import EinMix, Rearrange, Reduce

    class Attention(torch.nn.Module):
        def __init__(self, d=16, heads=2):
            super().__init__()
            self.heads = heads
            self.qkv = torch.nn.Linear(d, 3 * d)
            self.out = torch.nn.Linear(d, d)

        def forward(self, x):
            q, k, v = rearrange(self.qkv(x), "b n (three h e) -> three b h n e", three=3,
                                h=self.heads)
            a = (einsum(q, k, "b h i e, b h j e -> b h i j") * q.shape[-1] ** -0.5).softmax(-1)
            return self.out(rearrange(einsum(a, v, "b h i j, b h j e -> b h i e"),
                                      "b h n e -> b n (h e)"))

    torch.manual_seed(0)
    model = torch.nn.Sequential(
        Rearrange("b c (h p1) (w p2) -> b (h w) (p1 p2 c)", p1=4, p2=4),
        torch.nn.Linear(48, 16), Attention(),
        EinMix("b t c -> b t c2", weight_shape="c c2", bias_shape="c2", c=16, c2=16),
        Reduce("b t c -> b c", "mean"), torch.nn.Linear(16, 5))
    rs = np.random.RandomState(0)
    x = torch.from_numpy(rs.randn(4, 3, 8, 8).astype(np.float32))
    y = torch.from_numpy(rs.randint(0, 5, 4))
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    losses = []
    for _ in range(5):
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        opt.zero_grad()
        losses.append(loss.item())
    result["losses"] = np.array(losses)
    result["logits"] = _np(model(x))
    result.update(_weights(model, "w:"))
    img = torch.from_numpy(rs.rand(2, 3, 4, 6).astype(np.float32))
    packed, shapes = pack([img, img[:, 0]], "b * w")
    result.update({
        "max_pool": _np(reduce(img, "b c (h 2) (w 2) -> b c h w", "max")),
        "repeat": _np(repeat(img[0, 0], "h w -> h w r", r=3)),
        "packed": _np(packed),
        "unpacked": _np(unpack(packed, shapes, "b * w")[1]),
        "prod": _np(reduce(img, "b c h w -> c", "prod")),
        "outer": _np(einsum(img[0, 0], img[1, 1], "h w, h v -> w v")),
        "list": _np(rearrange([img[0], img[1]], "n c h w -> (n h) (c w)"))})


def run(torch, name):
    """Run case ``name``; return what it computed, as arrays."""
    result = {}
    globals()["_" + name](torch, result)
    return {k: np.asarray(v) for k, v in result.items()}


if __name__ == "__main__":  # the ember side, under python -m ember.as_torch
    import torch
    directory, names = sys.argv[1], sys.argv[2].split(",")
    assert torch is sys.modules["ember"], torch
    for name in names:
        np.savez(os.path.join(directory, f"{name}_ember.npz"), **run(torch, name))
