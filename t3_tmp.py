import ember, numpy as np
import ember.func as ef
g_e = lambda x: (x.sin() * x).sum()
x = ember.tensor(np.random.randn(3))
# jacrev inside a vmap with a batched primal
print(ef.vmap(ef.jacrev(g_e))(ember.stack([x, x])))
print(ef.jacrev(g_e)(x))
# jvp of jacrev
print(ef.jvp(ef.jacrev(g_e), (x,), (ember.ones(3, dtype=ember.float64),)))
