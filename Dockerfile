# The project's images, all from one build: the Rust workspace is compiled
# once (stage `build`) and each runtime stage copies its binary out of it.
# docker-compose.yml picks a stage per service with `build.target`; the
# legacy builder and BuildKit both reuse the `build` stage across targets.
#
#   provider   the Crossplane provider (also what the package embeds)
#   fakecloud  the fake cloud
#   tools      the demo and the one-shot set-up steps of docker-compose.yml
#
# Base images are public ones; on a machine without a registry,
# scripts/images makes them locally under these names.

FROM rust:1.95-slim-bookworm AS build
WORKDIR /src
ENV CARGO_INCREMENTAL=0 CARGO_TERM_COLOR=never
# The binaries every image needs, built by one cargo invocation. The e2e
# crate is built without its `containers` feature: the demo and the set-up
# steps drive an existing cluster, not Docker.
ARG CARGO_BUILD="cargo build --profile container --locked \
    -p fakecloud --bin fakecloud -p provider --bin provider \
    -p demo --bin demo -p e2e --no-default-features --bin compose-setup"

# Dependencies first, from the manifests and Cargo.lock with stub sources,
# so a change to our own code reuses this layer and recompiles only our
# nine crates (xpkg's stubs stay: no image runs it). Their stub artefacts' fingerprints are removed with the stubs;
# a fingerprint is named after the package, and crossplane-types/ and runtime/
# hold the packages crossplane-managed-types and crossplane-managed-runtime.
COPY Cargo.toml Cargo.lock ./
COPY crossplane-types/Cargo.toml crossplane-types/
COPY managed-derive/Cargo.toml managed-derive/
COPY apis/Cargo.toml apis/
COPY runtime/Cargo.toml runtime/
COPY fakecloud/Cargo.toml fakecloud/
COPY provider/Cargo.toml provider/
COPY e2e/Cargo.toml e2e/
COPY demo/Cargo.toml demo/
COPY metrics-exposition/Cargo.toml metrics-exposition/
# The package builder (xpkg) is a workspace member that no image runs: its
# manifest and stub sources stay, so cargo can load the workspace.
COPY xpkg/Cargo.toml xpkg/
RUN set -eu; \
    for crate in crossplane-types managed-derive apis runtime fakecloud provider e2e demo xpkg metrics-exposition; do mkdir -p "$crate/src"; : > "$crate/src/lib.rs"; done; \
    mkdir -p fakecloud/benches provider/benches e2e/src/bin runtime/examples; \
    for main in fakecloud/src/main.rs provider/src/main.rs fakecloud/benches/load.rs fakecloud/benches/console.rs \
                provider/benches/conversion.rs \
                runtime/examples/minimal_provider.rs \
                demo/src/main.rs e2e/src/bin/compose-setup.rs xpkg/src/main.rs; do echo 'fn main() {}' > "$main"; done; \
    $CARGO_BUILD; \
    rm -rf crossplane-types/src managed-derive/src apis runtime/src runtime/examples fakecloud/src fakecloud/benches provider/src provider/benches \
        e2e/src demo/src metrics-exposition/src \
        target/container/.fingerprint/crossplane-managed-types-* target/container/.fingerprint/apis-* \
        target/container/.fingerprint/crossplane-managed-derive-* \
        target/container/.fingerprint/crossplane-managed-runtime-* target/container/.fingerprint/fakecloud-* \
        target/container/.fingerprint/provider-* target/container/.fingerprint/e2e-* \
        target/container/.fingerprint/demo-* target/container/.fingerprint/metrics-exposition-*

# The sources the binaries are built from (all of apis, whose manifest the
# stub step removed), so editing fakecloud's, the provider's or the e2e
# tests, a README or the package does not rebuild the images' binaries.
COPY crossplane-types/src crossplane-types/src
COPY managed-derive/src managed-derive/src
COPY apis apis
COPY runtime/src runtime/src
# Declared in runtime's manifest ([[example]]), so cargo needs the file.
COPY runtime/examples runtime/examples
COPY fakecloud/src fakecloud/src
COPY fakecloud/migrations fakecloud/migrations
COPY fakecloud/benches fakecloud/benches
COPY provider/src provider/src
# Declared in the provider's manifest ([[bench]]), so cargo needs the file.
COPY provider/benches provider/benches
COPY e2e/src e2e/src
COPY demo/src demo/src
COPY metrics-exposition/src metrics-exposition/src
RUN set -eu; $CARGO_BUILD; mkdir /out; \
    for bin in fakecloud provider demo compose-setup; do cp "target/container/$bin" /out/; done

# What every runtime image shares: Debian slim, OCI labels, a non-root user.
FROM debian:bookworm-slim AS runtime
ARG VERSION=0.1.0
# No public remote exists yet: set SOURCE_URL when publishing.
ARG SOURCE_URL=unpublished
ARG REVISION=unknown
LABEL org.opencontainers.image.source=$SOURCE_URL \
      org.opencontainers.image.version=$VERSION \
      org.opencontainers.image.revision=$REVISION \
      org.opencontainers.image.licenses=Apache-2.0 \
      org.opencontainers.image.vendor="fakecloud-provider"
# Logs are read through `docker logs`, not a terminal: no colour codes.
ENV NO_COLOR=1

FROM runtime AS fakecloud
LABEL org.opencontainers.image.title=fakecloud \
      org.opencontainers.image.description="A small SQLite-backed fake cloud"
# The data folder belongs to the runtime user, so a fresh named volume
# mounted here (Docker copies the folder's owner into it) is writable.
RUN mkdir -p /var/lib/fakecloud && chown 65532:65532 /var/lib/fakecloud
COPY --from=build /out/fakecloud /usr/local/bin/fakecloud
# 65532 is the conventional "nonroot" id of distroless images.
USER 65532:65532
ENV FAKECLOUD_LISTEN=0.0.0.0:8787 FAKECLOUD_DATABASE=/var/lib/fakecloud/fakecloud.db
EXPOSE 8787
VOLUME /var/lib/fakecloud
ENTRYPOINT ["/usr/local/bin/fakecloud"]

FROM runtime AS provider
LABEL org.opencontainers.image.title=provider-fakecloud \
      org.opencontainers.image.description="Crossplane provider for fakecloud"
COPY --from=build /out/provider /usr/local/bin/provider
USER 65532:65532
ENV PROVIDER_METRICS_ADDR=0.0.0.0:8080 PROVIDER_HEALTH_ADDR=0.0.0.0:8081
EXPOSE 8080 8081 9443
ENTRYPOINT ["/usr/local/bin/provider"]

FROM runtime AS tools
LABEL org.opencontainers.image.title=fakecloud-provider-tools \
      org.opencontainers.image.description="The demo's stories and the compose set-up steps"
COPY --from=build /out/demo /out/compose-setup /usr/local/bin/
COPY package /usr/share/fakecloud-provider/package
ENV E2E_PACKAGE_DIR=/usr/share/fakecloud-provider/package
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/demo"]
