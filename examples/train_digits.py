"""Train a small CNN on handwritten digits: the PyTorch training loop, run by ember.

The data is the UCI handwritten-digits set bundled in examples/data/digits.csv.gz (1,797 8x8
images; see examples/data/README.md). Nothing is downloaded. The script is plain PyTorch code:
only the import line says ember.

    python examples/train_digits.py            # full run: >= 95% test accuracy
    python examples/train_digits.py --quick    # a few seconds, for the test suite
"""
import argparse
import gzip
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import ember as torch  # noqa: E402  (a PyTorch program runs on ember by changing this import)
import ember.nn as nn  # noqa: E402
import ember.nn.functional as F  # noqa: E402
from ember.utils.data import DataLoader, TensorDataset  # noqa: E402

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "digits.csv.gz")


def load_digits(test_fraction=0.2, seed=0):
    """The digits as (train, test) TensorDatasets of (1x8x8 float images in [0, 1], int64 labels),
    split by a fixed random permutation."""
    with gzip.open(DATA, "rt") as f:
        table = np.loadtxt(f, delimiter=",", dtype=np.float32)
    images = torch.from_numpy(table[:, :64] / 16.0).reshape(-1, 1, 8, 8)
    labels = torch.from_numpy(table[:, 64].astype(np.int64))
    order = torch.randperm(len(labels), generator=torch.Generator().manual_seed(seed))
    n_test = int(len(labels) * test_fraction)
    test, train = order[:n_test], order[n_test:]
    return TensorDataset(images[train], labels[train]), TensorDataset(images[test], labels[test])


class DigitsCNN(nn.Module):
    """conv-relu-pool twice (8x8 -> 4x4 -> 2x2), then one linear layer to the 10 classes."""

    def __init__(self, width=16):
        super().__init__()
        self.conv1 = nn.Conv2d(1, width, kernel_size=3, padding=1)
        self.conv2 = nn.Conv2d(width, 2 * width, kernel_size=3, padding=1)
        self.fc = nn.Linear(2 * width * 2 * 2, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        return self.fc(torch.flatten(x, 1))


def progress(prefix, done, total, extra="", width=30):
    """One line of a text progress bar, redrawn in place with a carriage return on a terminal;
    into a file or pipe only the finished bar is written, once."""
    tty = sys.stdout.isatty()
    if not tty and done < total:
        return
    filled = width * done // total
    bar = "#" * filled + "-" * (width - filled)
    print(f"{chr(13) if tty else ''}{prefix} [{bar}] {done}/{total} {extra}", end="", flush=True)


@torch.no_grad()
def evaluate(model, loader, device="cpu"):
    model.eval()
    correct = total = 0
    for images, labels in loader:
        images, labels = images.to(device), labels.to(device)
        correct += (model(images).argmax(dim=1) == labels).sum().item()
        total += labels.numel()
    model.train()
    return correct / total


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--lr", type=float, default=1e-2)
    parser.add_argument("--width", type=int, default=16, help="channels of the first conv")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--quick", action="store_true", help="a short run for the test suite")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--compile", nargs="?", const="inductor", default=None,
                        metavar="BACKEND", help="torch.compile the model (backend: inductor, "
                        "or eager, aot_eager)")
    args = parser.parse_args(argv)
    device = torch.device(args.device)
    if args.quick:
        args.epochs = 2

    start = time.perf_counter()
    torch.manual_seed(args.seed)
    train_set, test_set = load_digits(seed=args.seed)
    train_loader = DataLoader(train_set, batch_size=args.batch_size, shuffle=True)
    test_loader = DataLoader(test_set, batch_size=256)

    model = DigitsCNN(args.width).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(
        optimizer, T_max=args.epochs * len(train_loader))
    n_params = sum(p.numel() for p in model.parameters())
    if args.compile:
        model = torch.compile(model, backend=args.compile)
    print(f"digits: {len(train_set)} train / {len(test_set)} test images, "
          f"model {n_params:,} parameters")

    losses = []
    for epoch in range(1, args.epochs + 1):
        running, seen = 0.0, 0
        for step, (images, labels) in enumerate(train_loader, 1):
            images, labels = images.to(device), labels.to(device)
            loss = F.cross_entropy(model(images), labels)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            scheduler.step()
            running += loss.item() * labels.numel()
            seen += labels.numel()
            progress(f"epoch {epoch:2d}/{args.epochs}", step, len(train_loader),
                     f"loss {running / seen:.4f}")
        losses.append(running / seen)
        print(f", test accuracy {evaluate(model, test_loader, device):.2%}")

    accuracy = evaluate(model, test_loader, device)
    elapsed = time.perf_counter() - start
    print(f"final: test accuracy {accuracy:.2%} ({round(accuracy * len(test_set))}/"
          f"{len(test_set)}), train loss {losses[0]:.4f} -> {losses[-1]:.4f}, "
          f"{args.epochs} epochs in {elapsed:.1f} s")
    return {"accuracy": accuracy, "losses": losses, "seconds": elapsed}


if __name__ == "__main__":
    main()
