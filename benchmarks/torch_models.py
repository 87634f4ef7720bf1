#!/usr/bin/env python3
"""The networks of bench_models.cpp in PyTorch (CPU), for a side-by-side column.

MLP 784-1024-1024-10 (batch 256) and the small CNN (batch 64), forward only, under float32 and
CPU autocast to bfloat16 / float16 (where this PyTorch supports it), and the MLP with its Linear
layers quantized to int8 (torch.ao.quantization.quantize_dynamic), with 1 and 2 threads.
Prints one line per case: name, milliseconds per pass, GFLOP/s. Exits 0 with a note if torch
is not installed (Debian: python3-torch).
"""
import sys
import warnings

try:
    import torch
except ImportError:
    print("torch_models: python3-torch is not installed; no PyTorch column")
    sys.exit(0)

from timing import seconds_per_call, set_threads  # noqa: E402 (after the torch check)

MLP_FLOPS = 2.0 * 256 * (784 * 1024 + 1024 * 1024 + 1024 * 10)
CNN_FLOPS = 2.0 * 64 * (26 * 26 * 32 * 9 + 11 * 11 * 64 * 288 + 1600 * 128 + 128 * 10)


def mlp():
    return torch.nn.Sequential(torch.nn.Linear(784, 1024), torch.nn.ReLU(), torch.nn.Linear(1024, 1024),
                               torch.nn.ReLU(), torch.nn.Linear(1024, 10), torch.nn.Softmax(dim=-1))


def cnn():
    return torch.nn.Sequential(torch.nn.Conv2d(1, 32, 3), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
                               torch.nn.Conv2d(32, 64, 3), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
                               torch.nn.Flatten(), torch.nn.Linear(1600, 128), torch.nn.ReLU(),
                               torch.nn.Linear(128, 10), torch.nn.Softmax(dim=-1))


def seconds_per_pass(model, x, dtype):
    with torch.no_grad():
        context = torch.autocast("cpu", dtype=dtype) if dtype is not None else torch.no_grad()
        with context:
            return seconds_per_call(lambda: model(x))


def main():
    warnings.filterwarnings("ignore", message="In CPU autocast")  # we report it as unsupported
    cases = [("mlp", mlp(), torch.rand(256, 784), MLP_FLOPS), ("cnn", cnn(), torch.rand(64, 1, 28, 28), CNN_FLOPS)]
    for threads in (1, 2):
        set_threads(threads)
        for name, model, x, flops in cases:
            for label, dtype in (("float32", None), ("autocast_bfloat16", torch.bfloat16), ("autocast_float16", torch.float16)):
                try:
                    t = seconds_per_pass(model, x, dtype)
                except (RuntimeError, TypeError) as error:  # float16 CPU autocast is missing in older torch
                    print(f"torch {name} {label} threads={threads}: unsupported ({str(error).splitlines()[0]})")
                    continue
                print(f"torch {name} {label} threads={threads}: {t * 1e3:.2f} ms, {flops / t * 1e-9:.1f} GFLOP/s")
        # int8: dynamic quantization of the MLP's nn.Linear layers (int8 weights, inputs quantized
        # per call), PyTorch's counterpart of model.quantize("int8").
        quantized = torch.ao.quantization.quantize_dynamic(mlp(), {torch.nn.Linear}, dtype=torch.qint8)
        t = seconds_per_pass(quantized, cases[0][2], None)
        print(f"torch mlp dynamic_int8 threads={threads}: {t * 1e3:.2f} ms, {MLP_FLOPS / t * 1e-9:.1f} GFLOP/s")


if __name__ == "__main__":
    main()
