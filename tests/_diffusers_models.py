"""HuggingFace diffusers models, schedulers and a pipeline run the same way in PyTorch and in
ember (through ``ember.as_torch``): tests/test_diffusers.py runs each case in PyTorch in its own
process, and ``python -m ember.as_torch tests/_diffusers_models.py DIR NAMES`` runs them in ember
with PyTorch's weights (DIR/NAME_weights.npz), writing what each computed to DIR/NAME_ember.npz.

Random inputs come from NumPy; where diffusers itself draws noise (a VAE's sample, a pipeline's
initial image, DDPM's variance noise) it draws from a seeded ``torch.Generator``, whose stream is
PyTorch's in both libraries."""
import os
import sys

import numpy as np

_UNET = dict(sample_size=16, in_channels=3, out_channels=3, layers_per_block=1,
             block_out_channels=(32, 64), norm_num_groups=8, attention_head_dim=8,
             down_block_types=("DownBlock2D", "AttnDownBlock2D"),
             up_block_types=("AttnUpBlock2D", "UpBlock2D"))
_COND = dict(sample_size=8, in_channels=4, out_channels=4, layers_per_block=1,
             block_out_channels=(32, 64), norm_num_groups=8, attention_head_dim=8,
             cross_attention_dim=24,
             down_block_types=("CrossAttnDownBlock2D", "DownBlock2D"),
             up_block_types=("UpBlock2D", "CrossAttnUpBlock2D"))
_VAE = dict(in_channels=3, out_channels=3, latent_channels=4, block_out_channels=(16, 32),
            layers_per_block=1, norm_num_groups=8, sample_size=16,
            down_block_types=("DownEncoderBlock2D", "DownEncoderBlock2D"),
            up_block_types=("UpDecoderBlock2D", "UpDecoderBlock2D"))
_DIT = dict(num_attention_heads=2, attention_head_dim=16, in_channels=4, out_channels=8,
            num_layers=2, sample_size=8, patch_size=2, num_embeds_ada_norm=10)

# name -> (model class, config): each case builds its model from these
MODELS = {
    # ResNet blocks with a time embedding, self-attention blocks, down/upsampling
    "unet2d": ("UNet2DModel", _UNET),
    # cross-attention on encoder_hidden_states with a padding mask, Transformer2DModel blocks
    "unet2d_condition": ("UNet2DConditionModel", _COND),
    # encoder -> DiagonalGaussianDistribution (mode, KL, a generator's sample) -> decoder
    "autoencoder_kl": ("AutoencoderKL", _VAE),
    # patch embedding, adaLN-Zero conditioned on timestep and class label
    "dit": ("DiTTransformer2DModel", _DIT),
    # DDPMScheduler.add_noise, MSE on the predicted noise, three AdamW steps
    "ddpm_training": ("UNet2DModel", _UNET),
    # a few denoising steps of DDIM, Euler and DPM-Solver++ (scheduler.step)
    "sampling": ("UNet2DModel", _UNET),
    # DDPMPipeline, three steps, output_type="np", a seeded generator
    "pipeline": ("UNet2DModel", _UNET),
    # UNet2DModel.from_pretrained of PyTorch's save_pretrained (safetensors); ember's
    # save_pretrained is read back by PyTorch in the test
    "pretrained": ("UNet2DModel", _UNET),
}


def _arrays(rs, *shape):
    return rs.randn(*shape).astype(np.float32)


def _grads(model):
    return {"grad." + k: p.grad.numpy() for k, p in model.named_parameters()
            if p.grad is not None}


def build(torch, diffusers, name, weights=None):
    """The model of ``name``; PyTorch's initialisation (seed 0) with every parameter moved off
    its initial value (zero-initialised projections would leave gradients trivially zero),
    or ``weights`` when given."""
    cls, kw = MODELS[name]
    torch.manual_seed(0)
    model = getattr(diffusers, cls)(**kw)
    if weights is None:
        with torch.no_grad():
            for p in model.parameters():
                p.add_(torch.randn(p.shape) * 0.05)
    else:
        model.load_state_dict({k: torch.from_numpy(v.copy()) for k, v in weights.items()})
    return model.eval()


def run(torch, diffusers, name, weights=None, directory=None):
    """Run case ``name`` (with ``weights``, a dict of arrays, if given); return the state dict
    (as arrays) and what was computed. ``directory`` holds the ``pretrained`` case's
    checkpoints."""
    import torch.nn.functional as F
    model = build(torch, diffusers, name, weights)
    state = {k: v.detach().numpy().copy() for k, v in model.state_dict().items()}
    rs = np.random.RandomState(0)
    result = {}
    if name == "unet2d":
        x = torch.from_numpy(_arrays(rs, 2, 3, 16, 16))
        out = model(x, torch.tensor([3, 500])).sample
        loss = F.mse_loss(out, torch.from_numpy(_arrays(rs, 2, 3, 16, 16)))
    elif name == "unet2d_condition":
        x = torch.from_numpy(_arrays(rs, 2, 4, 8, 8))
        context = torch.from_numpy(_arrays(rs, 2, 5, 24))
        mask = torch.tensor([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0]])
        out = model(x, 250, encoder_hidden_states=context, encoder_attention_mask=mask).sample
        loss = F.mse_loss(out, torch.from_numpy(_arrays(rs, 2, 4, 8, 8)))
    elif name == "autoencoder_kl":
        x = torch.from_numpy(_arrays(rs, 2, 3, 16, 16))
        posterior = model.encode(x).latent_dist
        z = posterior.mode()
        out = model.decode(z).sample
        loss = F.mse_loss(out, x) + 1e-3 * posterior.kl().mean()
        result["latent"] = z.detach().numpy()
        drawn = posterior.sample(generator=torch.Generator().manual_seed(0))
        result["latent_sample"] = drawn.detach().numpy()
    elif name == "dit":
        x = torch.from_numpy(_arrays(rs, 2, 4, 8, 8))
        out = model(x, timestep=torch.tensor([10, 900]), class_labels=torch.tensor([1, 7])).sample
        loss = F.mse_loss(out, torch.from_numpy(_arrays(rs, 2, 8, 8, 8)))
    elif name == "ddpm_training":
        model.train()
        scheduler = diffusers.DDPMScheduler(num_train_timesteps=1000)
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=1e-2)
        losses = []
        for step in range(3):
            clean = torch.from_numpy(_arrays(rs, 2, 3, 16, 16))
            noise = torch.from_numpy(_arrays(rs, 2, 3, 16, 16))
            t = torch.from_numpy(rs.randint(0, 1000, (2,)))
            noisy = scheduler.add_noise(clean, noise, t)
            if step == 0:
                result["noisy"] = noisy.numpy()
            loss = F.mse_loss(model(noisy, t).sample, noise)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
        result["losses"] = np.array(losses)
        result.update({"param." + k: p.detach().numpy() for k, p in model.named_parameters()})
        return state, result
    elif name == "sampling":
        for label, cls, kw in (("ddim", "DDIMScheduler", {"eta": 0.0}),
                               ("euler", "EulerDiscreteScheduler", {}),
                               ("dpm", "DPMSolverMultistepScheduler", {})):
            scheduler = getattr(diffusers, cls)(num_train_timesteps=1000)
            scheduler.set_timesteps(4)
            sample = torch.from_numpy(_arrays(rs, 1, 3, 16, 16)) * scheduler.init_noise_sigma
            with torch.no_grad():
                for t in scheduler.timesteps:
                    eps = model(scheduler.scale_model_input(sample, t), t).sample
                    sample = scheduler.step(eps, t, sample, **kw).prev_sample
            result[label] = sample.numpy()
            result[label + ".timesteps"] = scheduler.timesteps.numpy()
        return state, result
    elif name == "pipeline":
        pipe = diffusers.DDPMPipeline(unet=model, scheduler=diffusers.DDPMScheduler())
        pipe.set_progress_bar_config(disable=True)
        result["images"] = pipe(batch_size=2, num_inference_steps=3, output_type="np",
                                generator=torch.Generator().manual_seed(0)).images
        return state, result
    elif name == "pretrained":
        mine = "ember" if torch is sys.modules.get("ember") else "torch"
        if mine == "ember":  # the checkpoint PyTorch's save_pretrained wrote
            model = diffusers.UNet2DModel.from_pretrained(os.path.join(directory, "torch"))
            state = {k: v.detach().numpy() for k, v in model.state_dict().items()}
        result.update({"state." + k: v for k, v in state.items()})
        model.save_pretrained(os.path.join(directory, mine), safe_serialization=True)
        with torch.no_grad():
            out = model(torch.from_numpy(_arrays(rs, 1, 3, 16, 16)), 7).sample
        result["sample"] = out.numpy()
        return state, result
    loss.backward()
    result["loss"] = loss.detach().numpy()
    result["sample"] = out.detach().numpy()
    result.update(_grads(model))
    return state, result


if __name__ == "__main__":  # the ember side, under python -m ember.as_torch
    import torch
    import diffusers
    directory, names = sys.argv[1], sys.argv[2].split(",")
    assert torch is sys.modules["ember"], torch
    for name in names:
        weights = dict(np.load(os.path.join(directory, f"{name}_weights.npz")))
        _, result = run(torch, diffusers, name, weights, directory)
        np.savez(os.path.join(directory, f"{name}_ember.npz"), **result)
