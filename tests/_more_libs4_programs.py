"""Short programs of stable-baselines3, torchinfo, ptflops, thop, torchsummary, torchview,
pytorch-grad-cam, torch-pruning, pytorch-msssim, piq, BackPACK, GeomLoss, torch-dct,
torch-lr-finder, pytorch-warmup and kmeans-pytorch, run the same way in PyTorch and in ember
(through ``ember.as_torch``): tests/test_more_libs4.py runs
``python tests/_more_libs4_programs.py torch DIR NAMES`` and
``python -m ember.as_torch tests/_more_libs4_programs.py ember DIR NAMES`` side by side
(``helpers.pytorch_beside_ember``), and each writes what every case computed to
DIR/NAME_<library>.npz.

Every case seeds torch's generator (and Python's and NumPy's) itself: ember's CPU generator
draws PyTorch's numbers, so initial weights, sampled actions, replay batches, masks and
clusters are the same on both sides. Printed tables and graph sources are saved as strings and
must be PyTorch's text exactly. Inputs are fixed NumPy arrays; nothing is downloaded."""
import contextlib
import io
import os
import sys
import tempfile
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _torchvision_schemas  # noqa: E402
from _program_helpers import params as _params, seed as _seed, x as _x  # noqa: E402

# (ptflops and pytorch-grad-cam import torchvision, whose wheel needs its schemas defined in
# PyTorch)
_torchvision_schemas.install()



def _printed(fn, *args, **kwargs):
    """What ``fn`` prints to stdout, and its result."""
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        out = fn(*args, **kwargs)
    return buf.getvalue(), out


def _small_models(torch):
    """A CNN with batch norm, pooling, an LSTM and an unused embedding, and a Transformer
    encoder over token embeddings: the models the summary and counting libraries describe."""
    nn = torch.nn

    class ConvLSTM(nn.Module):
        def __init__(self):
            super().__init__()
            self.features = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8),
                                          nn.ReLU(), nn.MaxPool2d(2),
                                          nn.Conv2d(8, 8, 3, groups=2, padding=1), nn.GELU())
            self.lstm = nn.LSTM(8, 16, batch_first=True)
            self.unused = nn.Embedding(10, 8)
            self.head = nn.Linear(16, 5)

        def forward(self, x):
            h = self.features(x).mean((2, 3))
            out, _ = self.lstm(h.unsqueeze(1).repeat(1, 4, 1))
            return self.head(torch.cat([out[:, -1:], out[:, :1]], 1).sum(1))

    class Encoder(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Embedding(20, 16)
            layer = nn.TransformerEncoderLayer(16, 2, 32, dropout=0.0, batch_first=True)
            self.encoder = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
            self.norm = nn.LayerNorm(16)
            self.out = nn.Linear(16, 3)

        def forward(self, tokens):
            return self.out(self.norm(self.encoder(self.embed(tokens))).mean(1))

    _seed(torch)
    return ConvLSTM(), Encoder()


# -- stable-baselines3 -----------------------------------------------------------------------------

def _rl_runs(torch, runs):
    """Train each of ``runs`` (name, algorithm class, environment, steps, keyword arguments,
    the method that performs one update, or None) from seed 0 on the CPU: the losses SB3 logs
    and the parameters after the first update under ``NAME.first.``; the logged losses, parameters,
    deterministic actions on fixed observations and those of the model saved and loaded back
    under ``NAME.run.``."""
    from stable_baselines3.common.logger import Logger

    class Recorder(Logger):
        """Every value SB3 logs under ``train/``, in order (the dumped table keeps only the
        last of a window)."""

        def __init__(self):
            super().__init__(folder=None, output_formats=[])
            self.values = {}

        def record(self, key, value, exclude=None):
            if key.startswith("train/") and key != "train/learning_rate":
                self.values.setdefault(key[len("train/"):], []).append(float(value))
            super().record(key, value, exclude)

    result = {}
    for name, cls, env, steps, kwargs, update in runs:
        policy = kwargs.pop("policy", "MlpPolicy")
        model = cls(policy, env, seed=0, device="cpu", **kwargs)
        logger = Recorder()
        model.set_logger(logger)
        first = {}
        if update is not None:
            _record_first_update(model, update, first, logger.values)
        model.learn(total_timesteps=steps)
        result.update({f"{name}.first.{k}": v for k, v in first.items()})
        result.update({f"{name}.run.loss.{k}": np.array(v) for k, v in logger.values.items()})
        result.update(_params(model.policy, f"{name}.run.param."))
        space, rs = model.observation_space, np.random.RandomState(1)
        obs = rs.randint(0, space.n, 6) if hasattr(space, "n") else _x(rs, 6, *space.shape)
        result[f"{name}.run.action"] = model.predict(obs, deterministic=True)[0]
        with tempfile.TemporaryDirectory() as d:
            model.save(os.path.join(d, name))
            loaded = cls.load(os.path.join(d, name), device="cpu")
        result[f"{name}.run.loaded_action"] = loaded.predict(obs, deterministic=True)[0]
    return result


def _record_first_update(model, update, first, logged):
    """Wrap ``model``'s method ``update`` so that after its first call ``first`` holds the
    policy's parameters and the first value of each logged loss."""
    method = getattr(model, update)

    def update_recorded(*args, **kwargs):
        out = method(*args, **kwargs)
        if not first:
            first.update(_params(model.policy, ""))
            first.update({f"loss.{k}": np.array(v[0]) for k, v in logged.items()})
        return out
    setattr(model, update, update_recorded)


def _sb3(torch):
    """PPO and A2C on CartPole, DQN on CartPole, SAC and TD3 on Pendulum (gymnasium's classic
    control), each from seed 0: the first update tightly, then a few hundred steps loosely (RL
    amplifies rounding), and a save/load round trip (:func:`_rl_runs`)."""
    from stable_baselines3 import A2C, DQN, PPO, SAC, TD3
    from stable_baselines3.common.noise import NormalActionNoise
    def net():  # (a new dict each: SB3 adds its own entries to the one it is given)
        return dict(net_arch=[32, 32])
    return _rl_runs(torch, [
        ("ppo", PPO, "CartPole-v1", 256,
         dict(n_steps=64, batch_size=32, n_epochs=2, policy_kwargs=net()), "train"),
        ("a2c", A2C, "CartPole-v1", 160, dict(n_steps=8, policy_kwargs=net()), "train"),
        ("dqn", DQN, "CartPole-v1", 300,
         dict(learning_starts=64, train_freq=4, target_update_interval=40, buffer_size=1000,
              batch_size=32, exploration_fraction=0.5, policy_kwargs=net()), "train"),
        ("sac", SAC, "Pendulum-v1", 160,
         dict(learning_starts=64, batch_size=32, buffer_size=1000, policy_kwargs=net()),
         "train"),
        ("td3", TD3, "Pendulum-v1", 160,
         dict(learning_starts=64, batch_size=32, buffer_size=1000, policy_delay=2,
              action_noise=NormalActionNoise(np.zeros(1), 0.1 * np.ones(1)),
              policy_kwargs=net()), "train")])


def _sb3_contrib(torch):
    """sb3-contrib's algorithms the same way: TRPO (conjugate gradient on Hessian-vector
    products of the KL, then a line search), QR-DQN and TQC (quantile critics), recurrent PPO
    (LSTM states carried through the rollout and its sequences), maskable PPO (invalid
    actions masked out of the categorical), ARS (random search over parameter
    perturbations) and CrossQ (batch renormalization in the critics, no target network)."""
    from sb3_contrib import ARS, QRDQN, TQC, TRPO, CrossQ, MaskablePPO, RecurrentPPO
    from sb3_contrib.common.envs import InvalidActionEnvDiscrete
    return _rl_runs(torch, [
        ("trpo", TRPO, "Pendulum-v1", 128,
         dict(n_steps=64, batch_size=32, n_critic_updates=2, cg_max_steps=5,
              policy_kwargs=dict(net_arch=[32, 32])), "train"),
        ("qrdqn", QRDQN, "CartPole-v1", 120,
         dict(learning_starts=32, buffer_size=500, batch_size=16, target_update_interval=20,
              policy_kwargs=dict(n_quantiles=10, net_arch=[32])), "train"),
        ("tqc", TQC, "Pendulum-v1", 100,
         dict(learning_starts=32, buffer_size=500, batch_size=16,
              top_quantiles_to_drop_per_net=2,
              policy_kwargs=dict(n_quantiles=5, n_critics=2, net_arch=[32])), "train"),
        ("recurrent_ppo", RecurrentPPO, "CartPole-v1", 64,
         dict(policy="MlpLstmPolicy", n_steps=32, batch_size=16, n_epochs=2,
              policy_kwargs=dict(lstm_hidden_size=16, net_arch=[16])), "train"),
        ("maskable_ppo", MaskablePPO, InvalidActionEnvDiscrete(dim=10, n_invalid_actions=4), 64,
         dict(n_steps=32, batch_size=16, n_epochs=2, policy_kwargs=dict(net_arch=[16])),
         "train"),
        ("ars", ARS, "Pendulum-v1", 800,
         dict(n_delta=2, n_top=1, policy_kwargs=dict(net_arch=[8])), "_do_one_update"),
        # (no first update held tightly: a critic's linear bias feeding a batch renorm has a
        # gradient of rounding noise only, which Adam's first step scales up to the learning
        # rate, on both sides)
        ("crossq", CrossQ, "Pendulum-v1", 80,
         dict(learning_starts=32, buffer_size=500, batch_size=16,
              policy_kwargs=dict(net_arch=[32])), None)])


# -- torchinfo, ptflops, thop, torchsummary --------------------------------------------------------

def _summaries(torch):
    """torchinfo's summary tables (every column, depths, row settings, train mode, token
    inputs given as data), ptflops' per-layer reports of its module-hook and aten-dispatch
    counters, thop's counts and torchsummary's table: PyTorch's text, character for character."""
    from ptflops import get_model_complexity_info
    from thop import profile
    from torchinfo import summary
    from torchsummary import summary as keras_summary
    conv, encoder = _small_models(torch)
    tokens = torch.from_numpy(np.random.RandomState(0).randint(0, 20, (2, 7)))
    result = {}
    every = ("input_size", "output_size", "num_params", "params_percent", "kernel_size",
             "mult_adds", "trainable")
    for name, model, kwargs in [
            ("conv", conv, dict(input_size=(2, 3, 16, 16), col_names=every, depth=4)),
            ("conv_ascii", conv, dict(input_size=(2, 3, 16, 16), depth=2, mode="train",
                                      row_settings=("depth", "var_names", "ascii_only"))),
            ("encoder", encoder, dict(input_data=[tokens], col_names=every, depth=5,
                                      row_settings=("var_names",)))]:
        stats = summary(model, verbose=0, **kwargs)
        result[f"torchinfo.{name}"] = np.array(str(stats))
        # (not total_input: sys.getsizeof of the input's storage, whose object header is
        # PyTorch's C struct there; its megabytes in the table agree)
        result[f"torchinfo.{name}.counts"] = np.array(
            [stats.total_params, stats.trainable_params, stats.total_mult_adds,
             stats.total_output_bytes, stats.total_param_bytes])
    for backend in ("pytorch", "aten"):
        out = io.StringIO()
        macs, params = get_model_complexity_info(conv, (3, 16, 16), as_strings=False,
                                                 print_per_layer_stat=True, ost=out,
                                                 backend=backend)
        result[f"ptflops.{backend}"] = np.array(out.getvalue())
        result[f"ptflops.{backend}.counts"] = np.array([macs, params])
    image = torch.from_numpy(_x(np.random.RandomState(1), 2, 3, 16, 16))
    result["thop.counts"] = np.array(profile(conv.features, inputs=(image,), verbose=False))
    text, _ = _printed(keras_summary, conv.features, (3, 16, 16), device="cpu")
    result["torchsummary"] = np.array(text)
    return result


# -- torchview -------------------------------------------------------------------------------------

def _torchview(torch):
    """torchview's graphs (recorded through ``__torch_function__`` on its recorder tensor
    subclass and module forward hooks) of the two models, nested and flat, with and without
    inner tensors, and a recurrent module rolled: the Graphviz source, PyTorch's text."""
    from torchview import draw_graph
    conv, encoder = _small_models(torch)
    tokens = torch.from_numpy(np.random.RandomState(0).randint(0, 20, (2, 7)))
    result = {}
    for name, model, kwargs in [
            ("conv_nested", conv, dict(input_size=(2, 3, 16, 16), expand_nested=True)),
            ("conv_tensors", conv, dict(input_size=(2, 3, 16, 16), hide_inner_tensors=False,
                                        depth=2)),
            ("encoder", encoder, dict(input_data=tokens, depth=3, expand_nested=True,
                                      hide_module_functions=False)),
            ("rnn_rolled", torch.nn.GRU(4, 6, num_layers=2),
             dict(input_size=(5, 1, 4), roll=True))]:
        graph = draw_graph(model, graph_name=name, **kwargs)
        result[f"torchview.{name}"] = np.array(graph.visual_graph.source)
    return result


# -- pytorch-grad-cam ------------------------------------------------------------------------------

def _grad_cam(torch):
    """Class activation maps of a small CNN from forward/backward hooks on its layers:
    Grad-CAM, Grad-CAM++, XGrad-CAM, HiResCAM, LayerCAM, Eigen-CAM (an SVD of the
    activations), Score-CAM (masked inputs in batches) and Grad-CAM with test-time augmentation
    (ttach's flips), for two targets and one layer, two layers and a softmax target; and the
    guided-backpropagation saliency of its ReLU autograd function."""
    from pytorch_grad_cam import (EigenCAM, GradCAM, GradCAMPlusPlus, GuidedBackpropReLUModel,
                                  HiResCAM, LayerCAM, ScoreCAM, XGradCAM)
    from pytorch_grad_cam.utils.model_targets import (ClassifierOutputSoftmaxTarget,
                                                      ClassifierOutputTarget)
    nn = torch.nn
    _seed(torch)
    net = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(),
                        nn.Conv2d(8, 16, 3, padding=1, stride=2), nn.ReLU(),
                        nn.Conv2d(16, 16, 3, padding=1), nn.ReLU(),
                        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(16, 4)).eval()
    x = torch.from_numpy(_x(np.random.RandomState(0), 2, 3, 16, 16))
    targets = [ClassifierOutputTarget(1), ClassifierOutputTarget(3)]
    result = {}
    for cls in (GradCAM, GradCAMPlusPlus, XGradCAM, HiResCAM, LayerCAM, EigenCAM, ScoreCAM):
        with cls(model=net, target_layers=[net[2]]) as cam:
            cam.batch_size = 8  # (Score-CAM's masked inputs per forward)
            result[f"{cls.__name__}"] = cam(input_tensor=x, targets=targets)
            result[f"{cls.__name__}.outputs"] = cam.outputs.detach().numpy()
    with GradCAM(model=net, target_layers=[net[2], net[4]]) as cam:
        result["GradCAM.two_layers"] = cam(
            input_tensor=x, targets=[ClassifierOutputSoftmaxTarget(2)] * 2)
    with GradCAM(model=net, target_layers=[net[4]]) as cam:
        result["GradCAM.aug_smooth"] = cam(input_tensor=x, targets=targets, aug_smooth=True)
    guided = GuidedBackpropReLUModel(model=net, device="cpu")
    result["guided_backprop"] = guided(x[:1], target_category=2)
    return result


# -- torch-pruning ---------------------------------------------------------------------------------

def _torch_pruning(torch):
    """Structured pruning of a ResNet-like model with torch-pruning's dependency graph (built
    from the autograd graph's nodes of one forward): the pruning group of the stem's channels as
    printed, MetaPruner at half the channels by L2 magnitude, batch-norm scale (global) and
    first-order Taylor importance, each the pruned shapes, MACs and parameter counts, the
    outputs and one SGD step of the pruned model."""
    import torch_pruning as tp
    nn = torch.nn

    class Block(nn.Module):
        def __init__(self, cin, c, stride=1):
            super().__init__()
            self.conv1 = nn.Conv2d(cin, c, 3, stride, 1, bias=False)
            self.bn1 = nn.BatchNorm2d(c)
            self.conv2 = nn.Conv2d(c, c, 3, 1, 1, bias=False)
            self.bn2 = nn.BatchNorm2d(c)
            self.short = nn.Sequential() if stride == 1 and cin == c else nn.Sequential(
                nn.Conv2d(cin, c, 1, stride, bias=False), nn.BatchNorm2d(c))

        def forward(self, x):
            y = self.bn2(self.conv2(torch.relu(self.bn1(self.conv1(x)))))
            return torch.relu(y + self.short(x))

    class ResNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.stem = nn.Sequential(nn.Conv2d(3, 16, 3, 1, 1, bias=False), nn.BatchNorm2d(16),
                                      nn.ReLU())
            self.layer1 = Block(16, 16)
            self.layer2 = Block(16, 32, 2)
            self.pool = nn.AdaptiveAvgPool2d(1)
            self.fc = nn.Linear(32, 10)

        def forward(self, x):
            return self.fc(self.pool(self.layer2(self.layer1(self.stem(x)))).flatten(1))

    _seed(torch)
    reference = ResNet()
    for m in reference.modules():
        if isinstance(m, nn.BatchNorm2d):
            m.weight.data.uniform_(0.5, 1.5)
            m.running_var.uniform_(0.5, 1.5)
    reference.eval()
    x = torch.from_numpy(_x(np.random.RandomState(0), 4, 3, 16, 16))
    labels = torch.tensor([1, 4, 7, 9])
    result = {"base.counts": np.array(tp.utils.count_ops_and_params(reference, x))}
    graph = tp.DependencyGraph().build_dependency(reference, example_inputs=x)
    group = graph.get_pruning_group(reference.stem[0], tp.prune_conv_out_channels, idxs=[2, 6, 9])
    result["group"] = np.array(str(group))
    for name, importance in [("l2", tp.importance.MagnitudeImportance(p=2)),
                             ("bn", tp.importance.BNScaleImportance()),
                             ("taylor", tp.importance.TaylorImportance())]:
        model = ResNet()
        model.load_state_dict(reference.state_dict())
        model.eval()
        if name == "taylor":
            nn.functional.cross_entropy(model(x), labels).backward()
        pruner = tp.pruner.MetaPruner(model, x, importance=importance, pruning_ratio=0.5,
                                      ignored_layers=[model.fc], global_pruning=name == "bn")
        pruner.step()
        result[f"{name}.counts"] = np.array(tp.utils.count_ops_and_params(model, x))
        result[f"{name}.shapes"] = np.array([s for p in model.parameters() for s in p.shape])
        result[f"{name}.output"] = model(x).detach().numpy()
        model.train()
        model.zero_grad()
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        loss = nn.functional.cross_entropy(model(x), labels)
        loss.backward()
        optimizer.step()
        result[f"{name}.loss"] = np.array(loss.item())
        result.update(_params(model, f"{name}.param."))
    return result


# -- pytorch-msssim, piq ---------------------------------------------------------------------------

def _image_quality(torch):
    """pytorch-msssim's SSIM and MS-SSIM (separable Gaussian windows as grouped convolutions)
    per image and averaged, their gradients, and a few Adam steps restoring an image by MS-SSIM;
    piq's full-reference metrics (PSNR, SSIM, MS-SSIM, GMSD, HaarPSI, FSIM with its
    log-Gabor filters in the Fourier domain, VIF, MDSI, VSI, SR-SIM, DSS) and total
    variation, and the gradient of one."""
    import piq
    from pytorch_msssim import MS_SSIM, SSIM, ms_ssim, ssim
    rs = np.random.RandomState(1)
    clean = torch.from_numpy(rs.rand(2, 3, 176, 176).astype(np.float32))
    noisy = (clean + 0.1 * torch.from_numpy(_x(rs, 2, 3, 176, 176))).clamp(0, 1)
    result = {}
    x = noisy.clone().requires_grad_()
    s = ssim(clean, x, data_range=1.0, size_average=False)
    m = ms_ssim(clean, x, data_range=1.0, size_average=False)
    (s.sum() + m.sum()).backward()
    result.update({"msssim.ssim": s.detach().numpy(), "msssim.ms_ssim": m.detach().numpy(),
                   "msssim.grad": x.grad.numpy()})
    result["msssim.modules"] = np.array(
        [SSIM(data_range=1.0, channel=3, win_size=7)(clean, noisy).item(),
         MS_SSIM(data_range=1.0, channel=3, weights=[0.5, 0.3, 0.2])(clean, noisy).item()])
    restored = noisy.clone().requires_grad_()
    optimizer = torch.optim.Adam([restored], lr=0.01)
    losses = []
    for _ in range(3):
        optimizer.zero_grad()
        loss = 1 - ms_ssim(clean, restored, data_range=1.0)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    result["msssim.restore_losses"] = np.array(losses)
    a, b = clean[:, :, :64, :64], noisy[:, :, :64, :64]
    metrics = {"psnr": lambda p, q: piq.psnr(p, q, reduction="none"),
               "ssim": lambda p, q: piq.ssim(p, q, reduction="none"),
               "gmsd": lambda p, q: piq.gmsd(p, q, reduction="none"),
               "haarpsi": lambda p, q: piq.haarpsi(p, q, reduction="none"),
               "fsim": lambda p, q: piq.fsim(p, q, reduction="none"),
               "vif": lambda p, q: piq.vif_p(p, q, reduction="none"),
               "mdsi": lambda p, q: piq.mdsi(p, q, reduction="none"),
               "vsi": lambda p, q: piq.vsi(p, q, reduction="none"),
               "srsim": lambda p, q: piq.srsim(p, q, reduction="none"),
               "dss": lambda p, q: piq.dss(p, q, reduction="none")}
    for name, metric in metrics.items():
        result[f"piq.{name}"] = metric(a, b).numpy()
    result["piq.ms_ssim"] = piq.multi_scale_ssim(clean, noisy, reduction="none").numpy()
    result["piq.tv"] = piq.total_variation(a, reduction="none").numpy()
    q = b.clone().requires_grad_()
    piq.fsim(a, q).backward()
    result["piq.fsim_grad"] = q.grad.numpy()
    return result


# -- BackPACK --------------------------------------------------------------------------------------

def _backpack(torch):
    """BackPACK's extensions of backward (module hooks that compute per-sample quantities from
    the saved inputs and backpropagated gradients): per-sample gradients, their L2 norms, sums
    of squares and variance, the exact diagonal of the generalized Gauss-Newton, KFAC factors
    (Monte-Carlo sampled from torch's generator) and the Hessian diagonal, for a CNN under a
    cross-entropy loss."""
    from backpack import backpack, extend
    from backpack.extensions import (KFAC, BatchGrad, BatchL2Grad, DiagGGNExact, DiagHessian,
                                     SumGradSquared, Variance)
    nn = torch.nn
    _seed(torch)
    model = extend(nn.Sequential(nn.Conv2d(3, 4, 3), nn.Sigmoid(), nn.MaxPool2d(2),
                                 nn.Flatten(), nn.Linear(4 * 3 * 3, 5)))
    loss_fn = extend(nn.CrossEntropyLoss())
    x = torch.from_numpy(_x(np.random.RandomState(0), 4, 3, 8, 8))
    y = torch.tensor([0, 1, 2, 3])
    result = {}
    loss = loss_fn(model(x), y)
    with backpack(BatchGrad(), BatchL2Grad(), SumGradSquared(), Variance(), DiagGGNExact(),
                  KFAC(mc_samples=2)):
        loss.backward()
    for name, p in model.named_parameters():
        result.update({f"{name}.grad": p.grad.numpy(), f"{name}.grad_batch": p.grad_batch.numpy(),
                       f"{name}.batch_l2": p.batch_l2.numpy(),
                       f"{name}.sum_grad_squared": p.sum_grad_squared.numpy(),
                       f"{name}.variance": p.variance.numpy(),
                       f"{name}.diag_ggn": p.diag_ggn_exact.numpy()})
        result.update({f"{name}.kfac{i}": f.numpy() for i, f in enumerate(p.kfac)})
    model.zero_grad()
    with backpack(DiagHessian()):
        loss_fn(model(x), y).backward()
    result.update({f"{n}.diag_h": p.diag_h.numpy() for n, p in model.named_parameters()})
    return result


# -- GeomLoss, torch-dct, torch-lr-finder, pytorch-warmup, kmeans-pytorch --------------------------

def _small_libraries(torch):
    """GeomLoss's Sinkhorn divergence (debiased, annealed ε-scaling) and kernel losses between
    point clouds with their gradients; torch-dct's DCT/IDCT (1-d orthonormal, 2-d, 3-d, through
    FFTs); torch-lr-finder's range test (its model and optimizer state restored after); a
    learning-rate warmup damping a cosine schedule; and k-means (NumPy's seed picks the initial
    centers)."""
    import pytorch_warmup
    import torch_dct
    from geomloss import SamplesLoss
    from kmeans_pytorch import kmeans, kmeans_predict
    from torch_lr_finder import LRFinder
    nn = torch.nn
    rs = np.random.RandomState(2)
    result = {}
    a = torch.from_numpy(_x(rs, 50, 2))
    b = torch.from_numpy(_x(rs, 60, 2) + 1)
    for loss in ("sinkhorn", "energy", "gaussian", "laplacian"):
        points = a.clone().requires_grad_()
        value = SamplesLoss(loss, blur=0.1, scaling=0.7, backend="tensorized")(points, b)
        grad, = torch.autograd.grad(value, points)
        result.update({f"geomloss.{loss}": value.detach().numpy(),
                       f"geomloss.{loss}.grad": grad.numpy()})
    signal = torch.from_numpy(rs.randn(3, 4, 4).astype(np.float64))
    result.update({"dct.ortho": torch_dct.dct(signal, norm="ortho").numpy(),
                   "dct.idct": torch_dct.idct(torch_dct.dct(signal)).numpy(),
                   "dct.2d": torch_dct.dct_2d(signal).numpy(),
                   "dct.3d_roundtrip": torch_dct.idct_3d(torch_dct.dct_3d(signal)).numpy()})
    _seed(torch)
    model = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 2))
    data = torch.utils.data.TensorDataset(torch.from_numpy(_x(rs, 64, 4)),
                                          torch.from_numpy(rs.randint(0, 2, 64)))
    loader = torch.utils.data.DataLoader(data, batch_size=16, shuffle=True)
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-4, momentum=0.9)
    finder = LRFinder(model, optimizer, nn.CrossEntropyLoss(), device="cpu")
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        finder.range_test(loader, end_lr=10, num_iter=12)
    finder.reset()
    result.update({"lr_finder.loss": np.array(finder.history["loss"]),
                   "lr_finder.lr": np.array(finder.history["lr"])})
    result.update(_params(model, "lr_finder.param."))
    p = nn.Parameter(torch.ones(2))
    optimizer = torch.optim.AdamW([p], lr=0.1)
    schedule = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, 10)
    warmup = pytorch_warmup.UntunedLinearWarmup(optimizer)
    lrs = []
    for _ in range(6):
        optimizer.zero_grad()
        (p ** 2).sum().backward()
        optimizer.step()
        with warmup.dampening():
            schedule.step()
        lrs.append(optimizer.param_groups[0]["lr"])
    result.update({"warmup.lrs": np.array(lrs), "warmup.param": p.detach().numpy()})
    points = torch.from_numpy(np.concatenate([_x(rs, 40, 2) - 3, _x(rs, 40, 2) + 3]))
    np.random.seed(0)
    with contextlib.redirect_stdout(io.StringIO()):
        ids, centers = kmeans(X=points, num_clusters=2, distance="euclidean",
                              device=torch.device("cpu"))
        predicted = kmeans_predict(points[:10] * 0.5, centers, "cosine",
                                   device=torch.device("cpu"))
    result.update({"kmeans.ids": ids.numpy(), "kmeans.centers": centers.numpy(),
                   "kmeans.predicted": predicted.numpy()})
    return result


# -- laplace-torch, nngeometry ---------------------------------------------------------------------

def _curvature(torch):
    """Laplace approximations (laplace-torch) of small trained networks: last-layer KFAC for a
    classifier with probit-approximated GLM predictions, all-weights diagonal and KFAC for a
    regressor, and the full generalized Gauss-Newton of a classifier from curvlinops (forward
    mode over reverse mode: ``jvp`` of a ``vjp`` under ``vmap``, which runs the backward ops'
    forward-AD decompositions); each fitted, its prior precision tuned by the marginal
    likelihood, and its predictive. Then nngeometry's Fisher information matrices (diagonal,
    KFAC, EKFAC, block-diagonal, dense) with their traces, norms and products."""
    from laplace import Laplace
    from nngeometry.metrics import FIM
    from nngeometry.object import PMatBlockDiag, PMatDense, PMatDiag, PMatEKFAC, PMatKFAC, PVector
    nn = torch.nn
    rs = np.random.RandomState(0)
    x = torch.from_numpy(_x(rs, 32, 4))
    labels = torch.from_numpy(rs.randint(0, 3, 32))
    targets = torch.from_numpy(_x(rs, 32, 1))
    result = {}
    for name, likelihood, y, weights, structure in [
            ("ll_kron", "classification", labels, "last_layer", "kron"),
            ("diag", "regression", targets, "all", "diag"),
            ("kron", "regression", targets, "all", "kron"),
            ("full", "classification", labels, "all", "full")]:
        _seed(torch)
        model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(),
                              nn.Linear(8, 3 if likelihood == "classification" else 1))
        optimizer = torch.optim.Adam(model.parameters(), lr=0.05)
        loss_fn = nn.CrossEntropyLoss() if likelihood == "classification" else nn.MSELoss()
        for _ in range(5):
            optimizer.zero_grad()
            loss_fn(model(x), y).backward()
            optimizer.step()
        loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, y),
                                             batch_size=16)
        la = Laplace(model, likelihood, subset_of_weights=weights, hessian_structure=structure)
        la.fit(loader)
        la.optimize_prior_precision(method="marglik", n_steps=5)
        result[f"laplace.{name}.log_marglik"] = la.log_marginal_likelihood().detach().numpy()
        result[f"laplace.{name}.prior_precision"] = la.prior_precision.detach().numpy()
        if likelihood == "classification":
            result[f"laplace.{name}.predictive"] = la(
                x[:4], pred_type="glm", link_approx="probit").detach().numpy()
        else:
            mean, var = la(x[:4])
            result.update({f"laplace.{name}.mean": mean.detach().numpy(),
                           f"laplace.{name}.var": var.detach().numpy()})
    _seed(torch)
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3))
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, labels),
                                         batch_size=16)
    v = PVector.from_model(model)
    for rep in (PMatDiag, PMatKFAC, PMatEKFAC, PMatBlockDiag, PMatDense):
        fim = FIM(model=model, loader=loader, representation=rep, variant="classif_logits",
                  device="cpu")
        result[f"nngeometry.{rep.__name__}"] = np.array(
            [float(fim.trace()), float(fim.vTMv(v)), float(fim.frobenius_norm())])
        result[f"nngeometry.{rep.__name__}.mv"] = fim.mv(v).to_torch().detach().numpy()
    return result


# -- pytorch-tcn, torchkbnufft ---------------------------------------------------------------------

def _signal(torch):
    """Temporal convolutional networks (pytorch-tcn): causal dilated blocks with weight norm,
    skip connections and dropout, and a channels-last ("NLC") one with layer norm over
    transposed activations (dropout of a non-contiguous tensor: the draws follow its memory
    order, as PyTorch's), each trained a few Adam steps with dropout on, and the causal one's
    streaming inference chunk by chunk; and torchkbnufft's non-uniform FFTs of a complex image
    (Kaiser-Bessel interpolation tables, forward and adjoint, their sparse-matrix forms,
    density compensation and the Toeplitz embedding of the normal operator)."""
    import torchkbnufft as tkbn
    from pytorch_tcn import TCN
    rs = np.random.RandomState(0)
    result = {}
    signal = torch.from_numpy(_x(rs, 2, 4, 24))
    target = torch.from_numpy(_x(rs, 2, 8, 24))
    for name, kwargs in [("causal", dict(use_norm="weight_norm", use_skip_connections=True)),
                         ("nlc", dict(use_norm="layer_norm", input_shape="NLC"))]:
        _seed(torch)
        model = TCN(4, [8, 8], kernel_size=3, dropout=0.2, causal=True, **kwargs)
        optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
        x = signal.transpose(1, 2) if name == "nlc" else signal
        losses = []
        for _ in range(3):
            optimizer.zero_grad()
            out = model(x)
            loss = ((out.transpose(1, 2) if name == "nlc" else out) - target).pow(2).mean()
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
        result[f"tcn.{name}.losses"] = np.array(losses)
        result.update(_params(model, f"tcn.{name}.param."))
        model.eval()
        with torch.no_grad():
            result[f"tcn.{name}.eval"] = model(x).numpy()
            if name == "causal":
                model.reset_buffers()
                chunks = [model.inference(signal[:1, :, i:i + 6]) for i in range(0, 24, 6)]
                result["tcn.causal.streamed"] = torch.cat(chunks, 2).numpy()
    image = torch.from_numpy((rs.randn(1, 1, 16, 16) + 1j * rs.randn(1, 1, 16, 16))
                             .astype(np.complex64))
    ktraj = torch.from_numpy(rs.uniform(-np.pi, np.pi, (2, 60)).astype(np.float32))
    nufft = tkbn.KbNufft(im_size=(16, 16))
    adjoint = tkbn.KbNufftAdjoint(im_size=(16, 16))
    kdata = nufft(image, ktraj)
    dcomp = tkbn.calc_density_compensation_function(ktraj=ktraj, im_size=(16, 16))
    interp_mats = tkbn.calc_tensor_spmatrix(ktraj, im_size=(16, 16))
    kernel = tkbn.calc_toeplitz_kernel(ktraj, im_size=(16, 16))
    result.update({"kbnufft.forward": kdata.numpy(),
                   "kbnufft.adjoint": adjoint(kdata * dcomp, ktraj).numpy(),
                   "kbnufft.dcomp": dcomp.numpy(),
                   "kbnufft.sparse_forward": nufft(image, ktraj, interp_mats).numpy(),
                   "kbnufft.sparse_adjoint": adjoint(kdata, ktraj, interp_mats).numpy(),
                   "kbnufft.toeplitz": tkbn.ToepNufft()(image, kernel).numpy()})
    return result


CASES = {"sb3": _sb3, "sb3_contrib": _sb3_contrib, "summaries": _summaries,
         "torchview": _torchview, "grad_cam": _grad_cam, "torch_pruning": _torch_pruning,
         "image_quality": _image_quality,
         "backpack": _backpack, "small_libraries": _small_libraries,
         "curvature": _curvature, "signal": _signal}


def run(torch, name):
    """Case ``name``'s results, as arrays keyed by name."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return {k: np.asarray(v) for k, v in CASES[name](torch).items()}


if __name__ == "__main__":
    library, directory, names = sys.argv[1], sys.argv[2], sys.argv[3].split(",")
    import torch
    # under ember.as_torch, torch *is* the ember module
    assert (sys.modules.get("ember") is torch) == (library == "ember"), library
    if library == "torch":
        # (the two sides run at once: PyTorch's spinning intra-op threads would starve ember's
        # process of the cores and make this side several times slower)
        torch.set_num_threads(1)
    for name in names:
        np.savez(os.path.join(directory, f"{name}_{library}.npz"), **run(torch, name))
