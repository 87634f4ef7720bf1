"""Timing and thread control shared by the PyTorch comparison scripts (benchmarks/torch_*.py)."""
import ctypes
import time

import torch


def seconds_per_call(function, loop_seconds=0.3):
    """Best of three timed loops of about loop_seconds each, after one warm-up call."""
    function()  # warm-up: allocations, oneDNN primitive creation
    calls = 1
    while True:  # find a loop length of about loop_seconds
        start = time.perf_counter()
        for _ in range(calls):
            function()
        elapsed = time.perf_counter() - start
        if elapsed >= loop_seconds / 3:
            break
        calls *= 2
    calls = max(1, int(calls * loop_seconds / elapsed))
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        for _ in range(calls):
            function()
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
