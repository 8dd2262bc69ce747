# kafka-shim: a Kafka broker in Python. docker build -t kafka-shim . ; docker run -p 9092:9092 -p 9093:9093 kafka-shim
# (or scripts/docker-build). BASE: any image with Python 3.11+ and its venv module (scripts/docker-base builds one from
# Debian's packages where Docker Hub is out of reach).
ARG BASE=python:3.11-slim

FROM ${BASE} AS build
# WHEELHOUSE: a folder of the checkout holding kafka-shim's wheel and its dependencies' (scripts/docker-build makes
# one with the host's pip), so the build needs no network; without it pip fetches them from the index.
ARG WHEELHOUSE=
COPY . /src
# A wheel, not an editable install: the image holds what pip installs for a user, nothing of the checkout.
RUN python3 -m venv /opt/kafka-shim \
    && if [ -n "$WHEELHOUSE" ]; then \
         /opt/kafka-shim/bin/pip install --no-cache-dir --disable-pip-version-check --no-index --find-links "/src/$WHEELHOUSE" kafka-shim; \
       else \
         /opt/kafka-shim/bin/pip install --no-cache-dir --disable-pip-version-check /src; \
       fi \
    && rm -rf /src

FROM ${BASE}
COPY --from=build /opt/kafka-shim /opt/kafka-shim
COPY examples/container.properties /etc/kafka-shim/server.properties
RUN (getent passwd kafka-shim || useradd --system --uid 1000 --user-group --home-dir /var/lib/kafka-shim kafka-shim) \
    && mkdir -p /var/lib/kafka-shim/data && chown -R kafka-shim:kafka-shim /var/lib/kafka-shim
ENV PATH=/opt/kafka-shim/bin:$PATH PYTHONUNBUFFERED=1
USER kafka-shim
VOLUME ["/var/lib/kafka-shim/data"]
# 9308: Prometheus metrics when KAFKA_SHIM_METRICS_PORT=9308 (and KAFKA_SHIM_METRICS_HOST=0.0.0.0) are set
EXPOSE 9092 9093 9308
# Healthy once the broker answers ApiVersions on its PLAINTEXT listener (not merely once the port is open).
HEALTHCHECK --interval=2s --timeout=5s --start-period=2s --retries=30 CMD ["kafka-shim", "healthcheck", "--bootstrap-server", "127.0.0.1:9092"]
ENTRYPOINT ["kafka-shim", "serve", "/etc/kafka-shim/server.properties", "--config-from-env", "--log-format", "json"]
