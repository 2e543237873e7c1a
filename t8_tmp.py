import ember, ember.autograd.forward_ad as fw
x=ember.randn(4,3,dtype=ember.float64); t=ember.randn(4,3,dtype=ember.float64)
with fw.dual_level():
    d=fw.make_dual(x.clone(),t)
    s=d[1:]
    print(fw.get_tangent(s,0)._base_ is t, fw.get_tangent(s,0)._base_ is None)
    v=s.t()
    v.mul_(2)
    print(fw.unpack_dual(d).tangent is t)
    print(t)
with fw.dual_level():
    d=fw.make_dual(x.clone(),t.clone())
    v=d[1:]
    print(fw.get_tangent(v,0))
    v.mul_(2)
    print(fw.get_tangent(v,0))
