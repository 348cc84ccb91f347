# kmirror container image: one static binary on an empty base.
#
# Why the binary is not compiled in a builder stage: the machines that build
# this image (CI included) reach package registries but no container
# registry, so `FROM golang:...` cannot be pulled. `make image` compiles a
# fully static binary on the host instead (cgo for SQLite, linked with
# -extldflags -static; tags osusergo,netgo so no libc NSS is needed at run
# time) and stages it, with the CA bundle and a passwd entry, in bin/image/,
# the build context. Build it with `make image` (buildah, no daemon needed) or
# `make image IMAGE_TOOL=docker`; never `docker build .` from the repo root.
#
# Stage 1 lays out the root filesystem with its owners; the final stage
# copies it in one layer onto scratch: no shell, no package manager, nothing
# but the binary, CA certificates and the user's entry.
FROM scratch AS rootfs
COPY kmirror /usr/local/bin/kmirror
COPY etc/ /etc/
# The data directory and /tmp belong to the unprivileged user (65532, the
# distroless "nonroot" id) so the image runs without root.
COPY --chown=65532:65532 data/ /data/
COPY --chown=65532:65532 tmp/ /tmp/

FROM scratch
COPY --from=rootfs / /
USER 65532:65532
ENV HOME=/data TMPDIR=/tmp
WORKDIR /data
# The database, encryption key and generated API token live here: mount a
# volume, and back it up (the key is needed to read the stored credentials).
VOLUME ["/data"]
EXPOSE 8080
# The console listens on loopback unless told otherwise; in a container it
# must listen on all interfaces. By default it serves plain HTTP there
# (--allow-insecure-http), for a TLS-terminating proxy or ingress in front;
# to serve HTTPS itself, run it with `serve --listen 0.0.0.0:8080 --data-dir
# /data --tls-cert FILE --tls-key FILE` and the files mounted (see README,
# Deploy).
# No secret is baked in: pass KMIRROR_ADMIN_PASSWORD and KMIRROR_TOKEN at run
# time, or let the first start generate them into /data.
ENTRYPOINT ["/usr/local/bin/kmirror"]
CMD ["serve", "--listen", "0.0.0.0:8080", "--data-dir", "/data", "--allow-insecure-http"]
# Serving HTTPS itself, override it: `kmirror healthcheck --url
# https://127.0.0.1:8080/healthz --insecure` (loopback, so the certificate's
# name cannot match).
HEALTHCHECK --interval=30s --timeout=5s --start-period=20s --retries=3 \
  CMD ["/usr/local/bin/kmirror", "healthcheck", "--url", "http://127.0.0.1:8080/healthz"]
