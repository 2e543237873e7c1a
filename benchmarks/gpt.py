"""The GPT of examples/train_gpt.py, built from either library, for the benchmarks.

``lib`` is ember or torch: both build the same model (2 layers, 4 heads, width 128, context 64,
vocabulary 65, tied head) and time the same training step. Run as a script it measures the
peak resident memory of 20 steps in a fresh process holding only the one library (Linux):

    python benchmarks/gpt.py ember      # prints the peak RSS in MiB
"""
import os
import sys


def build(lib, vocab=65, context=64, width=128, n_layer=2, n_head=4, device="cpu"):
    nn, F = lib.nn, lib.nn.functional

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln1, self.ln2 = nn.LayerNorm(width), nn.LayerNorm(width)
            self.qkv, self.proj = nn.Linear(width, 3 * width), nn.Linear(width, width)
            self.mlp = nn.Sequential(nn.Linear(width, 4 * width), nn.GELU(),
                                     nn.Linear(4 * width, width))

        def forward(self, x):
            B, T, C = x.shape
            q, k, v = (t.view(B, T, n_head, C // n_head).transpose(1, 2)
                       for t in self.qkv(self.ln1(x)).split(C, dim=2))
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + self.proj(y.transpose(1, 2).contiguous().view(B, T, C))
            return x + self.mlp(self.ln2(x))

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.tok, self.pos = nn.Embedding(vocab, width), nn.Embedding(context, width)
            self.blocks = nn.ModuleList(Block() for _ in range(n_layer))
            self.ln_f, self.head = nn.LayerNorm(width), nn.Linear(width, vocab, bias=False)
            self.head.weight = self.tok.weight

        def forward(self, idx, targets):
            x = self.tok(idx) + self.pos(lib.arange(idx.shape[1], device=idx.device))
            for block in self.blocks:
                x = block(x)
            return F.cross_entropy(self.head(self.ln_f(x)).view(-1, vocab), targets.view(-1))

    lib.manual_seed(0)
    return GPT().to(device)


def _setup(lib, batch, context, vocab, device, sizes, **adamw):
    """The model (``sizes``: ``width``, ``n_layer``, ``n_head`` of :func:`build`), its AdamW
    and one batch of inputs and targets."""
    model = build(lib, vocab=vocab, context=context, device=device, **sizes)
    opt = lib.optim.AdamW(model.parameters(), lr=1e-3, **adamw)
    x = lib.randint(vocab, (batch, context)).to(device)
    y = lib.randint(vocab, (batch, context)).to(device)
    return model, opt, x, y


def _step(lib, model, forward, opt, x, y, zero_grad=True):
    """The training step: forward (``forward(x, y)`` is the loss), backward, gradient
    clipping, AdamW."""
    def step():
        if zero_grad:
            opt.zero_grad(set_to_none=True)
        forward(x, y).backward()
        lib.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
    return step


def train_step(lib, batch=16, context=64, vocab=65, device="cpu", **sizes):
    """A zero-argument training step: forward, backward, gradient clipping, AdamW. ``sizes``:
    ``width``, ``n_layer``, ``n_head`` of :func:`build`."""
    model, opt, x, y = _setup(lib, batch, context, vocab, device, sizes)
    return _step(lib, model, model, opt, x, y)


def graphed_train_step(lib, batch=16, context=64, vocab=65, device="cuda", **sizes):
    """``train_step`` with the model's forward and backward captured as CUDA graphs
    (``cuda.make_graphed_callables``, PyTorch's way to take a small model's per-op host time out
    of its step); clipping and AdamW run as usual."""
    model, opt, x, y = _setup(lib, batch, context, vocab, device, sizes)
    return _step(lib, model, lib.cuda.make_graphed_callables(model, (x, y)), opt, x, y)


def captured_train_step(lib, batch=16, context=64, vocab=65, device="cuda", **sizes):
    """``train_step`` captured whole — forward, backward, clipping and AdamW with
    ``capturable=True`` — into one CUDA graph (PyTorch's whole-network capture); each call
    replays it."""
    import warnings
    model, opt, x, y = _setup(lib, batch, context, vocab, device, sizes, capturable=True)
    side = lib.cuda.Stream()
    side.wait_stream(lib.cuda.current_stream())
    with warnings.catch_warnings(), lib.cuda.stream(side):
        warnings.simplefilter("ignore")  # capturable=True run uncaptured (the warm-up)
        warm = _step(lib, model, model, opt, x, y)
        for _ in range(3):
            warm()
    lib.cuda.current_stream().wait_stream(side)
    graph = lib.cuda.CUDAGraph()
    opt.zero_grad(set_to_none=True)  # the gradients' memory comes from the graph's pool
    with lib.cuda.graph(graph):
        _step(lib, model, model, opt, x, y, zero_grad=False)()

    def replay():
        graph.replay()
    replay.static = (model, opt, x, y)  # the graph reads and writes their memory: keep them
    return replay


def compiled_train_step(lib, batch=16, context=64, vocab=65, device="cuda",
                        mode="reduce-overhead", **sizes):
    """``train_step`` with the model compiled (``lib.compile(model, mode=mode)``): under
    reduce-overhead on a GPU, the compiled forward and backward graphs run as CUDA graphs."""
    model, opt, x, y = _setup(lib, batch, context, vocab, device, sizes)
    return _step(lib, model, lib.compile(model, mode=mode), opt, x, y)


if __name__ == "__main__":
    if sys.argv[1] == "ember":
        sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    step = train_step(__import__(sys.argv[1]))
    for _ in range(20):
        step()
    # VmHWM, not getrusage's ru_maxrss: on Linux ru_maxrss survives exec, so a child would
    # report its parent's peak when that is higher
    with open("/proc/self/status") as f:
        print(next(int(line.split()[1]) for line in f if line.startswith("VmHWM:")) / 1024)
