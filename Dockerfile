# The kreg controller with what its lab needs. Build: docker compose build
FROM rust:1-bookworm AS build
WORKDIR /src
COPY . .
RUN cargo build --release -p kreg && cargo build --profile agent -p kreg-agent

FROM debian:bookworm-slim
# The package lists stay: the lab fetches kernels with apt-get download.
RUN apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      qemu-system-x86 busybox-static rt-tests kexec-tools cpio xz-utils kmod ca-certificates openssh-client
COPY --from=build /src/target/release/kreg /src/target/agent/kreg-agent /usr/local/bin/
COPY scenarios /kreg/scenarios
WORKDIR /kreg
ENTRYPOINT ["kreg"]
CMD ["status"]
