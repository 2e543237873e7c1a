"""``torch.distributed.elastic``: the part of TorchElastic ember has — the error propagation
between the launcher (``python -m ember.distributed.run``) and its ranks
(``multiprocessing.errors``). Elastic agents, rendezvous and restarts across a changing set of
nodes are not built: ember's launcher runs a fixed set of ranks."""
