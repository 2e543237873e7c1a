"""PyTorch Geometric on ember through ``ember.as_torch``: message-passing layers (GCN, GAT,
GATv2, GraphSAGE, GIN) on edge lists and torch.sparse adjacencies (COO, CSR, CSC), global pooling,
``torch_geometric.utils``, Data/Batch/DataLoader batching and a GCN training loop computing
PyTorch's numbers. pyg-lib, torch-scatter and torch-sparse are not installed, so PyG's
pure-PyTorch fallbacks run. Each case of tests/_pyg_models.py runs in PyTorch here and in ember
in one ``python -m ember.as_torch`` subprocess with PyTorch's weights."""
import numpy as np
import pytest

from helpers import results_beside_pytorch

# PyTorch's own warnings about its sparse layouts (beta CSR, invariant checks), PyG's advice to
# convert a COO adjacency to CSR
pytestmark = [pytest.mark.filterwarnings("ignore::UserWarning")]

NAMES = ["gcn", "gat", "gatv2", "sage", "gin", "pooling", "utils", "batching", "gcn_training",
         "csc"]


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    """Every case of tests/_pyg_models.py: name -> (PyTorch's result, ember's)."""
    torch = pytest.importorskip("torch")
    pytest.importorskip("torch_geometric")
    import _pyg_models
    directory = tmp_path_factory.mktemp("pyg")
    theirs = {}
    for name in NAMES:
        state, theirs[name] = _pyg_models.run(torch, name)
        np.savez(directory / f"{name}_weights.npz", **state)
    return results_beside_pytorch("_pyg_models.py", directory, theirs)


@pytest.mark.parametrize("name", NAMES)
def test_pyg_matches_pytorch(results, name):
    """Outputs, index tensors, and every gradient (inputs, edge weights and features, each
    parameter; for training, the parameters after five Adam steps) equal PyTorch's."""
    theirs, mine = results[name]
    assert sorted(mine) == sorted(theirs)
    for key, ref in theirs.items():
        assert mine[key].dtype == ref.dtype and mine[key].shape == ref.shape, key
        if ref.dtype.kind in "biu":
            np.testing.assert_array_equal(mine[key], ref, err_msg=key)
        else:
            scale = float(np.abs(ref).max(initial=0.0))
            np.testing.assert_allclose(mine[key], ref, rtol=2e-4, atol=1e-6 * max(scale, 1.0),
                                       err_msg=key)
