# Sourced by scripts/check and scripts/test before any cargo command: rust-toolchain.toml pins a
# release (1.95.0), and rustup would try to download it on a machine where that same release
# is installed only under another name (`stable`), which fails without the internet. There it
# names the installed toolchain for the pinned release, as a link. Where only another release
# is installed (a machine image whose Rust moved on), it names that one, saying so loudly:
# with no internet, building with the Rust there is is better than not building at all.
# Anywhere else (rustup absent, the release already known) it does nothing.
pin_toolchain_alias() {
  command -v rustup >/dev/null 2>&1 || return 0
  local root pinned home stable sysroot
  root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
  pinned=$(sed -n 's/^channel *= *"\(.*\)"/\1/p' "$root/rust-toolchain.toml")
  [ -n "$pinned" ] || return 0
  home=${RUSTUP_HOME:-$HOME/.rustup}
  if compgen -G "$home/toolchains/$pinned-*" >/dev/null; then return 0; fi
  for stable in stable "$(RUSTUP_TOOLCHAIN= rustup default 2>/dev/null | awk '{ print $1 }')"; do
    [ -n "$stable" ] || continue
    if RUSTUP_TOOLCHAIN="$stable" rustc --version 2>/dev/null | grep -q "^rustc $pinned "; then
      sysroot=$(RUSTUP_TOOLCHAIN="$stable" rustc --print sysroot)
      printf 'naming %s (rustc %s) as the pinned toolchain %s\n' "$stable" "$pinned" "$pinned" >&2
      ln -s "$sysroot" "$home/toolchains/$pinned-$(basename "$sysroot" | sed 's/^[^-]*-//')"
      return 0
    fi
  done
  # No installed toolchain is the pinned release. If rustup can fetch it, it will; if it
  # cannot (no internet), use what is installed rather than fail every command.
  if ! timeout 20 rustup toolchain install "$pinned" --profile minimal >/dev/null 2>&1; then
    stable=$(RUSTUP_TOOLCHAIN= rustup default 2>/dev/null | awk '{ print $1 }') || return 0
    [ -n "$stable" ] || return 0
    sysroot=$(RUSTUP_TOOLCHAIN="$stable" rustc --print sysroot) || return 0
    printf 'WARNING: Rust %s (rust-toolchain.toml) cannot be installed here; building with %s instead\n' \
      "$pinned" "$(RUSTUP_TOOLCHAIN="$stable" rustc --version)" >&2
    ln -s "$sysroot" "$home/toolchains/$pinned-$(basename "$sysroot" | sed 's/^[^-]*-//')"
  fi
}
pin_toolchain_alias
