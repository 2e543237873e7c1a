"""``ember.backends.python_native``: DSL controllers over ``ember._native``'s override registry.
The shipped DSLs match PyTorch's on this machine; a test DSL shows the switches' effect (the
override runs while enabled and its condition holds, the native kernel otherwise)."""
import numpy as np
import pytest

import ember
import ember.backends.python_native as pn
from ember._native import dsl_registry, registry


def test_shipped_dsls_match_pytorch(torch):
    import torch.backends.python_native as tpn
    assert pn.all_dsls == list(tpn.all_dsls)
    for name in pn.all_dsls:
        assert pn.get_dsl_operations(name) == []
        assert getattr(pn, name).name == name
        assert getattr(pn, name).enabled is True
    # Triton and CuTe DSL need ember's CUDA backend and their packages
    expected = [] if not ember.backends.cuda.is_built() else pn.available_dsls
    assert pn.available_dsls == expected
    with pytest.raises(AttributeError, match="has no attribute 'nosuchdsl'"):
        pn.nosuchdsl


class ToyDSL:
    """A DSL whose one kernel doubles ``aten::neg``'s answer when the input has 4 elements, so
    its effect is visible."""
    calls = 0

    def runtime_available(self):
        return True

    def runtime_version(self):
        return "1.0"

    def register_op_override(self, lib_symbol, op_symbol, dispatch_key, cond, impl, **kw):
        registry.register_op_override("toy", lib_symbol, op_symbol, dispatch_key, cond, impl,
                                      **kw)

    def deregister_op_overrides(self):
        registry.deregister_op_overrides(disable_dsl_names="toy")


@pytest.fixture
def toy():
    dsl = ToyDSL()
    dsl_registry.dsl_registry.register_dsl("toy", dsl)

    def impl(x):
        ToyDSL.calls += 1
        return ember.ops.aten.mul.Scalar(x, -2)

    dsl.register_op_override("aten", "neg", "CPU", lambda x: x.numel() == 4, impl)
    yield dsl
    registry._remove_dsl("toy")
    dsl_registry.dsl_registry._dsl_modules.pop("toy")


def neg4():
    return ember.neg(ember.tensor([1.0, 2.0, 3.0, 4.0])).tolist()


def test_override_runs_when_its_condition_holds(toy):
    assert pn.available_dsls[-1:] == ["toy"] or "toy" in pn.available_dsls
    assert pn.get_dsl_operations("toy") == ["neg"]
    assert neg4() == [-2.0, -4.0, -6.0, -8.0]
    assert ember.neg(ember.tensor([1.0, 2.0])).tolist() == [-1.0, -2.0]  # the native kernel


def test_switches_restore_the_native_kernel(toy):
    native = [-1.0, -2.0, -3.0, -4.0]
    pn.toy.enabled = False
    assert neg4() == native and not pn.toy.enabled and pn.is_dsl_disabled("toy")
    pn.toy.enabled = True
    assert neg4() != native
    with pn.toy.disabled():
        assert neg4() == native
    assert neg4() != native
    with pn.operations_disabled("neg"):
        assert neg4() == native and pn.is_operation_disabled("neg")
    assert neg4() != native
    pn.disable_dispatch_keys("CPU")
    try:
        assert neg4() == native
    finally:
        pn.enable_dispatch_keys("CPU")
    assert neg4() != native


def test_override_is_reached_through_autograd_and_the_registry_rejects_bad_keys(toy):
    x = ember.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
    before = ToyDSL.calls
    y = ember.neg(x)
    assert ToyDSL.calls == before + 1
    y.sum().backward()  # neg's backward formula calls neg on a 4-element gradient: overridden
    assert x.grad.tolist() == [-2.0] * 4 and ToyDSL.calls == before + 2
    with pytest.raises(ValueError, match="dispatch_key='Meta' is not supported"):
        toy.register_op_override("aten", "neg", "Meta", lambda x: True, lambda x: x)
    with pytest.raises(ValueError, match="cond must be provided"):
        toy.register_op_override("aten", "abs", "CPU", None, lambda x: x)
    with pytest.raises(RuntimeError, match="toy already overrides aten::neg at CPU"):
        toy.register_op_override("aten", "neg", "CPU", lambda x: True, lambda x: x)
