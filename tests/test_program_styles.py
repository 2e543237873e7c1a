"""Lines real PyTorch programs start with (issue 18, item 4), written as those programs write
them, run on ember without a GPU."""
import pytest

import ember as torch


def test_seeding_cuda_without_a_gpu():
    # every training script's seed block
    seed = 1337
    torch.manual_seed(seed)
    torch.cuda.manual_seed(seed)
    torch.cuda.manual_seed_all(seed)
    torch.cuda.seed()
    torch.cuda.seed_all()
    device = "cuda" if torch.cuda.is_available() else "cpu"
    assert device == "cpu" and torch.cuda.device_count() == 0
    assert torch.cuda.get_rng_state_all() == [] and torch.cuda.memory_allocated() == 0
    torch.cuda.empty_cache()


def test_cuda_calls_that_need_a_device_say_so():
    torch_ref = pytest.importorskip("torch")
    for name in ("initial_seed", "current_device", "synchronize"):
        with pytest.raises(AssertionError) as expected:
            getattr(torch_ref.cuda, name)()
        with pytest.raises(AssertionError) as got:
            getattr(torch.cuda, name)()
        assert str(got.value) == str(expected.value)


def test_data_parallel_on_one_device_is_a_pass_through():
    from ember.nn.parallel import DataParallel  # `from torch.nn.parallel import ...`
    model = torch.nn.Linear(3, 2)
    wrapped = DataParallel(model)
    x = torch.ones(4, 3)
    assert wrapped.module is model
    assert wrapped(x).tolist() == model(x).tolist()


def test_tensor_device_properties():
    t = torch.ones(2)
    assert (t.is_cpu, t.is_cuda, t.is_xpu, t.is_mps, t.is_meta) == (True, False, False, False, False)
