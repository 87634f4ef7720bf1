#!/usr/bin/env python3
"""PyTorch's CPU matmul at the sizes of bench_gemm, for comparison: C (m x n) = A (m x k) @ B (k x n)
in float32 and bfloat16, with torch.set_num_threads(1) and (2). Prints GFLOP/s (2 m n k per call,
wall time, mean over the fastest of three timed loops). Exits 0 with a message when torch is missing
(Debian: apt-get install python3-torch).

Debian's torch does its float32 matmul in whatever libblas.so.3 the system provides (the reference
BLAS unless e.g. libopenblas0-pthread is installed; LD_LIBRARY_PATH can pick one), so the BLAS in
use is printed too."""
import sys

try:
    import torch
except ImportError:
    print("torch_gemm.py: PyTorch is not installed (Debian package python3-torch); skipped.")
    sys.exit(0)

from timing import loaded_blas, seconds_per_call, set_threads  # noqa: E402 (after the torch check)

SIZES = [(256, 256, 256), (512, 512, 512), (1024, 1024, 1024), (256, 1024, 1024)]  # m, n, k
DTYPES = [("f32", torch.float32), ("bf16", torch.bfloat16)]


def main():
    print(f"torch {torch.__version__}, matmul on CPU; BLAS: {', '.join(loaded_blas()) or 'none loaded'}")
    generator = torch.Generator().manual_seed(1)
    for threads in (1, 2):
        set_threads(threads)
        for name, dtype in DTYPES:
            for m, n, k in SIZES:
                a = (torch.rand(m, k, generator=generator) * 2 - 1).to(dtype)
                b = (torch.rand(k, n, generator=generator) * 2 - 1).to(dtype)
                gflops = 2.0 * m * n * k / seconds_per_call(lambda: torch.matmul(a, b)) * 1e-9
                print(f"torch_matmul/{name}/m:{m}/n:{n}/k:{k}/threads:{threads}  {gflops:8.1f} GFLOP/s")


if __name__ == "__main__":
    main()
