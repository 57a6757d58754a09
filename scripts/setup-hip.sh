#!/usr/bin/env bash
# Sets up the HIP compile check (src/validate/compile.rs) on Debian 12:
#  1. the ROCm compiler from bookworm (hipcc, clang++-15, ROCm 5.2.3 device libraries);
#  2. the public headers of the pinned library releases, for snippets that call
#     rocBLAS / rocSOLVER: the binary packages librocblas-dev 6.4.4-* and
#     librocsolver-dev 6.4.3-* from Debian trixie/sid, downloaded with a PRIVATE apt state
#     under rocm_sources/.apt-deb/ (the system's /etc/apt is never read or changed) and
#     unpacked with `dpkg -x` into rocm_sources/headers/<lib>-<version>/ (usr/include is
#     what matters). Nothing from those packages is installed.
# Safe to run again: every step is a no-op when done.
set -euo pipefail
cd "$(dirname "$0")/.."

DEVICE_LIBS=/usr/lib/x86_64-linux-gnu/amdgcn/bitcode
KEYRING=/usr/share/keyrings/debian-archive-keyring.gpg
MIRROR=http://deb.debian.org/debian
# package  version-prefix  folder under rocm_sources/headers/
PINS=(
  "librocblas-dev 6.4.4- rocblas-6.4.4"
  "librocsolver-dev 6.4.3- rocsolver-6.4.3"
)

die() { echo "setup-hip: $*" >&2; exit 1; }
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || die "run as root, or install sudo: apt-get needs root to install the compiler"
  SUDO="sudo"
fi

# 1. The compiler.
if command -v clang++-15 >/dev/null && [ -f "$DEVICE_LIBS/ocml.bc" ] \
  && [ -f /usr/include/hip/hip_runtime.h ]; then
  echo "setup-hip: compiler present: $(clang++-15 --version | head -n1)"
else
  echo "setup-hip: installing hipcc, libamdhip64-dev and rocm-device-libs (~70 MB)"
  if ! $SUDO apt-get install -y -qq --no-install-recommends hipcc libamdhip64-dev rocm-device-libs; then
    $SUDO apt-get update -qq || die "apt-get update failed: check the network and /etc/apt/sources.list"
    $SUDO apt-get install -y -qq --no-install-recommends hipcc libamdhip64-dev rocm-device-libs \
      || die "could not install hipcc libamdhip64-dev rocm-device-libs (they are in Debian 12 bookworm main)"
  fi
  command -v clang++-15 >/dev/null || die "clang++-15 is still missing after installing hipcc"
  [ -f "$DEVICE_LIBS/ocml.bc" ] || die "device libraries missing in $DEVICE_LIBS after installing rocm-device-libs"
fi

# 2. The library headers.
need=()
for pin in "${PINS[@]}"; do
  read -r pkg _ dir <<<"$pin"
  [ -d "rocm_sources/headers/$dir/usr/include" ] || need+=("$pin")
done
if [ ${#need[@]} -eq 0 ]; then
  echo "setup-hip: headers present in rocm_sources/headers/"
else
  command -v dpkg >/dev/null || die "dpkg not found (this script expects Debian)"
  [ -f "$KEYRING" ] || die "$KEYRING missing: apt-get install debian-archive-keyring"
  D="$PWD/rocm_sources/.apt-deb"
  mkdir -p "$D/sources.d" "$D/lists/partial" "$D/cache/archives/partial"
  entry="# Written by scripts/setup-hip.sh: a private apt configuration, used only with -o Dir::... options.
Types: deb
URIs: $MIRROR
Suites: trixie sid
Components: main
Architectures: amd64
Signed-By: $KEYRING"
  fresh=0
  if [ "$(cat "$D/sources.d/rocqa-hip.sources" 2>/dev/null)" != "$entry" ]; then
    printf '%s\n' "$entry" >"$D/sources.d/rocqa-hip.sources"
    fresh=1
  fi
  APT=(-o Dir::Etc::SourceList=/dev/null -o "Dir::Etc::SourceParts=$D/sources.d"
       -o "Dir::State::Lists=$D/lists" -o "Dir::Cache=$D/cache")
  # As root, apt drops to the user _apt, who cannot write into our private temp folder;
  # it would download as root anyway, with a warning. Say so up front.
  [ "$(id -u)" -ne 0 ] || APT+=(-o APT::Sandbox::User=root)
  if [ $fresh -eq 1 ] || ! ls "$D"/lists/*_Packages* >/dev/null 2>&1; then
    echo "setup-hip: updating the private apt lists (trixie, sid) in $D"
    LC_ALL=C apt-get "${APT[@]}" -q update >/dev/null \
      || die "private apt-get update failed: check that $MIRROR is reachable"
  fi
  for pin in "${need[@]}"; do
    read -r pkg prefix dir <<<"$pin"
    ver="$(LC_ALL=C apt-cache "${APT[@]}" madison "$pkg" | awk -v p="$prefix" '$3 ~ "^"p {print $3}' \
      | sort -V | tail -n1)"
    if [ -z "$ver" ]; then
      avail="$(LC_ALL=C apt-cache "${APT[@]}" madison "$pkg" | awk '{print $3}' | tr '\n' ' ')"
      die "no $pkg ${prefix}* in trixie/sid (available: ${avail:-none}); delete $D and run again, or update the pin in this script"
    fi
    echo "setup-hip: downloading $pkg=$ver"
    tmp="$(mktemp -d "$PWD/rocm_sources/.hip-XXXXXX")"
    trap 'rm -rf "$tmp"' EXIT
    (cd "$tmp" && LC_ALL=C apt-get "${APT[@]}" -q download "$pkg=$ver" >/dev/null) \
      || die "apt-get download $pkg=$ver failed (the mirror may have dropped that version: delete $D and run again)"
    deb="$(ls "$tmp"/*.deb)"
    mkdir -p "$tmp/x"
    dpkg -x "$deb" "$tmp/x" || die "dpkg -x $deb failed"
    [ -d "$tmp/x/usr/include" ] || die "$pkg=$ver holds no usr/include"
    printf 'package=%s\nversion=%s\nsha256=%s\n' "$pkg" "$ver" "$(sha256sum "$deb" | cut -d' ' -f1)" \
      >"$tmp/x/SOURCE"
    mkdir -p rocm_sources/headers
    rm -rf "rocm_sources/headers/$dir"
    mv "$tmp/x" "rocm_sources/headers/$dir"
    rm -rf "$tmp"
    trap - EXIT
    echo "setup-hip: rocm_sources/headers/$dir/usr/include ($pkg $ver)"
  done
fi

# 3. A smoke test: device code generation for gfx90a, and a host snippet against the headers.
t="$(mktemp -d)"
trap 'rm -rf "$t"' EXIT
cat >"$t/k.hip" <<'EOF'
#include <hip/hip_runtime.h>
__global__ void k(float* x) { x[threadIdx.x] *= 2.0f; }
EOF
clang++-15 -x hip --offload-arch=gfx90a --rocm-path=/usr --rocm-device-lib-path="$DEVICE_LIBS" \
  --offload-device-only -S -o /dev/null "$t/k.hip" \
  || die "clang++-15 cannot generate gfx90a device code: reinstall hipcc rocm-device-libs"
cat >"$t/b.hip" <<'EOF'
#include <rocblas/rocblas.h>
void f(rocblas_handle h, float* x) { float a = 2; rocblas_sscal(h, 4, &a, x, 1); }
EOF
clang++-15 -x hip --offload-arch=gfx90a --rocm-path=/usr --rocm-device-lib-path="$DEVICE_LIBS" \
  -I rocm_sources/headers/rocblas-6.4.4/usr/include -fsyntax-only "$t/b.hip" \
  || die "a rocblas_sscal snippet does not compile against rocm_sources/headers/rocblas-6.4.4"
echo "setup-hip: ok ($(clang++-15 --version | head -n1))"
