#!/usr/bin/env python3
"""PyTorch's CPU matmul at the sizes of bench_gemm, for comparison: C (m x n) = A (m x k) @ B (k x n)
in float32 and bfloat16, with torch.set_num_threads(1) and (2); then, in bfloat16, the GEMMs of the
784-1024-1024-10 MLP's training step at batch 256 (bench_gemm's mixprec_gemm_mlp: ta / tb = 1 means
the operand is a transposed view of a contiguous tensor, as A^T in dW = x^T dy and W^T in dx = dy W^T). Prints GFLOP/s (2 m n k per call,
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
BATCH = 256
LAYERS = [(784, 1024), (1024, 1024), (1024, 10)]  # inputs, units
MLP_SHAPES = [shape for inputs, units in LAYERS for shape in (
    (BATCH, units, inputs, 0, 0),  # forward: x W
    (inputs, units, BATCH, 1, 0),  # weight gradient: x^T dy
    (BATCH, inputs, units, 0, 1),  # input gradient: dy W^T
)]  # m, n, k, ta, tb


def operand(rows, cols, transposed, dtype, generator):
    """A rows x cols operand; when transposed, the transposed view of a contiguous cols x rows tensor."""
    if transposed:
        return (torch.rand(cols, rows, generator=generator) * 2 - 1).to(dtype).t()
    return (torch.rand(rows, cols, generator=generator) * 2 - 1).to(dtype)


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
    for threads in (1, 2):
        set_threads(threads)
        for m, n, k, ta, tb in MLP_SHAPES:
            a = operand(m, k, ta, torch.bfloat16, generator)
            b = operand(k, n, tb, torch.bfloat16, generator)
            gflops = 2.0 * m * n * k / seconds_per_call(lambda: torch.matmul(a, b)) * 1e-9
            print(f"torch_matmul_mlp/bf16/m:{m}/n:{n}/k:{k}/ta:{ta}/tb:{tb}/threads:{threads}  {gflops:8.1f} GFLOP/s")


if __name__ == "__main__":
    main()
