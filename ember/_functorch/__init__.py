"""``ember._functorch``: the machinery behind ``ember.func.vmap``.

* :mod:`.interpreter` -- the thread-local stack of transform levels (vmap and grad layers);
* :mod:`.batched_tensor` -- ``BatchedTensor`` (value, batch dim, level) on the FuncTorchBatched key;
* :mod:`.batching` -- the rule registry, rules generated for whole op families, the
  decomposition path and the loop-and-stack fallback;
* :mod:`.rules` -- rules written by hand (matmul family, convolution, losses, normalization...);
* :mod:`.randomness` -- random ops under vmap (FuncTorchVmapMode kernels);
* :mod:`.vmap` -- the user-facing ``vmap`` (in_dims/out_dims pytrees, chunking, errors);
* :mod:`.functional_call` -- ``functional_call`` and ``stack_module_state``.
"""
