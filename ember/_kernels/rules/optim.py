"""Rules of the fused optimizer ops (``_fused_adam_``, ``_fused_adamw_``), for every backend: the
list-length and shape checks of PyTorch's ``FusedAdamKernel``."""


def check_fused_adam_lists(params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps,
                           amsgrad):
    n = len(params)
    for name, lst in (("grads", grads), ("exp_avgs", exp_avgs), ("exp_avg_sqs", exp_avg_sqs),
                      ("state_steps", state_steps)):
        if len(lst) != n:
            raise RuntimeError(f"Expected {name}.size() == n_tensors to be true, but got false. "
                               f"({len(lst)} {name} for {n} params)")
    if len(max_exp_avg_sqs) != (n if amsgrad else 0):
        raise RuntimeError(f"Expected max_exp_avg_sqs.size() == {'n_tensors' if amsgrad else 0} "
                           f"to be true, but got false. ({len(max_exp_avg_sqs)} for {n} params, "
                           f"amsgrad={amsgrad})")
    for i, p in enumerate(params):
        for name, lst in (("grad", grads), ("exp_avg", exp_avgs), ("exp_avg_sq", exp_avg_sqs)):
            if lst[i]._size != p._size:
                raise RuntimeError(f"_fused_adam_: {name} {i} has shape {list(lst[i]._size)}, "
                                   f"its param {list(p._size)}")
        if not p._dtype.is_floating_point:
            raise RuntimeError(f"_fused_adam_: params must be floating point, got "
                               f"{p._dtype._short} at {i}")
