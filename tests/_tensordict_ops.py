"""tensordict (PyTorch's library of tensor dictionaries, which TorchRL is built on) runs the same
way in PyTorch and in ember (through ``ember.as_torch``): tests/test_tensordict.py runs
``python tests/_tensordict_ops.py torch DIR NAMES`` and ``python -m ember.as_torch
tests/_tensordict_ops.py ember DIR NAMES`` side by side, each writing what every case computed
to DIR/NAME_<library>.npz (in subprocesses both: importing tensordict replaces steps of the
``torch._functorch.vmap`` it imports).

tensordict reaches into PyTorch's internals: ``torch._C._functorch``, the vmap steps it replaces
in ``torch._functorch.vmap``, ``torch.nn.utils._named_member_accessor``, the DataLoader's
``default_collate_fn_map`` and NumPy seeding, the quantized dtypes, ``functorch``."""
import os
import sys

import numpy as np

CASES = {
    # TensorDict construction, nested keys, apply, stack/cat/reshape/unbind, indexing, dtype
    # casts, clone, TensorDictSequential of TensorDictModules
    "basics": "tensordict.TensorDict, tensordict.nn",
    # a module's parameters as a TensorDict, stacked for an ensemble, vmapped through
    # to_module; torch.func.grad with a TensorDict of parameters
    "ensemble": "TensorDict.from_module, to_module under vmap and grad",
    # @tensorclass indexing and cat, vmap over a TensorDict, DataLoader batches of TensorDicts
    "tensorclass": "tensordict.tensorclass, vmap and DataLoader over TensorDicts",
}


def run(torch, name):
    from tensordict import TensorDict, tensorclass
    from tensordict.nn import TensorDictModule, TensorDictSequential
    torch.manual_seed(0)
    rs = np.random.RandomState(0)
    result = {}
    if name == "basics":
        td = TensorDict({"obs": torch.tensor(rs.randn(4, 3).astype(np.float32)),
                         "next": {"r": torch.arange(4.).reshape(4, 1)}}, batch_size=[4])
        seq = TensorDictSequential(
            TensorDictModule(torch.nn.Linear(3, 5), in_keys=["obs"], out_keys=["h"]),
            TensorDictModule(torch.nn.Tanh(), in_keys=["h"], out_keys=["a"]))
        out = seq(td.clone())
        result["a"] = out["a"].detach().numpy()
        result["keys"] = np.array(sorted("/".join(k) if isinstance(k, tuple) else k
                                         for k in out.keys(True, True)))
        stacked = torch.stack([td, td.apply(lambda x: x * 2)], 0)
        result["stacked_obs"] = stacked[1, 2]["obs"].numpy()
        result["batch"] = np.array(list(stacked.batch_size) + list(torch.cat([td, td]).batch_size))
        result["reshaped"] = td.reshape(2, 2)["next", "r"].numpy()
        result["unbind"] = td.unbind(0)[3]["obs"].numpy()
        result["dtype"] = np.array(str(td.to(torch.float64)["obs"].dtype))
        td2 = td.clone()
        td2["obs"] += 1
        result["clone_diff"] = (td2["obs"] - td["obs"]).numpy()
        result["masked"] = td[td["next", "r"].squeeze(-1) > 1]["obs"].numpy()
    elif name == "ensemble":
        net = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU(), torch.nn.Linear(4, 2))
        params = TensorDict.from_module(net)
        result["param_keys"] = np.array(sorted(".".join(k) for k in
                                               params.keys(True, True)))
        stacked = torch.stack([params.apply(lambda p, i=i: p.detach() * (i + 1))
                               for i in range(3)])
        x = torch.tensor(rs.randn(5, 3).astype(np.float32))

        def call(p, x):
            with p.to_module(net):
                return net(x)
        result["ensemble"] = torch.vmap(call, (0, None))(stacked, x).numpy()
        grads = torch.func.grad(lambda p: call(p, x).pow(2).sum())(params)
        for k in ("0", "2"):
            result[f"grad{k}"] = grads[k, "weight"].detach().numpy()
        result["restored"] = net(x).detach().numpy()  # (to_module put the weights back)
    elif name == "tensorclass":
        @tensorclass
        class Points:
            x: torch.Tensor
            y: torch.Tensor
        pts = Points(x=torch.tensor(rs.randn(4, 2).astype(np.float32)), y=torch.arange(4.),
                     batch_size=[4])
        result["slice"] = pts[1:3].x.numpy()
        result["cat"] = torch.cat([pts, pts]).y.numpy()
        td = TensorDict({"a": torch.arange(6.).reshape(3, 2), "b": torch.ones(3)},
                        batch_size=[3])
        result["vmap"] = torch.vmap(lambda t: t["a"].sum() + t["b"])(td).numpy()
        loader = torch.utils.data.DataLoader(
            [TensorDict({"v": torch.tensor([float(i)])}, []) for i in range(6)], batch_size=3,
            collate_fn=torch.stack)
        result["loader"] = np.array([b["v"].sum().item() for b in loader])
    return result


if __name__ == "__main__":  # each side, as helpers.pytorch_beside_ember runs it
    library, directory, names = sys.argv[1], sys.argv[2], sys.argv[3].split(",")
    import torch
    assert (sys.modules.get("ember") is torch) == (library == "ember"), library
    for name in names:
        np.savez(os.path.join(directory, f"{name}_{library}.npz"), **run(torch, name))
