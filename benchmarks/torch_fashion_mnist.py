#!/usr/bin/env python3
"""One epoch of bench_fashion_mnist.cpp (the demo's training) in PyTorch (CPU).

The 60000 Fashion-MNIST training images, read from Debian's dataset-fashion-mnist (the gz IDX
files, gzip + numpy) and scaled to [0, 1]; the demo's CNN (NCHW: Conv2d(1, 32, 3) ReLU
MaxPool2d(2) Conv2d(32, 64, 3) ReLU MaxPool2d(2) Flatten Dropout(0.3) Linear(1600, 128) ReLU
Linear(128, 10)) and MLP (Linear(784, 512) ReLU Dropout(0.2) Linear(512, 256) ReLU
Linear(256, 10)), both ending in logits; CrossEntropyLoss; torch.optim.Adam (lr 2e-3 for the CNN,
1e-3 for the MLP, as the demo) with CosineAnnealingLR(T_max = 5 epochs of steps) stepped per batch (the demo's CosineDecay over its
default 5 epochs); batch 64, a new random order (fixed seed) gathered batch by batch as fit()
does; the epoch's loss and accuracy accumulated as Keras' fit reports them. Per case: a fresh
model, 5 warm-up steps, then one timed epoch (938 steps). float32 and torch.autocast("cpu",
torch.bfloat16) (weights, gradients and Adam's state stay float32, as under Keras' mixed
policies); float16 CPU autocast is tried and reported unsupported by PyTorch 1.13. Threads 1 and
2 (torch.set_num_threads, and OpenBLAS's own count).

Prints one line per case: seconds per epoch, ms per step, the epoch's accuracy. Exits 0 with a
note if torch is not installed (Debian: python3-torch; float32 needs libopenblas0-pthread,
Debian's reference BLAS is ~30x slower) or the dataset is missing.
  torch_fashion_mnist.py [--threads 1,2] [--models cnn,mlp] [--dtypes float32,bfloat16,float16]
"""
import argparse
import gzip
import os
import sys
import time
import warnings

try:
    import numpy as np
    import torch
except ImportError:
    print("torch_fashion_mnist: python3-torch is not installed; no PyTorch column")
    sys.exit(0)

from timing import set_threads  # noqa: E402 (after the torch check)
from torch_training import blas_description  # noqa: E402

DATA = "/usr/share/datasets/fashion-mnist"
BATCH, DEMO_EPOCHS, WARMUP_STEPS, SEED = 64, 5, 5, 2026


def read_idx(name, offset):
    with gzip.open(os.path.join(DATA, name), "rb") as f:
        return np.frombuffer(f.read(), dtype=np.uint8, offset=offset)


def load_training():
    x = read_idx("train-images-idx3-ubyte.gz", 16).reshape(-1, 1, 28, 28).astype(np.float32) / 255.0
    y = read_idx("train-labels-idx1-ubyte.gz", 8).astype(np.int64)
    return torch.from_numpy(x), torch.from_numpy(y)


def cnn():
    return torch.nn.Sequential(torch.nn.Conv2d(1, 32, 3), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
                               torch.nn.Conv2d(32, 64, 3), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
                               torch.nn.Flatten(), torch.nn.Dropout(0.3), torch.nn.Linear(1600, 128),
                               torch.nn.ReLU(), torch.nn.Linear(128, 10))


def mlp():
    return torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(784, 512), torch.nn.ReLU(), torch.nn.Dropout(0.2),
                               torch.nn.Linear(512, 256), torch.nn.ReLU(), torch.nn.Linear(256, 10))


def epoch_seconds(network, x, y, dtype):
    """A fresh model; WARMUP_STEPS steps, then one timed epoch. Returns (seconds, accuracy)."""
    torch.manual_seed(0)
    model = network()
    model.train()
    steps = (len(x) + BATCH - 1) // BATCH
    optimizer = torch.optim.Adam(model.parameters(), lr=2e-3 if network is cnn else 1e-3)
    schedule = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=DEMO_EPOCHS * steps)
    loss_fn = torch.nn.CrossEntropyLoss()

    def step(xb, yb):
        optimizer.zero_grad(set_to_none=True)
        if dtype is None:
            logits = model(xb)
            loss = loss_fn(logits, yb)
        else:
            with torch.autocast("cpu", dtype=dtype):
                logits = model(xb)
                loss = loss_fn(logits, yb)
        loss.backward()
        optimizer.step()
        schedule.step()
        return loss.item(), (logits.argmax(1) == yb).sum().item()

    for i in range(WARMUP_STEPS):
        step(x[i * BATCH:(i + 1) * BATCH], y[i * BATCH:(i + 1) * BATCH])
    order = torch.randperm(len(x), generator=torch.Generator().manual_seed(SEED))
    correct = 0
    start = time.perf_counter()
    for first in range(0, len(x), BATCH):
        rows = order[first:first + BATCH]
        _, right = step(x[rows], y[rows])
        correct += right
    return time.perf_counter() - start, correct / len(x)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", default="1,2")
    parser.add_argument("--models", default="cnn,mlp")
    parser.add_argument("--dtypes", default="float32,bfloat16,float16")
    args = parser.parse_args()
    if not os.path.isdir(DATA):
        print(f"torch_fashion_mnist: {DATA} is missing (Debian: dataset-fashion-mnist); no PyTorch column")
        return
    warnings.filterwarnings("ignore", message="In CPU autocast")  # we report it as unsupported
    x, y = load_training()
    networks = {"cnn": cnn, "mlp": mlp}
    dtypes = {"float32": ("float32", None), "bfloat16": ("autocast_bfloat16", torch.bfloat16),
              "float16": ("autocast_float16", torch.float16)}
    steps = (len(x) + BATCH - 1) // BATCH
    print(f"torch_fashion_mnist: torch {torch.__version__}, BLAS {blas_description()}, "
          f"oneDNN: {torch.backends.mkldnn.is_available()}, OMP_WAIT_POLICY={os.environ.get('OMP_WAIT_POLICY', 'unset')}")
    for threads in (int(t) for t in args.threads.split(",")):
        set_threads(threads)
        for name in args.models.split(","):
            for label, dtype in (dtypes[d] for d in args.dtypes.split(",")):
                try:
                    seconds, accuracy = epoch_seconds(networks[name], x, y, dtype)
                except (RuntimeError, TypeError) as error:  # float16 CPU autocast is missing in torch 1.13
                    print(f"torch epoch {name} {label} threads={threads}: unsupported ({str(error).splitlines()[0]})")
                    continue
                print(f"torch epoch {name} {label} threads={threads}: {seconds:.2f} s, "
                      f"{seconds / steps * 1e3:.2f} ms/step, accuracy {accuracy:.4f}", flush=True)


if __name__ == "__main__":
    main()
