# Sourced by scripts/container: base images for the Dockerfile made from Debian's packages, for
# machines that reach Debian's archive but no container registry.
#
#   local_builder_base NAME   the Rust build stage: Debian (debootstrap) with gcc, libc6-dev and
#                             ca-certificates, plus this machine's Rust toolchain
#                             (`rustc --print sysroot`) in /usr/local/rust, as rust:*-slim has;
#                             cargo also trusts this machine's CA bundle (CARGO_HTTP_CAINFO)
#   local_runtime_base NAME   a distroless cc-style base: glibc, libgcc, the CA bundle, tzdata,
#                             netbase, passwd/group with nonroot (65532), no shell, no package
#                             manager; USER 65532 like distroless's :nonroot
#   local_postgres_image NAME a stand-in for the official postgres image (scripts/lib/
#                             postgres-image): Debian's PostgreSQL on the same Debian, for the
#                             compose run
#
# Both come from one debootstrap of Debian 13 (trixie, the release of the Dockerfile's bases;
# BASE_SUITE names another) from the mirror this machine's apt sources name, kept in
# $CONTAINER_WORK (under target/).

: "${CONTAINER_WORK:?}"

debian_suite() { printf '%s\n' "${BASE_SUITE:-trixie}"; }

# The first Debian (not -security) mirror in this machine's apt sources.
debian_mirror() {
  local url
  url=$(cat /etc/apt/sources.list.d/*.sources 2>/dev/null \
        | awk 'tolower($1) == "uris:" { for (i = 2; i <= NF; i++) print $i }' \
        | grep -v -- '-security' | head -n 1 || true)
  if [ -z "$url" ]; then
    url=$(grep -hs '^deb ' /etc/apt/sources.list /etc/apt/sources.list.d/*.list \
          | awk '{ for (i = 2; i <= NF; i++) if ($i ~ /^https?:/) { print $i; exit } }' \
          | grep -v -- '-security' | head -n 1 || true)
  fi
  printf '%s\n' "${url:-http://deb.debian.org/debian}"
}

# One debootstrap, reused by both bases (remove $CONTAINER_WORK/rootfs-* to redo it).
debian_rootfs() {
  local suite mirror dir
  suite=$(debian_suite)
  mirror=$(debian_mirror)
  dir="$CONTAINER_WORK/rootfs-$suite"
  if [ ! -e "$dir/.complete" ]; then
    rm -rf "$dir"
    printf 'scripts/container: debootstrap %s from %s into %s\n' "$suite" "$mirror" "$dir" >&2
    debootstrap --variant=minbase --include=ca-certificates,gcc,libc6-dev,tzdata,netbase \
      "$suite" "$dir" "$mirror" >"$CONTAINER_WORK/debootstrap.log" 2>&1 \
      || { tail -n 20 "$CONTAINER_WORK/debootstrap.log" >&2; return 1; }
    touch "$dir/.complete"
  fi
  printf '%s\n' "$dir"
}

local_builder_base() {
  local name=$1 rootfs sysroot stage
  rootfs=$(debian_rootfs)
  sysroot=$(rustc --print sysroot)
  stage="$CONTAINER_WORK/builder-root"
  printf 'scripts/container: making %s (Debian %s + %s)\n' "$name" "$(debian_suite)" "$(rustc --version)" >&2
  rm -rf "$stage"
  cp -a "$rootfs" "$stage"
  rm -f "$stage/.complete"
  rm -rf "$stage"/usr/share/{doc,man,info,locale}/* "$stage"/var/cache/apt/* "$stage"/var/lib/apt/lists/*
  mkdir -p "$stage/usr/local/rust" "$stage/usr/local/cargo"
  # The toolchain without its documentation (bin, lib, libexec are all rustc and cargo need).
  cp -a "$sysroot"/{bin,lib,libexec} "$stage/usr/local/rust/"
  # Cargo trusts what this machine trusts (a proxy's CA, say) through CARGO_HTTP_CAINFO; the
  # image's own bundle stays Debian's, since the Dockerfile copies it into the final image.
  local host_bundle=/etc/ssl/certs/ca-certificates.crt cainfo=()
  if [ -f "$host_bundle" ] && ! cmp -s "$host_bundle" "$stage/etc/ssl/certs/ca-certificates.crt"; then
    install -D -m 0644 "$host_bundle" "$stage/usr/local/share/build-host-ca/ca-certificates.crt"
    cainfo=(--change 'ENV CARGO_HTTP_CAINFO=/usr/local/share/build-host-ca/ca-certificates.crt')
  fi
  tar --numeric-owner -C "$stage" -cf - . | podman import -q \
    --change 'ENV PATH=/usr/local/cargo/bin:/usr/local/rust/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change 'ENV CARGO_HOME=/usr/local/cargo' \
    "${cainfo[@]}" \
    --change 'CMD ["bash"]' \
    - "$name" >/dev/null
  rm -rf "$stage"
}

local_runtime_base() {
  local name=$1 rootfs stage pkg list
  rootfs=$(debian_rootfs)
  stage="$CONTAINER_WORK/runtime-root"
  printf 'scripts/container: making %s (Debian %s: libc6, libgcc-s1, tzdata, netbase, CA bundle)\n' \
    "$name" "$(debian_suite)" >&2
  rm -rf "$stage"
  mkdir -p "$stage"/usr/{bin,sbin,lib,lib64}
  # Keep the merged-/usr layout: /bin, /lib, /lib64 and /sbin are links into /usr.
  local top
  for top in bin sbin lib lib64; do
    if [ -L "$rootfs/$top" ]; then cp -a "$rootfs/$top" "$stage/"; fi
  done
  list="$CONTAINER_WORK/runtime-files"
  : >"$list"
  for pkg in libc6 libgcc-s1 tzdata netbase base-files; do
    cat "$rootfs"/var/lib/dpkg/info/"$pkg".list "$rootfs"/var/lib/dpkg/info/"$pkg":*.list 2>/dev/null \
      >>"$list" || true
  done
  # Only what runs: no documentation, licences, locales, man pages, gconv (iconv) modules.
  grep -Ev '^/usr/share/(doc|doc-base|man|info|lintian|common-licenses|base-files|bug)(/|$)|/gconv(/|$)|^/\.$' "$list" \
    | sed 's,^/,,' | sort -u >"$list.kept"
  (cd "$rootfs" && tar --numeric-owner --no-recursion -cf - -T "$list.kept") \
    | tar -C "$stage" --keep-directory-symlink -xf -
  mkdir -p "$stage/etc/ssl/certs" "$stage/tmp" "$stage/root" "$stage/home/nonroot"
  cp "$rootfs/etc/ssl/certs/ca-certificates.crt" "$stage/etc/ssl/certs/"
  chmod 1777 "$stage/tmp"
  chmod 0700 "$stage/root"
  chown 65532:65532 "$stage/home/nonroot"
  chmod 0700 "$stage/home/nonroot"
  cat >"$stage/etc/passwd" <<'EOF'
root:x:0:0:root:/root:/sbin/nologin
nobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin
nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin
EOF
  cat >"$stage/etc/group" <<'EOF'
root:x:0:
nobody:x:65534:
nonroot:x:65532:
EOF
  printf 'passwd: files\ngroup: files\nhosts: files dns\n' >"$stage/etc/nsswitch.conf"
  # Nothing that could run a command: no shell, no coreutils, no dpkg.
  if [ -n "$(find "$stage" \( -name sh -o -name bash -o -name dash \) -print -quit)" ]; then
    printf 'scripts/container: a shell slipped into the runtime base\n' >&2
    return 1
  fi
  tar --numeric-owner -C "$stage" -cf - . | podman import -q \
    --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change 'ENV SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt' \
    --change 'USER 65532' \
    --change 'WORKDIR /home/nonroot' \
    - "$name" >/dev/null
  rm -rf "$stage"
}

local_postgres_image() {
  local name=$1 rootfs base
  rootfs=$(debian_rootfs)
  base="localhost/bindery-base/debian:$(debian_suite)"
  if ! podman image exists "$base"; then
    printf 'scripts/container: making %s (Debian %s, minbase)\n' "$base" "$(debian_suite)" >&2
    tar --numeric-owner -C "$rootfs" --exclude=./.complete -cf - . | podman import -q \
      --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
      --change 'CMD ["bash"]' - "$base" >/dev/null
  fi
  printf 'scripts/container: making %s (Debian %s + postgresql)\n' "$name" "$(debian_suite)" >&2
  podman build -q --network host --build-arg BASE="$base" -t "$name" \
    "$(dirname "${BASH_SOURCE[0]}")/postgres-image" >/dev/null
}
