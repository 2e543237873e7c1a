import ember, numpy as np
import ember.func as ef
g_e = lambda x: (x.sin() * x)
x = ember.tensor(np.random.randn(3)); o = ember.ones(3, dtype=ember.float64)
print(ef.jvp(lambda y: ef.vjp(g_e, y)[1](o)[0], (x,), (o,))[1])
print(ef.jvp(lambda y: ef.vjp(g_e, y)[1](ember.eye(3,dtype=ember.float64)[0])[0], (x,), (o,))[1])
print(ef.jvp(lambda y: ef.vmap(ef.vjp(g_e, y)[1])(ember.eye(3,dtype=ember.float64))[0], (x,), (o,))[1])
print(ef.jvp(lambda y: ef.vmap(lambda a: a*y)(ember.eye(3,dtype=ember.float64)), (x,), (o,))[1])
