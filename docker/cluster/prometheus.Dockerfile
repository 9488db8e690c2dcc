# docker/cluster/prometheus.Dockerfile — Debian's Prometheus (2.42) with
# docker/cluster/prometheus.yml, for compose.yaml's `monitoring` profile;
# built here because no registry may be reachable (docker/compose.yaml pulls
# prom/prometheus instead).
FROM debian:bookworm-slim
RUN printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d && chmod +x /usr/sbin/policy-rc.d \
 && apt-get update -q \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends prometheus \
 && apt-get clean \
 && rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin /usr/sbin/policy-rc.d \
 && mkdir -p /prometheus && chown prometheus:prometheus /prometheus
COPY prometheus.yml /etc/prometheus/prometheus.yml
USER prometheus
EXPOSE 9090
ENTRYPOINT ["prometheus", "--config.file=/etc/prometheus/prometheus.yml", "--storage.tsdb.path=/prometheus"]
