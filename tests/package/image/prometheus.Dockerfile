# tests/package/image/prometheus.Dockerfile — Prometheus from Debian's own package,
# for tests/package/test_image.py where no registry serves prom/prometheus: the
# compose stack's prometheus service runs this image instead (same config
# file, same /prometheus volume, same port). Built on the test's
# debootstrap base (BASE).
ARG BASE=debian:bookworm-slim
FROM ${BASE}
RUN apt-get update -q \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends prometheus \
 && apt-get clean \
 && rm -rf /var/lib/apt/lists/* \
 && mkdir -p /prometheus
ENTRYPOINT ["/usr/bin/prometheus", "--config.file=/etc/prometheus/prometheus.yml", "--storage.tsdb.path=/prometheus"]
