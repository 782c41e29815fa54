#!/usr/bin/env bash
# Builds every component of this workspace for wasm32-wasip2 and installs
# them as plugins/dist/<name>.wasm, with plugins/dist/SOURCES recording the
# hash of the sources they were built from (checked by the host's tests).
#
#   plugins/build.sh           build and install into dist/
#   plugins/build.sh --check   build, then fail if dist/ is not what these
#                              sources build to (byte for byte when the
#                              toolchain is the one recorded in SOURCES)
#
# Toolchain: rustup's when it has the wasm32-wasip2 target; otherwise
# Debian's rustc-web with -Zbuild-std (installed with apt-get if missing).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(dirname "$here")
dist="$here/dist"
components=(standard-price-book sandbox-payments standard-shaper hostile http-probe stripe-payments adyen-payments)
debian_packages=(rustc-web cargo-web rust-web-src rust-web-llvm lld wasi-libc)

check=0
case "${1:-}" in
  --check) check=1 ;;
  "") ;;
  *) echo "usage: $0 [--check]" >&2; exit 2 ;;
esac

# The source listing the host test recomputes (host/plugins/src/defaults.rs):
# every input of the build, as `sha256sum` lines sorted by path.
source_listing() {
  (cd "$root" && find wit plugins \
      \( -path plugins/target -o -path plugins/dist \) -prune -o \
      -type f \( -name '*.rs' -o -name '*.wit' -o -name Cargo.toml \
                 -o -name Cargo.lock -o -name build.sh \) -print \
    | LC_ALL=C sort | xargs sha256sum)
}

export CARGO_TARGET_DIR="$here/target"
# Paths of this checkout and of the cargo registry end up in panic
# locations; map them to fixed names so builds are byte-reproducible
# wherever the repository lives.
cargo_home="${CARGO_HOME:-$HOME/.cargo}"
remap="--remap-path-prefix=$here=/plugins --remap-path-prefix=$cargo_home=/cargo"
# A 64 KiB shadow stack instead of the default 1 MiB. The stack sits at the
# bottom of linear memory, below the data and the heap, so with 1 MiB every
# call touches pages a megabyte apart; with 64 KiB everything a call
# touches is in the first few hundred KiB, which the host's pooled
# instances reset cheaply (see BENCHMARKS.md, "Plugin engine").
layout="-C link-arg=-zstack-size=65536"
rustflags="$remap $layout"

if command -v rustup >/dev/null && rustup target list --installed 2>/dev/null | grep -qx wasm32-wasip2; then
  toolchain="rustup $(rustc -V)"
  (cd "$here" && RUSTFLAGS="$rustflags" cargo build --release --locked --target wasm32-wasip2)
else
  missing=()
  for p in "${debian_packages[@]}"; do
    dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
  done
  if ((${#missing[@]})); then
    echo "installing ${missing[*]}" >&2
    apt-get update
    apt-get install -y "${missing[@]}"
  fi
  toolchain="debian $(/usr/bin/rustc -V)"
  # Debian's toolchain lives in /usr/bin; it has no prebuilt std for the
  # target, so std is built from rust-web-src (which needs RUSTC_BOOTSTRAP).
  (cd "$here" && PATH=/usr/bin:$PATH RUSTC_BOOTSTRAP=1 \
    RUSTFLAGS="-L /usr/lib/wasm32-wasi $rustflags" \
    cargo build --release --locked --target wasm32-wasip2 -Zbuild-std=std,panic_abort)
fi

built="$CARGO_TARGET_DIR/wasm32-wasip2/release"
sources=$(source_listing | sha256sum | cut -d' ' -f1)

manifest() {
  echo "# Written by plugins/build.sh. The host's tests fail when the sources"
  echo "# hash no longer matches, i.e. a source changed without a rebuild."
  echo "sources $sources"
  echo "toolchain $toolchain"
  for c in "${components[@]}"; do
    echo "$c.wasm $(sha256sum "$built/${c//-/_}.wasm" | cut -d' ' -f1)"
  done
}

if ((check)); then
  recorded_toolchain=$(sed -n 's/^toolchain //p' "$dist/SOURCES")
  status=0
  if [[ "$(sed -n 's/^sources //p' "$dist/SOURCES")" != "$sources" ]]; then
    echo "dist/ is stale: sources changed since the last plugins/build.sh" >&2
    status=1
  fi
  if [[ "$recorded_toolchain" != "$toolchain" ]]; then
    echo "note: dist/ was built with '$recorded_toolchain', this is '$toolchain';" >&2
    echo "      built the components but cannot compare bytes across toolchains" >&2
  else
    for c in "${components[@]}"; do
      if ! cmp -s "$built/${c//-/_}.wasm" "$dist/$c.wasm"; then
        echo "dist/$c.wasm differs from what its sources build to" >&2
        status=1
      fi
    done
  fi
  ((status == 0)) && echo "dist/ matches its sources"
  exit $status
fi

mkdir -p "$dist"
for c in "${components[@]}"; do
  cp "$built/${c//-/_}.wasm" "$dist/$c.wasm"
done
manifest > "$dist/SOURCES"
ls -l "$dist"
