"""The chunked path of ``F.linear_cross_entropy``: cross entropy of ``input @ weight.T (+ bias)``
computed ``batch_chunk_size`` rows at a time, so only a (chunk, classes) block of logits ever
exists. For the scalar reductions the gradients are computed in the same pass (the softmax of
a chunk is at hand) and scaled in backward; for ``reduction="none"`` backward recomputes each
chunk. Accumulation runs in ``acc_dtype`` (float32 for half-precision input)."""
import ember  # attributes read at call time: the package is initializing when this loads

from ..autograd.function import Function


def _chunk_terms(x, w_lin, bias, target, class_weight, ignore_index, acc):
    """Per-row loss, the row weights and the chunk's softmax for rows ``x``."""
    logits = ember.matmul(x.to(acc), w_lin.to(acc).t())
    if bias is not None:
        logits = logits + bias.to(acc)
    lse = ember.logsumexp(logits, 1)
    valid = target != ignore_index
    t = ember.where(valid, target, ember.zeros_like(target))
    rows_w = valid.to(acc) if class_weight is None else \
        ember.where(valid, class_weight.to(acc)[t], ember.zeros((), dtype=acc))
    picked = logits.gather(1, t.unsqueeze(1)).squeeze(1)
    loss = (lse - picked) * rows_w
    probs = ember.exp(logits - lse.unsqueeze(1))
    return loss, rows_w, probs, t


def _dlogits(probs, t, rows_w):
    """d loss_row / d logits for each row (softmax minus one-hot, weighted)."""
    probs.scatter_add_(1, t.unsqueeze(1), -ember.ones_like(probs[:, :1]))
    return probs * rows_w.unsqueeze(1)


class ChunkedLinearCrossEntropy(Function):
    """``reduction`` "mean" or "sum": gradients computed in forward, scaled in backward."""

    @staticmethod
    def forward(ctx, input, w_lin, target, bias, class_weight, reduction, ignore_index, chunk,
                acc, allow_retain_graph):
        n = input.shape[0]
        total = ember.zeros((), dtype=acc)
        denom = ember.zeros((), dtype=acc)
        gi = ember.empty(input.shape, dtype=acc) if ctx.needs_input_grad[0] else None
        gw = ember.zeros(w_lin.shape, dtype=acc) if ctx.needs_input_grad[1] else None
        gb = ember.zeros(bias.shape, dtype=acc) if bias is not None and ctx.needs_input_grad[3] \
            else None
        for s in range(0, n, chunk):
            x = input[s:s + chunk]
            loss, rows_w, probs, t = _chunk_terms(x, w_lin, bias, target[s:s + chunk],
                                                  class_weight, ignore_index, acc)
            total = total + loss.sum()
            denom = denom + rows_w.sum()
            d = _dlogits(probs, t, rows_w)
            if gi is not None:
                gi[s:s + chunk] = ember.matmul(d, w_lin.to(acc))
            if gw is not None:
                gw += ember.matmul(d.t(), x.to(acc))
            if gb is not None:
                gb += d.sum(0)
        scale = 1.0 / denom if reduction == "mean" else ember.ones((), dtype=acc)
        ctx.grads = [None if g is None else g * scale for g in (gi, gw, gb)]
        ctx.dtypes = (input.dtype, w_lin.dtype, None if bias is None else bias.dtype)
        ctx.allow_retain_graph = allow_retain_graph
        return (total * scale).to(input.dtype)

    @staticmethod
    def backward(ctx, grad_output):
        grads = ctx.grads
        if any(g is None for g, need in zip(grads, (ctx.needs_input_grad[i] for i in (0, 1, 3)))
               if need):
            raise RuntimeError("linear_cross_entropy chunked backward called twice; "
                               "retain_graph=True / double backward are not supported.")
        if not ctx.allow_retain_graph:
            ctx.grads = [None, None, None]
        gi, gw, gb = (None if g is None else (g * grad_output).to(dt)
                      for g, dt in zip(grads, ctx.dtypes))
        return gi, gw, None, gb, None, None, None, None, None, None


class ChunkedLinearCrossEntropyNoReduction(Function):
    """``reduction="none"``: the per-row losses; backward recomputes each chunk's softmax."""

    @staticmethod
    def forward(ctx, input, w_lin, target, bias, class_weight, ignore_index, chunk, acc):
        parts = []
        for s in range(0, input.shape[0], chunk):
            loss, _, _, _ = _chunk_terms(input[s:s + chunk], w_lin, bias, target[s:s + chunk],
                                         class_weight, ignore_index, acc)
            parts.append(loss)
        ctx.save_for_backward(input, w_lin, target, bias, class_weight)
        ctx.args = (ignore_index, chunk, acc)
        return ember.cat(parts).to(input.dtype)

    @staticmethod
    def backward(ctx, grad_output):
        input, w_lin, target, bias, class_weight = ctx.saved_tensors
        ignore_index, chunk, acc = ctx.args
        gi = ember.empty(input.shape, dtype=acc)
        gw = ember.zeros(w_lin.shape, dtype=acc)
        gb = None if bias is None else ember.zeros(bias.shape, dtype=acc)
        for s in range(0, input.shape[0], chunk):
            x = input[s:s + chunk]
            _, rows_w, probs, t = _chunk_terms(x, w_lin, bias, target[s:s + chunk],
                                               class_weight, ignore_index, acc)
            d = _dlogits(probs, t, rows_w * grad_output[s:s + chunk].to(acc))
            gi[s:s + chunk] = ember.matmul(d, w_lin.to(acc))
            gw += ember.matmul(d.t(), x.to(acc))
            if gb is not None:
                gb += d.sum(0)
        return (gi.to(input.dtype), gw.to(w_lin.dtype), None,
                None if gb is None else gb.to(bias.dtype), None, None, None, None)
