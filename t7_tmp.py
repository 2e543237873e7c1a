import ember, ember.func as ef
x=ember.randn(3,dtype=ember.float64); y=ember.randn(2,dtype=ember.float64)
print(ef.jacfwd(lambda x,y: (x*y.sum()), argnums=(0,1))(x,y))
print(ef.jacfwd(lambda x,y: (x*y.sum()).exp(), argnums=(0,1))(x,y))
