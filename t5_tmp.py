import ember, numpy as np
import ember.func as ef
from ember.autograd import forward_ad as fw
x = ember.tensor(np.random.randn(3)); o = ember.ones(3, dtype=ember.float64)
def f(y):
    def inner(c):
        leaf = y.detach().requires_grad_(True)
        fw.set_tangent(leaf, 0, fw.get_tangent(y,0))
        out = leaf.sin()
        g, = ember.autograd.grad(out, leaf, ef._align_to(c, out) if False else c, create_graph=True)
        from ember._functorch.batched_tensor import physical
        print("g phys tangent", fw.get_tangent(physical(g), 0) is not None, type(g))
        return g
    return ef.vmap(inner)(ember.eye(3, dtype=ember.float64))
print(ef.jvp(f, (x,), (o,))[1])
