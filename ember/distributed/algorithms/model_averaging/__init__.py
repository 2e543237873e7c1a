"""``ember.distributed.algorithms.model_averaging``: PyTorch's model averaging for local SGD —
averaging parameters over the ranks periodically (``averagers.PeriodicModelAverager``) or at
several periods over groups of several sizes (``hierarchical_model_averager``); the averaging
itself is ``utils.average_parameters``."""
