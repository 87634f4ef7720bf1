#!/usr/bin/env bash
# Installs the Debian packages mixprec needs, only those that are missing (idempotent).
# Works as root or through sudo. Usage: scripts/install-deps.sh [--with-torch]
set -euo pipefail

packages=(cmake g++ ninja-build pkgconf libboost-dev libeigen3-dev libhwy-dev doctest-dev nlohmann-json3-dev libbenchmark-dev)
if [[ "${1:-}" == "--with-torch" ]]; then packages+=(python3-torch); fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[[ ${#missing[@]} -eq 0 ]] && exit 0

if [[ $(id -u) -eq 0 ]]; then as_root=(); else as_root=(sudo); fi
echo "mixprec: installing ${missing[*]}" >&2
"${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq
"${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
