"""PyTorch Lightning programs run the same way in PyTorch and in ember (through
``ember.as_torch``): tests/test_lightning.py runs them in PyTorch in its own process, and
``python -m ember.as_torch tests/_lightning_prog.py DIR`` runs them in ember, writing what each
computed to DIR/ember.npz and its checkpoints under DIR/ember/; each library's
launcher runs the strategy="ddp" program on two ranks (``ddp LIB DIR``: DIR/ddp_LIB.npz). Weights and data are NumPy
arrays made here (the two libraries' random streams differ); nothing is shuffled."""
import os
import sys
import warnings

import numpy as np

N, D, C = 48, 8, 3  # samples, features, classes


def data():
    rs = np.random.RandomState(0)
    x = rs.randn(N, D).astype(np.float32)
    y = (x[:, :C] @ rs.randn(C, C)).argmax(1).astype(np.int64)
    return x, y


def weights():
    rs = np.random.RandomState(1)
    return {"net.0.weight": rs.randn(16, D).astype(np.float32) * 0.3,
            "net.0.bias": rs.randn(16).astype(np.float32) * 0.1,
            "net.2.weight": rs.randn(C, 16).astype(np.float32) * 0.3,
            "net.2.bias": rs.randn(C).astype(np.float32) * 0.1}


def _module_class(torch, L, torchmetrics):
    F = torch.nn.functional

    class Classifier(L.LightningModule):
        """training/validation/test/predict steps, an SGD optimizer with a per-step StepLR,
        losses logged with self.log, accuracy and MSE logged as torchmetrics objects."""

        def __init__(self):
            super().__init__()
            self.net = torch.nn.Sequential(torch.nn.Linear(D, 16), torch.nn.ReLU(),
                                           torch.nn.Linear(16, C))
            self.val_acc = torchmetrics.Accuracy(task="multiclass", num_classes=C)
            self.val_mse = torchmetrics.MeanSquaredError()

        def forward(self, x):
            return self.net(x)

        def training_step(self, batch, batch_idx):
            x, y = batch
            logits = self(x)
            self.logits_dtype = logits.dtype
            loss = F.cross_entropy(logits, y)
            self.log("train_loss", loss, on_step=True, on_epoch=True, sync_dist=True)
            return loss

        def _evaluate(self, batch, stage):
            x, y = batch
            logits = self(x)
            loss = F.cross_entropy(logits, y)
            self.val_acc(logits, y)
            self.val_mse(logits.softmax(-1), F.one_hot(y, C).float())
            self.log(f"{stage}_loss", loss)
            self.log(f"{stage}_acc", self.val_acc)
            self.log(f"{stage}_mse", self.val_mse)

        def validation_step(self, batch, batch_idx):
            self._evaluate(batch, "val")

        def test_step(self, batch, batch_idx):
            self._evaluate(batch, "test")

        def predict_step(self, batch, batch_idx):
            return self(batch[0]).softmax(-1)

        def configure_optimizers(self):
            opt = torch.optim.SGD(self.parameters(), lr=0.5, momentum=0.9)
            sched = torch.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)
            return {"optimizer": opt, "lr_scheduler": {"scheduler": sched, "interval": "step"}}

    return Classifier


def _model(torch, cls):
    model = cls()
    model.load_state_dict({k: torch.from_numpy(v) for k, v in weights().items()})
    return model


def _loader(torch, batch_size=8):
    x, y = data()
    ds = torch.utils.data.TensorDataset(torch.from_numpy(x), torch.from_numpy(y))
    return torch.utils.data.DataLoader(ds, batch_size=batch_size)


def _trainer(L, **kw):
    return L.Trainer(**{**dict(accelerator="cpu", devices=1, logger=False,
                               enable_progress_bar=False, enable_model_summary=False), **kw})


def _state(model):
    return {k: v.detach().float().numpy().copy() for k, v in model.state_dict().items()
            if k.startswith("net.")}


def resume(torch, L, torchmetrics, ckpt_path):
    """One more epoch (the third) from a checkpoint written after the second."""
    model = _model(torch, _module_class(torch, L, torchmetrics))
    trainer = _trainer(L, max_epochs=3, gradient_clip_val=0.5, accumulate_grad_batches=2,
                       enable_checkpointing=False)
    trainer.fit(model, _loader(torch), _loader(torch, 16), ckpt_path=ckpt_path)
    out = {"resume/global_step": np.array(trainer.global_step),
           "resume/val_loss": trainer.callback_metrics["val_loss"].numpy()}
    out.update({"resume/" + k: v for k, v in _state(model).items()})
    return out


def run(torch, L, torchmetrics, directory, resume_from):
    """Everything once: returns {name: array}. Checkpoints go to ``directory``; the resumed fit
    continues from ``resume_from`` (the other library's last.ckpt)."""
    warnings.filterwarnings("ignore")  # Lightning's advice (num_workers ...), not results
    cls = _module_class(torch, L, torchmetrics)
    out = {}

    # fit: clipping, accumulation, per-step LR schedule, a checkpoint per epoch + last.ckpt
    model = _model(torch, cls)
    ckpt = L.pytorch.callbacks.ModelCheckpoint(dirpath=directory, filename="best",
                                               monitor="val_loss", save_last=True)
    trainer = _trainer(L, max_epochs=2, gradient_clip_val=0.5, accumulate_grad_batches=2,
                       callbacks=[ckpt])
    trainer.fit(model, _loader(torch), _loader(torch, 16))
    for k, v in trainer.callback_metrics.items():
        out["fit/" + k] = v.numpy()
    out["fit/global_step"] = np.array(trainer.global_step)
    out["fit/lr"] = np.array(trainer.optimizers[0].param_groups[0]["lr"])
    out.update({"fit/" + k: v for k, v in _state(model).items()})
    for stage, results in (("validate", trainer.validate(model, _loader(torch, 16))),
                           ("test", trainer.test(model, _loader(torch, 16)))):
        for k, v in results[0].items():
            out[f"{stage}/{k}"] = np.array(v)
    out["predict"] = torch.cat(trainer.predict(model, _loader(torch, 16))).numpy()

    out.update(resume(torch, L, torchmetrics, resume_from))

    # Fabric: setup, backward, step
    fabric = L.Fabric(accelerator="cpu", devices=1)
    model = _model(torch, cls).net
    opt = torch.optim.Adam(model.parameters(), lr=0.01)
    model, opt = fabric.setup(model, opt)
    losses = []
    for x, y in fabric.setup_dataloaders(_loader(torch)):
        loss = torch.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        fabric.backward(loss)
        opt.step()
        losses.append(loss.item())
    out["fabric/losses"] = np.array(losses)
    out.update({"fabric/" + k: v.detach().numpy().copy()
                for k, v in model.state_dict().items()})

    # bf16-mixed on the CPU: autocast around the steps
    model = _model(torch, cls)
    trainer = _trainer(L, max_epochs=1, precision="bf16-mixed", enable_checkpointing=False)
    trainer.fit(model, _loader(torch))
    out["bf16/autocast"] = np.array(model.logits_dtype == torch.bfloat16)
    out["bf16/train_loss"] = trainer.callback_metrics["train_loss_epoch"].float().numpy()
    out.update({"bf16/" + k: v for k, v in _state(model).items()})
    return out


def ddp(torch, L, torchmetrics, path):
    """Two epochs with clipping and the per-step LR schedule under strategy="ddp" on two
    ranks (each a DistributedSampler's share of the batches); rank 0 writes its results to
    ``path``."""
    warnings.filterwarnings("ignore")
    model = _model(torch, _module_class(torch, L, torchmetrics))
    trainer = _trainer(L, max_epochs=2, gradient_clip_val=0.5, enable_checkpointing=False,
                       devices=2, strategy="ddp")
    trainer.fit(model, _loader(torch, 4))
    out = {"ddp/train_loss": trainer.callback_metrics["train_loss_epoch"].numpy(),
           "ddp/global_step": np.array(trainer.global_step),
           "ddp/world_size": np.array(trainer.world_size)}
    out.update({"ddp/" + k: v for k, v in _state(model).items()})
    if trainer.global_rank == 0:
        np.savez(path, **out)
    # both ranks leave together, through a torn-down process group: PyTorch's gloo group left
    # to the interpreter's exit sometimes aborts a rank ("terminate called without an active
    # exception"), and its launcher then kills the other, perhaps before the results are out
    trainer.strategy.barrier()
    torch.distributed.destroy_process_group()


if __name__ == "__main__":
    # python -m ember.as_torch tests/_lightning_prog.py DIR: everything but DDP, in ember;
    # python -m {ember,torch}.distributed.run --standalone --nproc-per-node 2
    #     tests/_lightning_prog.py ddp {ember,torch} DIR: strategy="ddp" on two ranks
    if sys.argv[1] != "ddp" or sys.argv[2] == "ember":
        import ember.as_torch
        ember.as_torch.install()  # (ember.distributed.run starts the ranks as plain scripts)
    else:
        import _torchvision_schemas
        _torchvision_schemas.install()  # (torchmetrics imports torchvision)
    import lightning
    import torch
    import torchmetrics
    if sys.argv[1] == "ddp":
        ddp(torch, lightning, torchmetrics, os.path.join(sys.argv[3], f"ddp_{sys.argv[2]}.npz"))
    else:
        directory = sys.argv[1]
        result = run(torch, lightning, torchmetrics, os.path.join(directory, "ember"),
                     os.path.join(directory, "torch", "last.ckpt"))
        np.savez(os.path.join(directory, "ember.npz"), **result)
