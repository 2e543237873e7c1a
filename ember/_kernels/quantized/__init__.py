"""Kernels of quantized tensors (PyTorch's QuantizedCPU key; ATen's ``native/quantized/``):
making them from float tensors (``affine.py``: ATen's and FBGEMM's rounding, bit for bit),
reading them back, and the copies, views and comparisons programs use on them
(``tensor.py``); the static quantized Linear's and convolutions' (plain and transposed)
``quantized::`` operators (``linear.py``, ``conv.py``, their prepacked weights' common part in
``packed.py``), the pooling and means a converted CNN runs (``pool.py``), the activations
(``activation.py``: ReLU, the clamps, leaky_relu, hardsigmoid and the ``quantized::``
hardswish, elu, celu and threshold) and upsampling (``upsample.py``); and fake
quantization, float tensors rounded as quantized ones would hold
them, for quantization-aware training (``fake_quant.py``, on the CPU key). A quantized tensor's
storage holds its integers; the views here run the dense view ops on an integer alias of that
storage and wrap the result with the quantizer PyTorch gives it, so the shape rules stay those
of the dense ops. Ops with no kernel here raise PyTorch's "Could not run ... 'QuantizedCPU'
backend"."""
