"""``ember.backends.cudnn.rnn``: cuDNN's RNN helpers. Without cuDNN there is no RNN mode to
map to; ``Unserializable`` is kept for old checkpoints that pickled it."""


def get_cudnn_mode(mode):
    if mode not in ("RNN_RELU", "RNN_TANH", "LSTM", "GRU"):
        raise ValueError(f"Unknown mode: {mode}")
    raise RuntimeError("cuDNN is not available: ember does not link cuDNN")


class Unserializable:
    def __init__(self, inner):
        self.inner = inner

    def get(self):
        return self.inner

    def __getstate__(self):
        return "<unserializable>"

    def __setstate__(self, state):
        self.inner = None
