"""ember.accelerator as PyTorch 2.13 defines it, on a machine where ember has no accelerator
(no CUDA kernels, no PrivateUse1 device module); and the top-of-script lines of nanoGPT and
pytorch/examples, written as those programs write them, running on ember."""
import pytest

import ember

torch = pytest.importorskip("torch")

NEEDS_DEVICE = ["current_device_index", "synchronize", "current_stream", "memory_allocated",
                "max_memory_allocated", "memory_reserved", "max_memory_reserved",
                "memory_stats", "empty_cache", "reset_peak_memory_stats", "get_memory_info",
                "reset_accumulated_memory_stats"]


def test_all_matches_torch_where_implemented():
    assert set(ember.accelerator.__all__) == set(torch.accelerator.__all__) - {"Graph"}


def test_no_accelerator_answers():
    acc = ember.accelerator
    assert acc.is_available() is torch.accelerator.is_available() is False
    assert acc.current_accelerator() is torch.accelerator.current_accelerator() is None
    assert acc.current_accelerator(check_available=True) is None
    assert acc.device_count() == torch.accelerator.device_count() == 0


@pytest.mark.parametrize("name", NEEDS_DEVICE)
def test_functions_needing_a_device_raise_like_torch(name):
    with pytest.raises(RuntimeError) as theirs:
        getattr(torch.accelerator, name)()
    with pytest.raises(RuntimeError) as mine:
        getattr(ember.accelerator, name)()
    assert str(mine.value) == str(theirs.value)


def test_set_device_index_and_context_raise_like_torch():
    for fn in (lambda m: m.accelerator.set_device_index(0),
               lambda m: m.accelerator.device_index(0).__enter__()):
        with pytest.raises(RuntimeError) as theirs:
            fn(torch)
        with pytest.raises(RuntimeError) as mine:
            fn(ember)
        assert str(mine.value) == str(theirs.value)
    with ember.accelerator.device_index(None):  # None switches nothing
        pass
    with pytest.warns(FutureWarning, match="current_device_index"):
        with pytest.raises(RuntimeError):
            ember.accelerator.current_device_idx()


def test_privateuse1_module_would_be_the_accelerator(monkeypatch):
    """The rule, not just the answer: a renamed PrivateUse1 backend with a device module is the
    accelerator and the functions delegate to it."""
    import types
    from ember.utils import backend_registration as br
    mod = types.SimpleNamespace(is_available=lambda: True, device_count=lambda: 2,
                                current_device=lambda: 1, synchronize=lambda i: calls.append(i))
    calls = []
    monkeypatch.setattr(br, "_privateuse1_backend_name", ["fakedev"])
    monkeypatch.setattr(ember, "fakedev", mod, raising=False)
    ember._core.device.device._types.add("fakedev")
    try:
        assert ember.accelerator.current_accelerator() == ember.device("fakedev")
        assert ember.accelerator.is_available() is True
        assert ember.accelerator.device_count() == 2
        assert ember.accelerator.current_device_index() == 1
        ember.accelerator.synchronize()
        assert calls == [1]
        with pytest.raises(ValueError, match="doesn't match the current accelerator"):
            ember.accelerator.synchronize("cpu")
    finally:
        ember._core.device.device._types.discard("fakedev")


def test_nanogpt_style_preamble():
    """nanoGPT train.py / sample.py: the lines at their top."""
    t = ember
    t.manual_seed(1337)
    t.backends.cuda.matmul.allow_tf32 = True  # allow tf32 on matmul
    t.backends.cudnn.allow_tf32 = True  # allow tf32 on cudnn
    device = "cuda" if t.cuda.is_available() and t.backends.cuda.is_built() else "cpu"
    device_type = "cuda" if "cuda" in device else "cpu"
    ptdtype = {"float32": t.float32, "bfloat16": t.bfloat16, "float16": t.float16}["float32"]
    from contextlib import nullcontext
    ctx = nullcontext() if device_type == "cpu" else t.amp.autocast(device_type=device_type,
                                                                     dtype=ptdtype)
    with ctx:
        y = t.nn.functional.scaled_dot_product_attention(
            t.randn(1, 2, 4, 8), t.randn(1, 2, 4, 8), t.randn(1, 2, 4, 8), is_causal=True)
    assert y.shape == (1, 2, 4, 8)
    flash = hasattr(t.nn.functional, "scaled_dot_product_attention")
    assert flash
    assert t.get_float32_matmul_precision() == "high"
    t.set_float32_matmul_precision("highest")


def test_pytorch_examples_style_preamble():
    """pytorch/examples mnist / vae / dcgan: device selection through torch.accelerator, and
    DCGAN's cudnn.benchmark."""
    t = ember
    t.backends.cudnn.benchmark = True
    use_accel = True and t.accelerator.is_available()
    device = t.accelerator.current_accelerator() if use_accel else t.device("cpu")
    assert device == t.device("cpu")
    kwargs = {"batch_size": 64}
    if use_accel:
        kwargs.update({"num_workers": 1, "pin_memory": True, "shuffle": True})
    model = t.nn.Linear(4, 2).to(device)
    assert model(t.ones(3, 4)).device == device
    t.backends.cudnn.benchmark = False
