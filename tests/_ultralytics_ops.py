"""Ultralytics YOLO runs the same way in PyTorch and in ember (through ``ember.as_torch``):
tests/test_ultralytics.py runs ``python tests/_ultralytics_ops.py torch DIR NAMES`` and
``python -m ember.as_torch tests/_ultralytics_ops.py ember DIR NAMES`` side by side, each
writing what every case computed to DIR/NAME_<library>.npz (in subprocesses both: importing
ultralytics replaces ``torch.save``). The model is YOLOv8n built from its yaml with a seeded
initialisation (no weights are downloaded); the image comes from NumPy."""
import os
import sys
import warnings

import numpy as np

CASES = {
    # eval forward (the decoded boxes and class scores), then ultralytics' own NMS in PyTorch
    # ops (its argsort of tied scores picks the same boxes only with ATen's sort order)
    "predict": "DetectionModel eval forward, TorchNMS",
    # the training loss (TaskAlignedAssigner, CIoU box loss, BCE, distribution focal loss)
    # on a synthetic batch, and every parameter's gradient
    "loss": "v8DetectionLoss and its gradients",
}


def _model(torch, train):
    from ultralytics.nn.tasks import DetectionModel
    torch.manual_seed(0)
    model = DetectionModel("yolov8n.yaml", nc=3, verbose=False)
    return model.train() if train else model.eval()


def run(torch, name):
    warnings.simplefilter("ignore")
    rs = np.random.RandomState(0)
    result = {}
    if name == "predict":
        from ultralytics.utils.nms import TorchNMS
        from ultralytics.utils.ops import xywh2xyxy
        model = _model(torch, False)
        x = torch.from_numpy(rs.rand(1, 3, 64, 64).astype(np.float32))
        with torch.no_grad():
            out = model(x)[0][0].T  # (anchors, 4 + classes)
        boxes, scores = xywh2xyxy(out[:, :4]), out[:, 4:].max(1).values
        result["predictions"] = out.numpy()
        result["nms"] = TorchNMS.nms(boxes, scores, 0.5).numpy()
        result["fast_nms"] = TorchNMS.fast_nms(boxes, scores, 0.5).numpy()
    elif name == "loss":
        from ultralytics.cfg import get_cfg
        model = _model(torch, True)
        model.args = get_cfg()
        batch = {"img": torch.from_numpy(rs.rand(2, 3, 64, 64).astype(np.float32)),
                 "batch_idx": torch.tensor([0.0, 0.0, 1.0]),
                 "cls": torch.tensor([[0.0], [2.0], [1.0]]),
                 "bboxes": torch.tensor([[0.5, 0.5, 0.3, 0.4], [0.3, 0.6, 0.2, 0.2],
                                         [0.6, 0.4, 0.5, 0.3]])}
        loss, items = model.loss(batch)
        loss.sum().backward()
        result.update({k: np.array(float(v)) for k, v in items.items()})
        result.update({"grad." + k: p.grad.numpy() for k, p in model.named_parameters()
                       if p.grad is not None})
    return result


if __name__ == "__main__":  # each side, as helpers.pytorch_beside_ember runs it
    library, directory, names = sys.argv[1], sys.argv[2], sys.argv[3].split(",")
    import torch
    assert (sys.modules.get("ember") is torch) == (library == "ember"), library
    for name in names:
        np.savez(os.path.join(directory, f"{name}_{library}.npz"), **run(torch, name))
