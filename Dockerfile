# Bindery in a container: one binary on a distroless base (glibc, libgcc, CA certificates, no
# shell), running as a non-root user, with its data in the volume /data.
#
#   docker build -t bindery .            # or: podman build --format docker -t bindery .
#   docker run -p 8080:8080 -v bindery-data:/data bindery
#
# RUN --mount needs BuildKit (Docker's default builder since 23.0) or podman/buildah.
# The base images are build arguments, so a registry mirror or a local base can stand in:
#   --build-arg RUST_IMAGE=mirror.example.com/library/rust:1.95-slim-bookworm
#   --build-arg RUNTIME_IMAGE=mirror.example.com/distroless/cc-debian12:nonroot
# The runtime base must be a glibc system at least as new as the build base's (Debian 12 here).
# scripts/container builds both bases from Debian's packages when no registry is reachable.

ARG RUST_IMAGE=docker.io/library/rust:1.95-slim-bookworm
ARG RUNTIME_IMAGE=gcr.io/distroless/cc-debian12:nonroot

FROM ${RUST_IMAGE} AS build
WORKDIR /src
COPY . .
# The registry and target directories are build caches (BuildKit and Buildah keep them between
# builds), so a rebuild after a code change compiles only Bindery itself. The binary is copied
# out of the cache in the same step. /out/data becomes the non-root user's data directory.
RUN --mount=type=cache,target=/usr/local/cargo/registry,sharing=locked \
    --mount=type=cache,target=/src/target,sharing=locked \
    cargo build --release --locked \
 && install -D -m 0755 target/release/bindery /out/bindery \
 && mkdir -p /out/data

FROM ${RUNTIME_IMAGE}
# The binary starts its own executable as the worker child, so it is the real file, not a link.
COPY --from=build /out/bindery /usr/local/bin/bindery
# rustls reads the system's roots (managed PostgreSQL over TLS, cloud blob storage); taking the
# build base's bundle keeps that true on any runtime base.
COPY --from=build /etc/ssl/certs/ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
COPY --from=build --chown=65532:65532 /out/data /data

# 65532 is distroless's "nonroot"; numeric, so it works on any base. Hosts that mount volumes
# owned by root and offer no way to change that (Fly.io) build with --build-arg RUN_AS=0:0.
ARG RUN_AS=65532:65532
USER ${RUN_AS}
# DATA_DIR's default, ./data, is /data from here. It is left unset so that the app's own
# per-host defaults still apply (on Azure App Service, /home/bindery on the kept share), and the
# working directory stays off the volume: a volume that holds the working directory does not
# count as one where Bindery checks that its data outlives a restart (Fly.io, Render, ...).
WORKDIR /
ENV PORT=8080 \
    SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt
VOLUME ["/data"]
EXPOSE 8080

# No shell or curl here: the binary itself asks http://127.0.0.1:$PORT/healthz.
# (podman keeps HEALTHCHECK only in the docker image format: podman build --format docker.)
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 \
    CMD ["/usr/local/bin/bindery", "healthcheck"]

# SIGTERM drains requests and jobs for up to SHUTDOWN_TIMEOUT (25s), then exits 0; give
# `docker stop` longer than that (docker stop -t 30) or it is killed after its default 10 s.
STOPSIGNAL SIGTERM
ENTRYPOINT ["/usr/local/bin/bindery"]
CMD ["serve"]
