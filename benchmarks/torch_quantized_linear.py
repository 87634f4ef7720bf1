#!/usr/bin/env python3
"""PyTorch's dynamically quantized nn.Linear (torch.ao.quantization.quantize_dynamic, qint8 weights,
the input quantized per call) against float32 nn.Linear, at the shapes of bench_int8's dense/* cases:
x (m x in) -> (m x out) for the MLP's inference layers at batch 256 (784 -> 1024, 1024 -> 1024,
1024 -> 10) and 512^3, with bias, on 1 and 2 threads (torch.set_num_threads, and OpenBLAS's own count).
Prints GOP/s (2 m in out per call, wall time, the fastest of three timed loops) and the int8 / float32
speed-up. Exits 0 with a message when torch is missing (Debian: apt-get install python3-torch).

The quantized engine is PyTorch's default for the build (Debian's 1.13 has onednn and qnnpack, no
fbgemm); --engine NAME picks another one. float32 runs in whatever libblas.so.3 the system provides
(printed; OpenBLAS with libopenblas0-pthread)."""
import argparse
import sys
import warnings

try:
    import torch
except ImportError:
    print("torch_quantized_linear.py: PyTorch is not installed (Debian package python3-torch); skipped.")
    sys.exit(0)

from timing import loaded_blas, seconds_per_call, set_threads  # noqa: E402 (after the torch check)

SHAPES = [(256, 784, 1024), (256, 1024, 1024), (256, 1024, 10), (512, 512, 512)]  # m, in, out


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--engine", help="torch.backends.quantized.engine (default: the build's default)")
    args = parser.parse_args()
    engines = [e for e in torch.backends.quantized.supported_engines if e != "none"]
    if args.engine:
        if args.engine not in engines:
            sys.exit(f"engine {args.engine!r} is not supported here; supported: {', '.join(engines)}")
        torch.backends.quantized.engine = args.engine
    warnings.filterwarnings("ignore")  # quantize_dynamic's deprecation notes
    print(f"torch {torch.__version__}; quantized engine {torch.backends.quantized.engine} (supported: "
          f"{', '.join(engines)}); float32 BLAS: {', '.join(loaded_blas()) or 'none loaded'}")
    torch.manual_seed(1)
    with torch.inference_mode():
        for threads in (1, 2):
            set_threads(threads)
            for m, inputs, outputs in SHAPES:
                linear = torch.nn.Linear(inputs, outputs)
                quantized = torch.ao.quantization.quantize_dynamic(
                    torch.nn.Sequential(linear), {torch.nn.Linear}, dtype=torch.qint8)
                x = torch.randn(m, inputs)
                ops = 2.0 * m * inputs * outputs
                f32 = ops / seconds_per_call(lambda: linear(x)) * 1e-9
                int8 = ops / seconds_per_call(lambda: quantized(x)) * 1e-9
                name = f"m:{m}/in:{inputs}/out:{outputs}/threads:{threads}"
                print(f"torch_linear/f32/{name}  {f32:8.1f} GOP/s")
                print(f"torch_linear/int8_dynamic/{name}  {int8:8.1f} GOP/s  ({int8 / f32:.2f}x float32)")


if __name__ == "__main__":
    main()
