#!/usr/bin/env bash
# Installs the Debian packages mixprec needs, only those that are missing (idempotent).
# Works as root or through sudo. Usage: scripts/install-deps.sh [--bench | --with-torch | --plot | --clang]
#   --bench       also OpenBLAS (libopenblas0-pthread), so that PyTorch's float32 baselines in the
#                 benchmarks run on it rather than on Debian's reference BLAS (~30x slower)
#   --with-torch  that and PyTorch (python3-torch) itself
#   --plot        also matplotlib (python3-matplotlib), for scripts/plot_history.py
#   --clang       also clang and its runtimes (ASan, UBSan, libFuzzer), for the sanitize preset
#                 (the suite under ASan + UBSan, and the libFuzzer targets), and LLVM's linker
#                 (lld), which links those programs 6x faster than GNU ld
set -euo pipefail

# zlib1g-dev and dataset-fashion-mnist: the demo trains on Fashion-MNIST (a test runs it briefly).
packages=(cmake g++ ninja-build pkgconf libboost-dev libeigen3-dev libhwy-dev libre2-dev doctest-dev nlohmann-json3-dev
          libbenchmark-dev zlib1g-dev dataset-fashion-mnist)
case "${1:-}" in
  --bench) packages+=(libopenblas0-pthread) ;;
  --with-torch) packages+=(libopenblas0-pthread python3-torch) ;;
  --plot) packages+=(python3-matplotlib) ;;
  --clang) packages+=(clang libclang-rt-dev lld) ;;
esac

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[[ ${#missing[@]} -eq 0 ]] && exit 0

if [[ $(id -u) -eq 0 ]]; then as_root=(); else as_root=(sudo); fi
echo "mixprec: installing ${missing[*]}" >&2
"${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq
"${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
