"""A tour of ember's foundation: strided tensors over byte storages and the dispatcher.

    python examples/demo.py
"""
import io

import ember as torch  # a PyTorch program runs on ember by changing this import

print("== strides and views (seed 002, section 3.2) ==")
a = torch.arange(24, dtype=torch.float32).view(2, 3, 4)
print(a.stride())
b = a.transpose(0, 2)
print(b.shape, b.stride(), b.is_contiguous(), b.data_ptr() == a.data_ptr())
c = a.narrow(1, 1, 2)
print(c.shape, c.stride(), c.storage_offset())
d = a.unsqueeze(0)
print(d.shape, d.stride())

print("\n== exercise 1: stride sleuthing ==")
e = torch.arange(60).view(3, 4, 5).permute(2, 0, 1)
print(e.shape, e.stride(), e.storage_offset(), e.is_contiguous())

print("\n== in-place through a view changes the base, and shares the version counter ==")
x = torch.zeros(4)
y = x[:2]
y.add_(1)
print(x, x._version, y._version, y._base is x)

print("\n== the dispatcher ==")
t = torch.ones(3, 3)
print(t._dispatch_key_set())
print(torch.ops.aten.addmm.default._schema)
print(torch._C._dispatch_dump_table("aten::addmm").splitlines()[0])
trace = io.StringIO()
torch._C._set_dispatch_trace(True, trace)
t.add_(t)
torch._C._set_dispatch_trace(False)
print(trace.getvalue(), end="")

print("\n== meta tensors carry shapes and dtypes, no data ==")
m = torch.empty(1024, 1024, device="meta")
print(m @ m)
print((m.sum(0) + 1).shape)
