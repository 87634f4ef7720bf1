#!/usr/bin/env python3
"""PyTorch's CPU dtype conversions at the sizes of bench_convert, for comparison: out.copy_(x) into
a preallocated tensor (no allocation, as mixprec::kernels::convert), one thread. Prints GB/s counting bytes
read + bytes written, as bench_convert does. Exits 0 with a message when torch is missing (Debian:
apt-get install python3-torch)."""
import sys

try:
    import torch
except ImportError:
    print("torch_convert.py: PyTorch is not installed (Debian package python3-torch); skipped.")
    sys.exit(0)

from timing import seconds_per_call, set_threads  # noqa: E402 (after the torch check)

PAIRS = [("f32_to_bf16", torch.float32, torch.bfloat16), ("bf16_to_f32", torch.bfloat16, torch.float32),
         ("f32_to_f16", torch.float32, torch.float16), ("f16_to_f32", torch.float16, torch.float32),
         ("f64_to_f32", torch.float64, torch.float32)]
SIZES = [1 << 10, 1 << 16, 1 << 24]


def main():
    set_threads(1)
    print(f"torch {torch.__version__}, Tensor.copy_ between dtypes on CPU, 1 thread")
    generator = torch.Generator().manual_seed(1)
    for name, source, target in PAIRS:
        for n in SIZES:
            x = (torch.randn(n, generator=generator, dtype=torch.float64) * 3).to(source)
            out = torch.empty(n, dtype=target)
            seconds = seconds_per_call(lambda: out.copy_(x))
            gbytes = n * (x.element_size() + out.element_size()) / seconds * 1e-9
            print(f"torch_convert/{name}/{n}  {gbytes:8.2f} GB/s")


if __name__ == "__main__":
    main()
