import ember
x=ember.randn(3,dtype=ember.float64); y=ember.randn(2,dtype=ember.float64)
f=lambda x,y: ((x * y.sum()).exp(), (x.sin() * 2).sum())
print(ember.autograd.functional.jacobian(f,(x,y),vectorize=True,strategy="forward-mode"))
