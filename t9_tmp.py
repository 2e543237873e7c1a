import ember, ember.autograd.forward_ad as fw, torch, torch.autograd.forward_ad as tfw
import numpy as np
x=np.random.rand(4)+0.5; t=np.ones(4)
with fw.dual_level():
    d=fw.make_dual(ember.tensor(x),ember.tensor(t)); d.polygamma_(0); print(fw.unpack_dual(d).tangent)
with tfw.dual_level():
    d=tfw.make_dual(torch.tensor(x),torch.tensor(t)); d.polygamma_(0); print(tfw.unpack_dual(d).tangent)
print(torch.polygamma(1, torch.tensor(x)))
