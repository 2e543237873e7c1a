"""The program that tests/test_tensor_parallel.py runs on two ranks through
``python -m ember.distributed.run``: a Llama-style transformer parallelized with
``parallelize_module`` (row-parallel embedding, column/row-parallel attention and feed-forward,
sequence-parallel norms, a column-parallel output head and ``loss_parallel``) trained with SGD
and AdamW next to the same model unparallelized in this process; ``loss_parallel`` with class
weights and ignored targets; a column-parallel embedding; DDP under ``join()`` with uneven
inputs. Prints ``PASS <rank>``. ``make_transformer`` also serves the single-process tests (with
ember or PyTorch)."""
import copy
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import ember as torch  # noqa: E402


def make_transformer(L, vocab=12, dim=16, n_heads=4, hidden=24, n_layers=2):
    """A small Llama (RMSNorm, causal attention, SwiGLU feed-forward; a LayerNorm last) built
    from the library ``L`` (ember or PyTorch)."""
    nn, F = L.nn, L.nn.functional

    class Attention(nn.Module):
        def __init__(self):
            super().__init__()
            self.head_dim = dim // n_heads
            self.wq = nn.Linear(dim, dim, bias=False)
            self.wk = nn.Linear(dim, dim, bias=False)
            self.wv = nn.Linear(dim, dim, bias=False)
            self.wo = nn.Linear(dim, dim, bias=False)

        def forward(self, x):
            bsz, seqlen, _ = x.shape
            # -1 heads: under tensor parallelism each rank holds some of them
            q, k, v = (w(x).view(bsz, seqlen, -1, self.head_dim).transpose(1, 2)
                       for w in (self.wq, self.wk, self.wv))
            out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            return self.wo(out.transpose(1, 2).reshape(bsz, seqlen, -1))

    class FeedForward(nn.Module):
        def __init__(self):
            super().__init__()
            self.w1 = nn.Linear(dim, hidden, bias=False)
            self.w2 = nn.Linear(hidden, dim, bias=False)
            self.w3 = nn.Linear(dim, hidden, bias=False)

        def forward(self, x):
            return self.w2(F.silu(self.w1(x)) * self.w3(x))

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.attention_norm = nn.RMSNorm(dim)
            self.attention = Attention()
            self.ffn_norm = nn.RMSNorm(dim)
            self.feed_forward = FeedForward()

        def forward(self, x):
            h = x + self.attention(self.attention_norm(x))
            return h + self.feed_forward(self.ffn_norm(h))

    class Transformer(nn.Module):
        def __init__(self):
            super().__init__()
            self.tok_embeddings = nn.Embedding(vocab, dim)
            self.layers = nn.ModuleList([Block() for _ in range(n_layers)])
            self.norm = nn.LayerNorm(dim)
            self.output = nn.Linear(dim, vocab, bias=False)

        def forward(self, tokens):
            h = self.tok_embeddings(tokens)
            for layer in self.layers:
                h = layer(h)
            return self.output(self.norm(h))

    return Transformer()


def tp_plan(tp, dt):
    """torchtitan's Llama plan (``tp``: the tensor.parallel module, ``dt``: the tensor
    module of the same library)."""
    R, S = dt.Replicate(), dt.Shard
    seq_in = dict(input_layouts=(S(1),), desired_input_layouts=(R,))
    return {
        "tok_embeddings": tp.RowwiseParallel(input_layouts=R, output_layouts=S(1)),
        "norm": tp.SequenceParallel(),
        "output": tp.ColwiseParallel(input_layouts=S(1), output_layouts=S(-1),
                                     use_local_output=False),
        "layers.*.attention_norm": tp.SequenceParallel(),
        "layers.*.attention": tp.PrepareModuleInput(**seq_in),
        "layers.*.attention.w[qkv]": tp.ColwiseParallel(),
        "layers.*.attention.wo": tp.RowwiseParallel(output_layouts=S(1)),
        "layers.*.ffn_norm": tp.SequenceParallel(),
        "layers.*.feed_forward": tp.PrepareModuleInput(**seq_in),
        "layers.*.feed_forward.w1": tp.ColwiseParallel(),
        "layers.*.feed_forward.w2": tp.RowwiseParallel(output_layouts=S(1)),
        "layers.*.feed_forward.w3": tp.ColwiseParallel(),
    }


def close(a, b, msg, atol=1e-5):
    assert tuple(a.shape) == tuple(b.shape), f"{msg}: shape {tuple(a.shape)} != {tuple(b.shape)}"
    assert torch.allclose(a, b, atol=atol, rtol=1e-4), f"{msg}: {a} != {b}"


def check_transformer(mesh, rank):
    import ember.distributed.tensor.parallel as tp
    import ember.distributed.tensor as dt
    F = torch.nn.functional
    for make_opt in (lambda ps: torch.optim.SGD(ps, lr=0.1, momentum=0.9),
                     lambda ps: torch.optim.AdamW(ps, lr=0.01)):
        torch.manual_seed(0)
        ref = make_transformer(torch)
        model = tp.parallelize_module(copy.deepcopy(ref), mesh, tp_plan(tp, dt))
        placements = {n: p.placements for n, p in model.named_parameters()}
        assert placements["tok_embeddings.weight"] == (dt.Shard(0),)
        assert placements["layers.1.attention.wq.weight"] == (dt.Shard(0),)
        assert placements["layers.1.feed_forward.w2.weight"] == (dt.Shard(1),)
        assert placements["layers.0.ffn_norm.weight"] == (dt.Replicate(),)
        opt, opt_ref = make_opt(model.parameters()), make_opt(ref.parameters())
        for step in range(2):
            tokens = torch.randint(0, 12, (2, 8))
            labels = torch.randint(0, 12, (2, 8))
            pred = model(tokens)
            assert pred.placements == (dt.Shard(2),), pred.placements
            with tp.loss_parallel():
                loss = F.cross_entropy(pred.flatten(0, 1), labels.flatten(0, 1))
                loss.backward()
            ref_loss = F.cross_entropy(ref(tokens).flatten(0, 1), labels.flatten(0, 1))
            ref_loss.backward()
            assert loss.placements == (dt.Replicate(),)
            close(loss.to_local(), ref_loss, f"loss, step {step}")
            for (name, p), q in zip(model.named_parameters(), ref.parameters()):
                close(p.grad.full_tensor(), q.grad, f"grad {name}, step {step}")
            opt.step()
            opt_ref.step()
            opt.zero_grad()
            opt_ref.zero_grad()
            for (name, p), q in zip(model.named_parameters(), ref.parameters()):
                assert p.placements == placements[name]
                close(p.full_tensor(), q.detach(), f"{type(opt).__name__} {name}, step {step}")


def check_loss_parallel(mesh, rank):
    """Class weights, ignored targets, every reduction."""
    import ember.distributed.tensor.parallel as tp
    from ember.distributed.tensor import Shard, distribute_tensor
    F = torch.nn.functional
    torch.manual_seed(3)
    logits, weight = torch.randn(6, 10), torch.rand(10)
    target = torch.tensor([1, 9, -100, 4, 5, 0])
    for reduction in ("mean", "sum", "none"):
        x = distribute_tensor(logits, mesh, [Shard(1)]).requires_grad_()
        with tp.loss_parallel():
            loss = F.cross_entropy(x, target, weight=weight, reduction=reduction)
            (loss.to_local() * torch.arange(1.0, 7.0) if reduction == "none" else
             loss.to_local()).sum().backward()
        ref = logits.clone().requires_grad_()
        ref_loss = F.cross_entropy(ref, target, weight=weight, reduction=reduction)
        (ref_loss * torch.arange(1.0, 7.0) if reduction == "none" else ref_loss).sum().backward()
        close(loss.full_tensor(), ref_loss, f"loss_parallel {reduction}")
        assert x.grad.placements == (Shard(1),)
        close(x.grad.full_tensor(), ref.grad, f"loss_parallel grad {reduction}")


def check_colwise_embedding(mesh, rank):
    import ember.distributed.tensor.parallel as tp
    torch.manual_seed(4)
    ref = torch.nn.Embedding(10, 6)
    emb = tp.parallelize_module(copy.deepcopy(ref), mesh, tp.ColwiseParallel())
    idx = torch.tensor([[1, 9, 3], [3, 0, 7]])
    out = emb(idx)
    close(out, ref(idx).chunk(2, -1)[rank], "colwise embedding (this rank's columns)")
    (out * out).sum().backward()
    (ref(idx) ** 2).sum().backward()
    close(emb.weight.grad.full_tensor(), ref.weight.grad, "colwise embedding grad")


def check_join(rank, W):
    """DDP with rank r holding 2 + 2r batches: PyTorch's documented results."""
    import ember.distributed as dist
    from ember.nn.parallel import DistributedDataParallel as DDP
    counts = [2 + 2 * r for r in range(W)]

    def batch(r, i):
        g = torch.Generator().manual_seed(100 * r + i)
        return torch.randn(4, 3, generator=g), torch.randn(4, 2, generator=g)

    def loss_of(model, r, i):
        x, y = batch(r, i)
        return ((model(x) - y) ** 2).mean()

    class WithUnused(torch.nn.Module):
        """A buffer (broadcast every forward) and a parameter no forward uses."""
        def __init__(self):
            super().__init__()
            self.used = torch.nn.Linear(3, 2)
            self.unused = torch.nn.Linear(3, 2)
            self.register_buffer("offset", torch.full((2,), 0.5))

        def forward(self, x):
            return self.used(x) + self.offset

    for divide_by_initial, find_unused in ((True, False), (False, False), (True, True)):
        torch.manual_seed(0)
        ref = WithUnused() if find_unused else torch.nn.Linear(3, 2)
        ddp = DDP(copy.deepcopy(ref), find_unused_parameters=find_unused)
        opt = torch.optim.SGD(ddp.parameters(), lr=0.1)
        with ddp.join(divide_by_initial_world_size=divide_by_initial):
            for i in range(counts[rank]):
                opt.zero_grad()
                loss_of(ddp, rank, i).backward()
                opt.step()
        # the reference: the ranks still running at step i average their gradients over the
        # initial world size (joined ranks add zeros) or over themselves
        opt_ref = torch.optim.SGD(ref.parameters(), lr=0.1)
        for i in range(max(counts)):
            running = [r for r in range(W) if i < counts[r]]
            opt_ref.zero_grad()
            total = sum(loss_of(ref, r, i) for r in running)
            (total / (W if divide_by_initial else len(running))).backward()
            opt_ref.step()
        # every rank ends with the last joiner's model
        for p, q in zip(ddp.module.parameters(), ref.parameters()):
            close(p.detach(), q.detach(), f"join divide_by_initial={divide_by_initial}, "
                                          f"find_unused={find_unused}")
    # throw_on_early_termination: every rank raises once the first runs out
    ddp = DDP(torch.nn.Linear(3, 2))
    try:
        with ddp.join(throw_on_early_termination=True):
            for i in range(counts[rank]):
                loss_of(ddp, rank, i).backward()
    except RuntimeError as e:
        expected = f"Rank {rank} exhausted all inputs." if rank == 0 else \
            "Detected at least one rank that exhausted inputs. Throwing across all ranks."
        assert str(e) == expected, str(e)
    else:
        raise AssertionError("join(throw_on_early_termination=True) did not raise")
    dist.barrier()


def main():
    import ember.distributed as dist
    from ember.distributed.device_mesh import init_device_mesh
    dist.init_process_group("gloo")
    rank, W = dist.get_rank(), dist.get_world_size()
    mesh = init_device_mesh("cpu", (W,), mesh_dim_names=("tp",))
    check_transformer(mesh, rank)
    check_loss_parallel(mesh, rank)
    check_colwise_embedding(mesh, rank)
    check_join(rank, W)
    dist.barrier()
    print(f"PASS {rank}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
