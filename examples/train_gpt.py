"""Train a character-level GPT (nanoGPT-style) on bundled Shakespeare, then sample from it.

Token and position embeddings, pre-LayerNorm transformer blocks of causal self-attention and a
GELU MLP, a weight-tied head; AdamW with linear warmup then cosine decay, gradient clipping;
sampling with temperature and top-k. The text is examples/data/shakespeare.txt (Julius Caesar and
Macbeth, public domain; see examples/data/README.md). Plain PyTorch code: only the import line
says ember.

    python examples/train_gpt.py               # 2 layers, 4 heads, width 128, context 64
    python examples/train_gpt.py --quick       # a few seconds, for the test suite
    python examples/train_gpt.py --compile     # the model through torch.compile
    python examples/train_gpt.py --device cuda --compile --compile-mode reduce-overhead
                                               # compiled graphs replayed as CUDA graphs
    python examples/train_gpt.py --device cuda --amp   # float16 autocast and GradScaler
    python -m ember.distributed.run --standalone --nproc-per-node 2 examples/train_gpt.py --ddp
                                               # data parallel over 2 processes
"""
import argparse
import math
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import ember as torch  # noqa: E402  (a PyTorch program runs on ember by changing this import)
import ember.nn as nn  # noqa: E402
import ember.nn.functional as F  # noqa: E402

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "shakespeare.txt")


class CausalSelfAttention(nn.Module):
    def __init__(self, width, n_head, dropout):
        super().__init__()
        self.n_head = n_head
        self.qkv = nn.Linear(width, 3 * width)
        self.proj = nn.Linear(width, width)
        self.dropout = dropout

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(x).split(C, dim=2)
        # (B, T, C) -> (B, heads, T, head width)
        q, k, v = (t.view(B, T, self.n_head, C // self.n_head).transpose(1, 2) for t in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True,
                                           dropout_p=self.dropout if self.training else 0.0)
        return self.proj(y.transpose(1, 2).contiguous().view(B, T, C))


class Block(nn.Module):
    def __init__(self, width, n_head, dropout):
        super().__init__()
        self.ln1 = nn.LayerNorm(width)
        self.attn = CausalSelfAttention(width, n_head, dropout)
        self.ln2 = nn.LayerNorm(width)
        self.mlp = nn.Sequential(nn.Linear(width, 4 * width), nn.GELU(),
                                 nn.Linear(4 * width, width), nn.Dropout(dropout))

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.mlp(self.ln2(x))


class GPT(nn.Module):
    def __init__(self, vocab_size, context=64, width=128, n_layer=2, n_head=4, dropout=0.0):
        super().__init__()
        self.context = context
        self.tok_emb = nn.Embedding(vocab_size, width)
        self.pos_emb = nn.Embedding(context, width)
        self.drop = nn.Dropout(dropout)
        self.blocks = nn.ModuleList(Block(width, n_head, dropout) for _ in range(n_layer))
        self.ln_f = nn.LayerNorm(width)
        self.head = nn.Linear(width, vocab_size, bias=False)
        self.head.weight = self.tok_emb.weight  # weight tying, as GPT-2
        self.apply(self._init_weights)

    @staticmethod
    def _init_weights(module):
        if isinstance(module, (nn.Linear, nn.Embedding)):
            nn.init.normal_(module.weight, mean=0.0, std=0.02)
        if isinstance(module, nn.Linear) and module.bias is not None:
            nn.init.zeros_(module.bias)

    def forward(self, idx, targets=None):
        B, T = idx.shape
        pos = torch.arange(T, dtype=torch.long, device=idx.device)
        x = self.drop(self.tok_emb(idx) + self.pos_emb(pos))
        for block in self.blocks:
            x = block(x)
        logits = self.head(self.ln_f(x))
        loss = None
        if targets is not None:
            loss = F.cross_entropy(logits.view(B * T, -1), targets.view(B * T))
        return logits, loss

    @torch.no_grad()
    def generate(self, idx, max_new_tokens, temperature=0.8, top_k=10):
        for _ in range(max_new_tokens):
            logits, _ = self(idx[:, -self.context:])
            logits = logits[:, -1, :] / temperature
            if top_k is not None:
                kth = torch.topk(logits, top_k).values[:, -1:]
                logits = logits.masked_fill(logits < kth, float("-inf"))
            probs = F.softmax(logits, dim=-1)
            idx = torch.cat([idx, torch.multinomial(probs, num_samples=1)], dim=1)
        return idx


def configure_optimizer(model, lr, weight_decay):
    """AdamW, decaying only the matrices (not biases, LayerNorm weights or position vectors)."""
    decay = [p for p in model.parameters() if p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    groups = [{"params": decay, "weight_decay": weight_decay},
              {"params": no_decay, "weight_decay": 0.0}]
    return torch.optim.AdamW(groups, lr=lr, betas=(0.9, 0.99))


def warmup_cosine(warmup, total, min_ratio=0.1):
    """The LambdaLR factor: linear warmup, then cosine decay to ``min_ratio`` of the peak."""
    def factor(step):
        if step < warmup:
            return (step + 1) / warmup
        progress = min(1.0, (step - warmup) / max(1, total - warmup))
        return min_ratio + (1 - min_ratio) * 0.5 * (1 + math.cos(math.pi * progress))
    return factor


def get_batch(data, batch_size, context, device="cpu"):
    starts = torch.randint(len(data) - context - 1, (batch_size,))
    x = torch.stack([data[i:i + context] for i in starts.tolist()])
    y = torch.stack([data[i + 1:i + 1 + context] for i in starts.tolist()])
    return x.to(device), y.to(device)


@torch.no_grad()
def estimate_loss(model, data, batch_size, context, batches=8, device="cpu"):
    model.eval()
    losses = [model(*get_batch(data, batch_size, context, device))[1].item()
              for _ in range(batches)]
    model.train()
    return sum(losses) / len(losses)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--context", type=int, default=64)
    parser.add_argument("--width", type=int, default=128)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--heads", type=int, default=4)
    parser.add_argument("--lr", type=float, default=3e-3)
    parser.add_argument("--eval-batches", type=int, default=8)
    parser.add_argument("--sample-chars", type=int, default=300)
    parser.add_argument("--seed", type=int, default=1337)
    parser.add_argument("--quick", action="store_true", help="a short run for the test suite")
    parser.add_argument("--ddp", action="store_true",
                        help="DistributedDataParallel; start with python -m ember.distributed.run")
    parser.add_argument("--checkpoint", default=None, help="save the trained weights here")
    parser.add_argument("--compile", nargs="?", const="inductor", default=None,
                        metavar="BACKEND", help="torch.compile the model (backend: inductor, "
                        "or eager, aot_eager)")
    parser.add_argument("--compile-mode", default=None,
                        help="torch.compile's mode, e.g. reduce-overhead (on CUDA: the compiled "
                        "graphs replayed as CUDA graphs)")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--amp", action="store_true",
                        help="mixed precision: autocast (float16 on CUDA, with GradScaler)")
    args = parser.parse_args(argv)
    device = torch.device(args.device)
    rank, world = 0, 1
    if args.ddp:
        import ember.distributed as dist
        if device.type == "cuda":  # one GPU per rank, NCCL between them (nanoGPT's setup)
            device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", 0)))
            torch.cuda.set_device(device)
        dist.init_process_group("nccl" if device.type == "cuda" and dist.is_nccl_available()
                                else "gloo")
        rank, world = dist.get_rank(), dist.get_world_size()
        if args.batch_size % world:
            raise SystemExit(f"--batch-size {args.batch_size} is not divisible by {world} ranks")
    master = rank == 0
    if not master:  # one rank reports
        sys.stdout = open(os.devnull, "w")
    if args.quick:
        args.steps, args.eval_batches, args.sample_chars = 30, 2, 60

    start = time.perf_counter()
    torch.manual_seed(args.seed)
    with open(DATA, encoding="utf-8") as f:
        text = f.read()
    chars = sorted(set(text))
    stoi = {c: i for i, c in enumerate(chars)}
    data = torch.tensor([stoi[c] for c in text], dtype=torch.long)
    split = int(0.9 * len(data))
    train_data, val_data = data[:split], data[split:]

    model = GPT(len(chars), args.context, args.width, args.layers, args.heads).to(device)
    optimizer = configure_optimizer(model, args.lr, weight_decay=0.1)
    scheduler = torch.optim.lr_scheduler.LambdaLR(
        optimizer, warmup_cosine(max(1, args.steps // 20), args.steps))
    raw_model = model
    if args.compile:
        model = torch.compile(model, backend=args.compile, mode=args.compile_mode)
    if args.ddp:
        from ember.nn.parallel import DistributedDataParallel as DDP
        model = DDP(model)  # rank 0's weights; gradients averaged over the ranks
        torch.manual_seed(args.seed + rank)  # each rank draws its own batches
    n_params = sum(p.numel() for p in model.parameters())
    print(f"text: {len(text):,} characters, vocabulary {len(chars)}; "
          f"model {n_params:,} parameters")

    # --amp: float16 autocast with loss scaling on CUDA (bfloat16, which needs none, on the CPU)
    amp_dtype = torch.float16 if device.type == "cuda" else torch.bfloat16
    scaler = torch.amp.GradScaler(device.type, enabled=args.amp and amp_dtype == torch.float16)
    eval_every = max(1, args.steps // 5)
    first_val = estimate_loss(model, val_data, args.batch_size, args.context, args.eval_batches,
                              device)
    print(f"step    0: val loss {first_val:.3f}")
    train_seconds = 0.0  # training steps only, evaluation excluded
    for step in range(1, args.steps + 1):
        step_start = time.perf_counter()
        x, y = get_batch(train_data, args.batch_size // world, args.context, device)
        with torch.autocast(device.type, dtype=amp_dtype, enabled=args.amp):
            _, loss = model(x, y)
        optimizer.zero_grad(set_to_none=True)
        scaler.scale(loss).backward()
        scaler.unscale_(optimizer)  # clip the true gradients
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        scaler.step(optimizer)
        scaler.update()
        scheduler.step()
        loss = loss.item()
        train_seconds += time.perf_counter() - step_start
        evaluating = step % eval_every == 0 or step == args.steps
        if sys.stdout.isatty() or evaluating:  # into a file or pipe: one line per evaluation
            filled = 30 * step // args.steps
            print(f"{chr(13) if sys.stdout.isatty() else ''}[{'#' * filled}{'-' * (30 - filled)}] "
                  f"step {step}/{args.steps} loss {loss:.3f} "
                  f"{train_seconds / step * 1e3:.0f} ms/step", end="", flush=True)
        if evaluating:
            val = estimate_loss(model, val_data, args.batch_size, args.context,
                                args.eval_batches, device)
            print(f"\nstep {step:4d}: val loss {val:.3f}")

    prompt = torch.tensor([[stoi["\n"]]], dtype=torch.long, device=device)
    sample = "".join(chars[i]
                     for i in raw_model.generate(prompt, args.sample_chars)[0].tolist())
    print("sample:" + sample)
    print(f"final: val loss {first_val:.3f} -> {val:.3f}, {args.steps} steps, "
          f"{train_seconds / args.steps * 1e3:.0f} ms/step, {time.perf_counter() - start:.1f} s")
    if args.checkpoint and master:  # one copy of the weights: rank 0 writes it
        torch.save(raw_model.state_dict(), args.checkpoint)
    if args.ddp:
        dist.destroy_process_group()
    return {"first_val": first_val, "val": val, "sample": sample,
            "step_seconds": train_seconds / args.steps}


if __name__ == "__main__":
    main()
