# syntax=docker/dockerfile:1
# pyscheduler image: `make image` (IMAGE=pyscheduler:dev).
# Two stages: a build stage that installs the project and its dependencies into a virtualenv,
# and a runtime stage that only copies that virtualenv onto the same slim base.
ARG PYTHON_VERSION=3.12

FROM python:${PYTHON_VERSION}-slim-bookworm AS build
ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_ROOT_USER_ACTION=ignore
RUN python -m venv /opt/pyscheduler
WORKDIR /src
# Dependencies first, read from pyproject.toml alone, so that source edits reuse this layer.
COPY pyproject.toml ./
RUN python -c "import tomllib; print('\n'.join(tomllib.load(open('pyproject.toml', 'rb'))['project']['dependencies']))" \
        > /tmp/requirements.txt \
    && /opt/pyscheduler/bin/pip install --only-binary=:all: -r /tmp/requirements.txt
COPY README.md ./
COPY scheduler ./scheduler
# pip byte-compiles everything it installs, which matters: at run time the root filesystem is
# read-only.
RUN /opt/pyscheduler/bin/pip install --no-deps .
# Out-of-tree plugins (docs/plugins.md, "Shipping"): pip requirements installed next to
# pyscheduler, whose entry points `pyscheduler run` finds. Names from an index, or paths under
# examples/plugins/ of the build context, e.g.
#   docker build --build-arg PLUGINS="my-plugins==1.2.0" .
#   docker build --build-arg PLUGINS=./examples/plugins/pyscheduler-example-plugins .
ARG PLUGINS=""
COPY examples/plugins ./examples/plugins
RUN if [ -n "$PLUGINS" ]; then /opt/pyscheduler/bin/pip install $PLUGINS; fi
# numpy's bundled test suites and pip itself are dead weight in the runtime image.
RUN find /opt/pyscheduler/lib -depth -type d -name tests -path '*site-packages/numpy/*' -exec rm -rf {} + \
    && rm -rf /opt/pyscheduler/lib/python*/site-packages/pip /opt/pyscheduler/bin/pip*

FROM python:${PYTHON_VERSION}-slim-bookworm
LABEL org.opencontainers.image.title="pyscheduler" \
      org.opencontainers.image.description="A drop-in secondary Kubernetes scheduler in Python" \
      org.opencontainers.image.licenses="Apache-2.0"
COPY --from=build /opt/pyscheduler /opt/pyscheduler
ENV PATH=/opt/pyscheduler/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    HOME=/tmp
# A numeric UID (nobody in distroless images) so runAsNonRoot can verify it without /etc/passwd.
USER 65532:65532
EXPOSE 10251
ENTRYPOINT ["pyscheduler", "run"]
CMD ["--config=/etc/pyscheduler/config.yaml"]
