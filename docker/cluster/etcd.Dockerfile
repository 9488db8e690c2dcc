# docker/cluster/etcd.Dockerfile — a single etcd member from Debian's
# etcd-server (3.4), for docker/cluster/compose.yaml and docker/k8s/etcd.yaml
# (image featstore-etcd:latest). For trials: one member, no TLS, no auth.
#   docker build -f docker/cluster/etcd.Dockerfile -t featstore-etcd docker/cluster
FROM debian:bookworm-slim
# policy-rc.d: the package's scripts start no daemon in the build; apt's
# caches go in the same layer (a debootstrap base has no docker-clean).
RUN printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d && chmod +x /usr/sbin/policy-rc.d \
 && apt-get update -q \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends etcd-server etcd-client \
 && apt-get clean \
 && rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin /usr/sbin/policy-rc.d \
 && mkdir -p /var/lib/etcd
EXPOSE 2379 2380
# Clients on 2379 from anywhere on the network; the advertised URL is the
# service's name (ETCD_ADVERTISE_CLIENT_URLS overrides it).
ENV ETCD_NAME=etcd0 \
    ETCD_DATA_DIR=/var/lib/etcd/data \
    ETCD_LISTEN_CLIENT_URLS=http://0.0.0.0:2379 \
    ETCD_ADVERTISE_CLIENT_URLS=http://etcd:2379 \
    ETCD_LISTEN_PEER_URLS=http://0.0.0.0:2380 \
    ETCDCTL_API=3
ENTRYPOINT ["etcd"]
