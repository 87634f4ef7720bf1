#!/usr/bin/env python3
"""The training steps of bench_training.cpp in PyTorch (CPU), for a side-by-side column.

One step = zero_grad, forward, CrossEntropyLoss (from logits), backward, torch.optim.Adam's step,
for the MLP 784-1024-1024-10 (batch 256) and the small CNN (batch 64) of bench_networks.hpp,
ending in logits, under float32 and CPU autocast to bfloat16 / float16 (where this PyTorch
supports it; the weights, their gradients and Adam's state stay float32, as under Keras' mixed
policies), with 1 and 2 threads. Prints one line per case: name, milliseconds per step, GFLOP/s
(GEMM FLOPs as bench_training counts them: 3x the forward pass less the first layer's input
gradient), and the BLAS library loaded. Exits 0 with a note if torch is not installed (Debian:
python3-torch; float32 needs libopenblas0-pthread, Debian's reference BLAS is ~30x slower).
"""
import ctypes
import sys
import warnings

try:
    import torch
except ImportError:
    print("torch_training: python3-torch is not installed; no PyTorch column")
    sys.exit(0)

from timing import loaded_blas, seconds_per_call, set_threads  # noqa: E402 (after the torch check)

MLP_LAYERS = [2.0 * 256 * 784 * 1024, 2.0 * 256 * 1024 * 1024, 2.0 * 256 * 1024 * 10]
CNN_LAYERS = [2.0 * 64 * 26 * 26 * 32 * 9, 2.0 * 64 * 11 * 11 * 64 * 288, 2.0 * 64 * 1600 * 128, 2.0 * 64 * 128 * 10]


def step_flops(layers):
    return 3.0 * sum(layers) - layers[0]


def mlp():
    return torch.nn.Sequential(torch.nn.Linear(784, 1024), torch.nn.ReLU(), torch.nn.Linear(1024, 1024),
                               torch.nn.ReLU(), torch.nn.Linear(1024, 10))


def cnn():
    # NCHW, PyTorch's layout; Flatten then sees (64, 5, 5) where Keras sees (5, 5, 64): the same work.
    return torch.nn.Sequential(torch.nn.Conv2d(1, 32, 3), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
                               torch.nn.Conv2d(32, 64, 3), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
                               torch.nn.Flatten(), torch.nn.Linear(1600, 128), torch.nn.ReLU(),
                               torch.nn.Linear(128, 10))


def input_like(batch, shape):
    """i % 255 / 255, as bench_networks.hpp's network_input (NHWC there, NCHW here: same values)."""
    n = batch
    for extent in shape:
        n *= extent
    return (torch.arange(n, dtype=torch.float32) % 255 / 255).reshape(batch, *shape)


def make_step(model, x, y, dtype):
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    loss_fn = torch.nn.CrossEntropyLoss()

    def step():
        optimizer.zero_grad(set_to_none=True)
        if dtype is None:
            loss = loss_fn(model(x), y)
        else:
            with torch.autocast("cpu", dtype=dtype):
                loss = loss_fn(model(x), y)
        loss.backward()
        optimizer.step()
        return loss

    return step


def blas_description():
    """The BLAS libraries loaded, and the kernels OpenBLAS chose for this CPU (OPENBLAS_CORETYPE, if
    set, forces them)."""
    libraries = loaded_blas()
    for path in libraries:
        try:
            corename = ctypes.CDLL(path).openblas_get_corename
        except (OSError, AttributeError):
            continue
        corename.restype = ctypes.c_char_p
        return f"{', '.join(libraries)} (OpenBLAS core {corename().decode()})"
    return ", ".join(libraries) or "none loaded"


def main():
    warnings.filterwarnings("ignore", message="In CPU autocast")  # we report it as unsupported
    labels = lambda batch: torch.arange(batch, dtype=torch.int64) * 7 % 10  # noqa: E731, as bench_training.cpp
    cases = [("mlp", mlp, input_like(256, (784,)), labels(256), step_flops(MLP_LAYERS)),
             ("cnn", cnn, input_like(64, (1, 28, 28)), labels(64), step_flops(CNN_LAYERS))]
    print(f"torch_training: torch {torch.__version__}, BLAS {blas_description()}, "
          f"oneDNN: {torch.backends.mkldnn.is_available()}")
    for threads in (1, 2):
        set_threads(threads)
        for name, network, x, y, flops in cases:
            for label, dtype in (("float32", None), ("autocast_bfloat16", torch.bfloat16),
                                 ("autocast_float16", torch.float16)):
                torch.manual_seed(0)
                try:
                    t = seconds_per_call(make_step(network(), x, y, dtype), loop_seconds=1.0)
                except (RuntimeError, TypeError) as error:  # float16 CPU autocast is missing in older torch
                    print(f"torch train_step {name} {label} threads={threads}: unsupported "
                          f"({str(error).splitlines()[0]})")
                    continue
                print(f"torch train_step {name} {label} threads={threads}: {t * 1e3:.2f} ms, "
                      f"{flops / t * 1e-9:.1f} GFLOP/s")


if __name__ == "__main__":
    main()
