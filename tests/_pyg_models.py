"""PyTorch Geometric layers, utilities, batching and a training loop run the same way in
PyTorch and in ember (through ``ember.as_torch``): tests/test_pyg.py runs each case in PyTorch
in its own process, and ``python -m ember.as_torch tests/_pyg_models.py DIR NAMES`` runs them
in ember with PyTorch's weights (DIR/NAME_weights.npz), writing what each computed to
DIR/NAME_ember.npz.

Graphs are built from fixed NumPy arrays (no datasets are downloaded). pyg-lib, torch-scatter
and torch-sparse are not installed, so PyG's pure-PyTorch fallbacks (``scatter_reduce``,
``index_add``, ``index_select``, ``torch.sparse``) are what run."""
import os
import sys

import numpy as np

N, F_IN = 10, 8


def _graph(rs, n=N, e=30):
    """A random directed graph without self loops (``add_self_loops`` then adds each once)."""
    src = rs.randint(0, n, e)
    dst = (src + 1 + rs.randint(0, n - 1, e)) % n
    return np.stack([src, dst]).astype(np.int64)


def _x(rs, *shape):
    return rs.randn(*shape).astype(np.float32)


# name -> what the case builds
MODELS = {
    # symmetric normalisation with self loops and edge weights; cached=False, bias
    "gcn": lambda nn: nn.GCNConv(F_IN, 16),
    # two heads, attention softmax over each node's incoming edges, edge features
    "gat": lambda nn: nn.GATConv(F_IN, 4, heads=2, edge_dim=3),
    # GATv2 with concat=False (heads averaged) and returned attention weights
    "gatv2": lambda nn: nn.GATv2Conv(F_IN, 4, heads=2, concat=False),
    # mean and max neighbour aggregation, root weight, normalize
    "sage": lambda nn: _module_dict({"mean": nn.SAGEConv(F_IN, 16),
                                      "max": nn.SAGEConv(F_IN, 16, aggr="max",
                                                         normalize=True)}),
    # an MLP on (1 + eps) x + sum of neighbours, trainable eps
    "gin": lambda nn: nn.GINConv(_mlp(), train_eps=True),
    # global add/mean/max pooling of node features by a batch vector
    "pooling": None,
    # torch_geometric.utils on their own
    "utils": None,
    # Data -> DataLoader (Batch.from_data_list) -> GCNConv + global_mean_pool
    "batching": lambda nn: nn.GCNConv(3, 4),
    # a 2-layer GCN node classifier: five Adam steps of cross entropy on a train mask
    "gcn_training": lambda nn: _TwoLayerGCN(),
    # CSC adjacencies (to_torch_csc_tensor, EdgeIndex.to_sparse_csc) and a GCN on the CSR
    # transpose of one
    "csc": lambda nn: nn.GCNConv(F_IN, 8),
}


def _module_dict(modules):
    import torch
    return torch.nn.ModuleDict(modules)


def _mlp():
    import torch
    return torch.nn.Sequential(torch.nn.Linear(F_IN, 16), torch.nn.ReLU(),
                               torch.nn.Linear(16, 16))


def _two_layer_gcn_class():
    import torch
    import torch.nn.functional as F
    from torch_geometric.nn import GCNConv

    class TwoLayerGCN(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = GCNConv(F_IN, 16)
            self.conv2 = GCNConv(16, 3)

        def forward(self, x, edge_index):
            x = F.relu(self.conv1(x, edge_index))
            x = F.dropout(x, p=0.5, training=False)
            return self.conv2(x, edge_index)
    return TwoLayerGCN


def _TwoLayerGCN():
    return _two_layer_gcn_class()()


def build(torch, name, weights=None):
    """The module of ``name``: PyG's initialisation (seed 0) with every parameter moved off its
    initial value (zero biases would leave some gradients trivially equal), or ``weights``."""
    import torch_geometric.nn as nn
    if MODELS[name] is None:
        return None
    torch.manual_seed(0)
    model = MODELS[name](nn)
    if weights is None:
        with torch.no_grad():
            for p in model.parameters():
                p.add_(torch.randn(p.shape) * 0.1)
    else:
        model.load_state_dict({k: torch.from_numpy(v.copy()) for k, v in weights.items()})
    return model


def _grads(model, prefix="grad."):
    return {prefix + k: p.grad.numpy() for k, p in model.named_parameters()
            if p.grad is not None}


def _loss(outs, rs, torch):
    """A scalar that reaches every element of every output with its own weight."""
    return sum((o * torch.from_numpy(_x(rs, *o.shape))).sum() for o in outs)


def run(torch, name, weights=None):
    """Run case ``name`` (with ``weights``, a dict of arrays, if given); return the state dict
    (as arrays) and what was computed."""
    import torch_geometric.utils as U
    model = build(torch, name, weights)
    state = {} if model is None else {
        k: v.detach().numpy().copy() for k, v in model.state_dict().items()}
    rs = np.random.RandomState(0)
    ei = torch.from_numpy(_graph(rs))
    x = torch.from_numpy(_x(rs, N, F_IN)).requires_grad_()
    result = {}
    if name == "gcn":
        w = torch.from_numpy(rs.rand(ei.shape[1]).astype(np.float32)).requires_grad_()
        # a torch.sparse adjacency (transposed, PyG's adj_t) takes the spmm path
        adj_t = U.to_torch_coo_tensor(ei, size=N).t()
        csr_t = U.to_torch_csr_tensor(ei.flip(0), size=N)
        outs = [model(x, ei), model(x, ei, w), model(x, adj_t), model(x, csr_t)]
        _loss(outs, rs, torch).backward()
        result["grad_edge_weight"] = w.grad.numpy()
    elif name == "gat":
        ea = torch.from_numpy(_x(rs, ei.shape[1], 3)).requires_grad_()
        out, (ei_sl, alpha) = model(x, ei, ea, return_attention_weights=True)
        _loss([out, alpha], rs, torch).backward()
        result.update(edge_index=ei_sl.numpy(), alpha=alpha.detach().numpy(),
                      grad_edge_attr=ea.grad.numpy())
        outs = [out]
    elif name == "gatv2":
        out, (ei_sl, alpha) = model(x, ei, return_attention_weights=True)
        _loss([out, alpha], rs, torch).backward()
        result.update(alpha=alpha.detach().numpy())
        outs = [out]
    elif name == "sage":
        outs = [model["mean"](x, ei), model["max"](x, ei),
                model["mean"](x, U.to_torch_csr_tensor(ei.flip(0), size=N))]
        _loss(outs, rs, torch).backward()
    elif name == "gin":
        outs = [model(x, ei)]
        _loss(outs, rs, torch).backward()
    elif name == "pooling":
        from torch_geometric.nn import global_add_pool, global_max_pool, global_mean_pool
        batch = torch.tensor([0, 0, 0, 1, 1, 2, 2, 2, 2, 2])
        outs = [global_add_pool(x, batch), global_mean_pool(x, batch),
                global_max_pool(x, batch), global_mean_pool(x, None),
                global_max_pool(x, batch, size=4)[:3]]
        _loss(outs, rs, torch).backward()
    elif name == "utils":
        w = torch.from_numpy(rs.rand(ei.shape[1]).astype(np.float32)).requires_grad_()
        src = torch.from_numpy(_x(rs, ei.shape[1], 2)).requires_grad_()
        index = ei[1]
        ei_sl, w_sl = U.add_self_loops(ei, w, fill_value=2.0, num_nodes=N)
        result.update(add_self_loops=ei_sl.numpy(),
                      remove_self_loops=U.remove_self_loops(ei_sl)[0].numpy(),
                      degree=U.degree(index, N).numpy(),
                      to_undirected=U.to_undirected(ei).numpy(),
                      dropout_edge=U.dropout_edge(ei, p=0.0)[0].numpy(),
                      dropout_edge_mask=U.dropout_edge(ei, p=0.0)[1].numpy(),
                      sort_edge_index=U.sort_edge_index(ei).numpy(),
                      is_undirected=np.array(U.is_undirected(U.to_undirected(ei))),
                      contains_self_loops=np.array(U.contains_self_loops(ei_sl)))
        outs = [w_sl, U.softmax(src, index, num_nodes=N),
                U.to_dense_adj(ei, edge_attr=w, max_num_nodes=N),
                U.to_dense_adj(ei, batch=torch.tensor([0] * 5 + [1] * 5))]
        for reduce in ("sum", "mean", "max", "min", "mul"):
            outs.append(U.scatter(src, index, dim=0, dim_size=N, reduce=reduce))
        dense, mask = U.to_dense_batch(x, torch.tensor([0] * 4 + [1] * 6))
        outs += [dense, mask.float()]
        adj = torch.sparse_coo_tensor(ei_sl, w_sl, (N, N)).coalesce()
        result["to_edge_index"] = U.to_edge_index(adj)[0].numpy()
        _loss(outs[:-1], rs, torch).backward()
        result.update(grad_edge_weight=w.grad.numpy(), grad_src=src.grad.numpy())
    elif name == "batching":
        from torch_geometric.data import Batch, Data
        from torch_geometric.loader import DataLoader
        from torch_geometric.nn import global_mean_pool
        graphs = []
        for i, n in enumerate((4, 6, 5)):
            graphs.append(Data(x=torch.from_numpy(_x(rs, n, 3)),
                               edge_index=torch.from_numpy(_graph(rs, n, 2 * n)),
                               y=torch.tensor([i])))
        batch = Batch.from_data_list(graphs)
        result.update(num_graphs=np.array(batch.num_graphs), ptr=batch.ptr.numpy(),
                      batch=batch.batch.numpy(), batch_edge_index=batch.edge_index.numpy(),
                      second_x=batch.get_example(1).x.numpy(),
                      second_edge_index=batch.to_data_list()[1].edge_index.numpy())
        outs = []
        for i, b in enumerate(DataLoader(graphs, batch_size=2, shuffle=False)):
            result[f"loader{i}.ptr"] = b.ptr.numpy()
            result[f"loader{i}.y"] = b.y.numpy()
            outs.append(global_mean_pool(model(b.x, b.edge_index), b.batch))
        _loss(outs, rs, torch).backward()
    elif name == "csc":
        # CSC adjacencies: utils.to_torch_csc_tensor (the values' gradient through the
        # constructor) and EdgeIndex.to_sparse_csc, products with the features, and a GCN
        # layer run on an unweighted CSC adjacency's transpose (a CSR matrix)
        from torch_geometric import EdgeIndex
        w = torch.from_numpy(rs.rand(ei.shape[1]).astype(np.float32)).requires_grad_()
        csc = U.to_torch_csc_tensor(ei, w, size=N)
        # (an EdgeIndex's CSC form keeps repeated edges, and its rows need not be sorted within
        # a column, where PyTorch's gradient of to_dense is wrong: no gradient through it)
        ei_c, w_c = U.coalesce(ei, w.detach(), N)
        csc2 = EdgeIndex(ei_c, sparse_size=(N, N), sort_order="row").to_sparse_csc(w_c)
        result.update(ccol_indices=csc.ccol_indices().numpy(),
                      row_indices=csc.row_indices().numpy(),
                      edge_index_ccol=csc2.ccol_indices().numpy(),
                      edge_index_row=csc2.row_indices().numpy(),
                      is_csc=np.array(csc.layout == torch.sparse_csc and
                                      csc2.layout == torch.sparse_csc),
                      is_sparse_csr=np.array(csc.is_sparse_csr))
        outs = [csc.values(), csc.to_dense(), csc2.to_dense(), csc @ x, csc.t() @ x,
                csc.to_sparse_csr().to_dense(), model(x, U.to_torch_csc_tensor(ei, size=N).t())]
        # one backward per output: PyTorch cannot sum a CSC gradient with a dense one
        for o in outs:
            loss = _loss([o], rs, torch)
            if loss.requires_grad:
                loss.backward(retain_graph=True)
        result["grad_edge_weight"] = w.grad.numpy()
    elif name == "gcn_training":
        import torch.nn.functional as F
        y = torch.from_numpy(rs.randint(0, 3, N))
        train = torch.from_numpy(rs.rand(N) < 0.7)
        x = x.detach()
        ei = U.to_undirected(ei)
        optimizer = torch.optim.Adam(model.parameters(), lr=0.01, weight_decay=5e-4)
        losses = []
        for step in range(5):
            model.train()
            optimizer.zero_grad()
            out = model(x, ei)
            loss = F.cross_entropy(out[train], y[train])
            loss.backward()
            if step == 0:
                result.update(_grads(model))
            optimizer.step()
            losses.append(loss.item())
        model.eval()
        with torch.no_grad():
            pred = model(x, ei).argmax(dim=1)
        result.update(losses=np.array(losses), pred=pred.numpy(),
                      accuracy=np.array(float((pred[train] == y[train]).float().mean())))
        result.update({"param." + k: p.detach().numpy() for k, p in model.named_parameters()})
        return state, result
    for i, o in enumerate(outs):
        result[f"out{i}"] = o.detach().numpy()
    if x.grad is not None:
        result["grad_x"] = x.grad.numpy()
    if model is not None:
        result.update(_grads(model))
    return state, result


if __name__ == "__main__":  # the ember side, under python -m ember.as_torch
    import torch
    directory, names = sys.argv[1], sys.argv[2].split(",")
    assert torch is sys.modules["ember"], torch
    for name in names:
        weights = dict(np.load(os.path.join(directory, f"{name}_weights.npz")))
        _, result = run(torch, name, weights)
        np.savez(os.path.join(directory, f"{name}_ember.npz"), **result)
