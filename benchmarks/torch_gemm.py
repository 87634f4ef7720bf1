#!/usr/bin/env python3
"""PyTorch's CPU matmul at the sizes of bench_gemm, for comparison: C (m x n) = A (m x k) @ B (k x n)
in float32 and bfloat16, with torch.set_num_threads(1) and (2). Prints GFLOP/s (2 m n k per call,
wall time, mean over the fastest of three timed loops). Exits 0 with a message when torch is missing
(Debian: apt-get install python3-torch).

Debian's torch does its float32 matmul in whatever libblas.so.3 the system provides (the reference
BLAS unless e.g. libopenblas0-pthread is installed; LD_LIBRARY_PATH can pick one), so the BLAS in
use is printed too."""
import ctypes
import sys
import time

try:
    import torch
except ImportError:
    print("torch_gemm.py: PyTorch is not installed (Debian package python3-torch); skipped.")
    sys.exit(0)

SIZES = [(256, 256, 256), (512, 512, 512), (1024, 1024, 1024), (256, 1024, 1024)]  # m, n, k
DTYPES = [("f32", torch.float32), ("bf16", torch.bfloat16)]
LOOP_SECONDS = 0.3


def seconds_per_call(a, b):
    torch.matmul(a, b)  # warm-up: allocations, oneDNN primitive creation
    calls = 1
    while True:  # find a loop length of about LOOP_SECONDS
        start = time.perf_counter()
        for _ in range(calls):
            torch.matmul(a, b)
        elapsed = time.perf_counter() - start
        if elapsed >= LOOP_SECONDS / 3:
            break
        calls *= 2
    calls = max(1, int(calls * LOOP_SECONDS / elapsed))
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        for _ in range(calls):
            torch.matmul(a, b)
        best = min(best, (time.perf_counter() - start) / calls)
    return best


def loaded_blas():
    with open("/proc/self/maps") as maps:
        return sorted({line.split()[-1] for line in maps if "blas" in line.split()[-1]})


def set_threads(threads):
    torch.set_num_threads(threads)
    for path in loaded_blas():  # torch does not pass its thread count on to OpenBLAS
        try:
            ctypes.CDLL(path).openblas_set_num_threads(threads)
        except (OSError, AttributeError):
            pass


def main():
    print(f"torch {torch.__version__}, matmul on CPU; BLAS: {', '.join(loaded_blas()) or 'none loaded'}")
    generator = torch.Generator().manual_seed(1)
    for threads in (1, 2):
        set_threads(threads)
        for name, dtype in DTYPES:
            for m, n, k in SIZES:
                a = (torch.rand(m, k, generator=generator) * 2 - 1).to(dtype)
                b = (torch.rand(k, n, generator=generator) * 2 - 1).to(dtype)
                gflops = 2.0 * m * n * k / seconds_per_call(a, b) * 1e-9
                print(f"torch_matmul/{name}/m:{m}/n:{n}/k:{k}/threads:{threads}  {gflops:8.1f} GFLOP/s")


if __name__ == "__main__":
    main()
