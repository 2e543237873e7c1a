import ember, torch, numpy as np
import ember.func as ef, torch.func as tf
rng=np.random.default_rng(0)
L=np.tril(rng.random((3,3)))+np.eye(3); dL=rng.standard_normal((3,3))
for up in (False,):
    a=ef.jvp(lambda x: ember.cholesky_inverse(x, upper=up), (ember.tensor(L),), (ember.tensor(dL),))[1]
    b=tf.jvp(lambda x: torch.cholesky_inverse(x, upper=up), (torch.tensor(L),), (torch.tensor(dL),))[1]
    eps=1e-6
    fd=(torch.cholesky_inverse(torch.tensor(L+eps*dL))-torch.cholesky_inverse(torch.tensor(L-eps*dL)))/(2*eps)
    print(a); print(b); print(fd)
    print(ember.cholesky_inverse(ember.tensor(L)), torch.cholesky_inverse(torch.tensor(L)))
X=np.linalg.inv(L@L.T)
cands={"mine": -X@(dL@L.T+L@dL.T)@X}
p=-X@dL.T@L@X; cands["dLT L"]=p+p.T
p=-X@L.T@dL@X; cands["LT dL"]=p+p.T
for k,v in cands.items(): print(k, np.allclose(v,b.numpy()))
