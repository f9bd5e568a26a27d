# Bindery in a container: one binary on a distroless base (glibc, libgcc, CA certificates, no
# shell), running as a non-root user, with its data in /data.
#
#   docker build -t bindery .            # or: podman build --format docker -t bindery .
#   docker run -p 8080:8080 -v bindery-data:/data bindery
#
# Plain Dockerfile syntax only: no BuildKit features (RUN --mount, heredocs), so every host's
# builder takes it as it is: Docker with or without BuildKit, `az acr build`, podman/buildah,
# Heroku, Railway, Render and Fly.io. Dependencies are compiled in a layer of their own, which
# any builder's layer cache keeps until Cargo.toml or Cargo.lock change.
#
# The base images are build arguments, so a registry mirror or a local base can stand in:
#   --build-arg RUST_IMAGE=mirror.example.com/library/rust:1.95.0-slim-trixie
#   --build-arg RUNTIME_IMAGE=mirror.example.com/distroless/cc-debian13:nonroot
# The runtime base must be a glibc system at least as new as the build base's (Debian 13 here).
# The Rust release matches rust-toolchain.toml. scripts/container builds both bases from
# Debian's packages when no registry is reachable.

ARG RUST_IMAGE=docker.io/library/rust:1.95.0-slim-trixie
ARG RUNTIME_IMAGE=gcr.io/distroless/cc-debian13:nonroot

FROM ${RUST_IMAGE} AS build
WORKDIR /src
# Cargo reads it: `--build-arg CARGO_PROFILE_RELEASE_LTO=thin` on a builder with under 2 GB of
# memory (the whole-program link of Cargo.toml's release profile takes about 1.9 GB).
ARG CARGO_PROFILE_RELEASE_LTO
# The dependencies first, built against an empty crate of the same name: this layer is only
# built again when the manifest or the lock file change, so a code change compiles Bindery alone.
# The print edition's typefaces for the scripts its own fonts lack (Arabic, Hebrew, the Indic
# scripts, Thai, Chinese, Japanese, Korean…): Debian's Noto families. Only the files Bindery
# prints with are copied into the runtime image below (`bindery fonts --files`, about 60 MB).
RUN apt-get update -qq \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
      fonts-noto-core fonts-noto-cjk >/dev/null \
 && rm -rf /var/lib/apt/lists/*
COPY Cargo.toml Cargo.lock rust-toolchain.toml ./
RUN mkdir -p src benches \
 && echo 'fn main() {}' > src/main.rs \
 && touch src/lib.rs benches/queue.rs benches/pipeline.rs \
 && cargo build --release --locked \
 && rm -rf src benches
COPY . .
# COPY keeps the files' own times, which can be older than the empty crate's build: touch them
# so cargo builds the real one. /out/data becomes the non-root user's data directory.
RUN touch src/main.rs src/lib.rs \
 && cargo build --release --locked \
 && install -D -m 0755 target/release/bindery /out/bindery \
 && mkdir -p /out/data \
 && target/release/bindery fonts \
 && target/release/bindery fonts --files | while read -r font; do \
      install -D -m 0644 "$font" "/out/fonts$font"; \
    done

FROM ${RUNTIME_IMAGE}
# The binary starts its own executable as the worker child, so it is the real file, not a link.
COPY --from=build /out/bindery /usr/local/bin/bindery
# rustls reads the system's roots (managed PostgreSQL over TLS, cloud blob storage); taking the
# build base's bundle keeps that true on any runtime base.
COPY --from=build /etc/ssl/certs/ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
COPY --from=build --chown=65532:65532 /out/data /data
COPY --from=build /out/fonts/usr/share/fonts /usr/share/fonts

# 65532 is distroless's "nonroot"; numeric, so it works on any base. Hosts that mount volumes
# owned by root and offer no way to change that (Fly.io) build with --build-arg RUN_AS=0:0.
ARG RUN_AS=65532:65532
USER ${RUN_AS}
# DATA_DIR's default, ./data, is /data from here. It is left unset so that the app's own
# per-host defaults still apply (on Azure App Service with its storage on, /home/bindery on the
# kept share), and the working directory stays off the volume: a volume that holds the working
# directory does not count as one where Bindery checks that its data outlives a restart.
# No VOLUME instruction: some hosts' builders refuse it (Railway) and others ignore it
# (Heroku); mount a volume at /data where data should be kept (docker-compose.yml does).
WORKDIR /
# `bindery` is on PATH, for hosts that run a command without the ENTRYPOINT.
ENV PATH=/usr/local/bin:/usr/bin:/bin \
    PORT=8080 \
    SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt
EXPOSE 8080

# No shell or curl here: the binary itself asks http://127.0.0.1:$PORT/healthz.
# (podman keeps HEALTHCHECK only in the docker image format: podman build --format docker.)
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 \
    CMD ["/usr/local/bin/bindery", "healthcheck"]

# SIGTERM drains requests and jobs for up to SHUTDOWN_TIMEOUT (25s), then exits 0; give
# `docker stop` longer than that (docker stop -t 30) or it is killed after its default 10 s.
STOPSIGNAL SIGTERM
# The one image contract: the ENTRYPOINT is the binary, and the command is its arguments.
# Hosts replace only the command, with `migrate` or with `bindery migrate` as people write it
# by habit; the binary takes its own name as a first argument and drops it, so both work.
ENTRYPOINT ["/usr/local/bin/bindery"]
CMD ["serve"]
