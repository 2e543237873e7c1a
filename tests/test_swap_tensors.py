"""``ember.utils.swap_tensors`` and ``ember.__future__``'s module-conversion switches, against
PyTorch: what a swap exchanges, when it is refused, the poisoned gradient accumulator, and
``nn.Module._apply`` / ``load_state_dict`` swapping parameters (always for wrapper subclasses
such as DTensor) or assigning new ones."""
import weakref

import numpy as np
import pytest

import ember


@pytest.fixture(params=["ember", "torch"])
def lib(request, torch):
    lib = ember if request.param == "ember" else torch
    yield lib
    lib.__future__.set_swap_module_params_on_conversion(False)
    lib.__future__.set_overwrite_module_params_on_conversion(False)


def test_swap_exchanges_contents_class_and_attributes(lib):
    a = lib.nn.Parameter(lib.ones(2))
    b = lib.zeros(3, dtype=lib.float64)
    a.tag, b.other = "a", "b"
    lib.utils.swap_tensors(a, b)
    assert type(a) is lib.Tensor and type(b) is lib.nn.Parameter
    assert a.tolist() == [0.0, 0.0, 0.0] and a.dtype == lib.float64 and not a.requires_grad
    assert b.tolist() == [1.0, 1.0] and b.requires_grad
    assert a.other == "b" and b.tag == "a" and not hasattr(a, "tag")


def test_swap_refusals_and_poisoned_accumulator(lib):
    a, b = lib.ones(2), lib.zeros(2)
    ref = weakref.ref(a)
    with pytest.raises(RuntimeError, match="Cannot swap t1 because it has weakref"):
        lib.utils.swap_tensors(a, b)
    with pytest.raises(RuntimeError, match="Cannot swap t2 because it has weakref"):
        lib.utils.swap_tensors(b, a)
    del ref
    q = lib.nn.Parameter(lib.ones(2))
    out = (q * 2).sum()  # the forward made q's gradient accumulator
    lib.utils.swap_tensors(q, lib.nn.Parameter(lib.zeros(2)))
    with pytest.raises(RuntimeError, match="poisoned by swap_tensors"):
        out.backward()


def _linear(lib):
    m = lib.nn.Linear(3, 2)
    with lib.no_grad():
        m.weight.copy_(lib.tensor(np.arange(6.0).reshape(2, 3)))
        m.bias.zero_()
    m(lib.ones(1, 3)).sum().backward()
    return m


@pytest.mark.parametrize("mode", ["set_data", "swap", "overwrite"])
def test_module_conversion_modes(lib, mode):
    m = _linear(lib)
    w, g = m.weight, m.weight.grad
    lib.__future__.set_swap_module_params_on_conversion(mode == "swap")
    lib.__future__.set_overwrite_module_params_on_conversion(mode == "overwrite")
    m.double()
    assert m.weight.dtype == lib.float64 and m.weight.grad.dtype == lib.float64
    assert (m.weight is w) == (mode != "overwrite")
    assert (m.weight.grad is g) == (mode != "overwrite")
    assert type(m.weight) is lib.nn.Parameter and m.weight.requires_grad
    np.testing.assert_array_equal(m.weight.detach().numpy(), np.arange(6.0).reshape(2, 3))


def test_load_state_dict_swaps_when_asked(lib):
    m = _linear(lib)
    w = m.weight
    lib.__future__.set_swap_module_params_on_conversion(True)
    state = {"weight": lib.full((2, 3), 2.0, dtype=lib.float64), "bias": lib.ones(2)}
    m.load_state_dict(state)  # module_load copies into the old values: float32 kept
    assert m.weight is w and m.weight.dtype == lib.float32 and m.weight.tolist()[0] == [2.0] * 3
    m.load_state_dict(state, assign=True)  # assign: the state's tensors swapped in
    assert m.weight is w and m.weight.dtype == lib.float64 and m.weight.requires_grad


def test_dtensor_parameters_are_swapped(world):
    from ember.distributed.device_mesh import init_device_mesh
    from ember.distributed.tensor import DTensor, distribute_module
    m = distribute_module(ember.nn.Linear(3, 2), init_device_mesh("cpu", (1,)))
    w = m.weight
    m.double()  # a wrapper subclass is swapped whatever the switches say (as PyTorch)
    assert m.weight is w and isinstance(w, DTensor)
    assert w.dtype == ember.float64 and w.to_local().dtype == ember.float64
