# pyscheduler image: `make image` (IMAGE=pyscheduler:dev); docs/install.md says how.
# Plain Dockerfile syntax only: the classic builder (DOCKER_BUILDKIT=0) builds it as BuildKit
# does, with no frontend image to fetch.
#
# Stages on one base: the build stage installs the project and its dependencies into a
# virtualenv; the runtime stage copies only that virtualenv, byte-compiled, without pip or any
# test suite. BASE_IMAGE: a Debian-based image with python3 (3.11 or newer) and its venv module;
# by default the registry's slim Python image. `make image` takes `make base-image`'s stand-in,
# built from Debian packages, where the registry cannot be reached.
ARG BASE_IMAGE=python:3.12-slim-bookworm

# The dependencies of pyproject.toml as a requirements file. The build stage copies that file, and
# docker's cache compares its contents: an edit of pyproject.toml that leaves the dependencies
# alone does not reinstall them.
FROM ${BASE_IMAGE} AS requirements
COPY pyproject.toml /src/
RUN python3 -c "import tomllib; print('\n'.join(tomllib.load(open('/src/pyproject.toml', 'rb'))['project']['dependencies']))" \
        > /requirements.txt

FROM ${BASE_IMAGE} AS build
# The build host's pip settings and CA bundle (`make image` writes image/pip/, which git ignores;
# without them pip's defaults apply). They are copied into this stage only: the runtime image
# never contains them.
COPY image/pip/ /build/pip/
ENV PIP_CONFIG_FILE=/build/pip/pip.conf \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_ROOT_USER_ACTION=ignore
RUN python3 -m venv /opt/pyscheduler
WORKDIR /src
# Dependencies first, so that source edits reuse this layer.
COPY --from=requirements /requirements.txt /tmp/requirements.txt
RUN /opt/pyscheduler/bin/pip install --only-binary=:all: -r /tmp/requirements.txt
COPY pyproject.toml README.md ./
COPY scheduler ./scheduler
COPY simcluster ./simcluster
# EXTRAS: extras of pyproject.toml, comma-separated. `sim` adds the local API endpoint (the
# simcluster package and kubernetes_asyncio) for `pyscheduler sim-cluster`, `demo` and
# `simulate`; without it simcluster is left out.
ARG EXTRAS=""
RUN case ",$EXTRAS," in *,sim,*) ;; *) rm -rf simcluster ;; esac \
    && if [ -n "$EXTRAS" ]; then /opt/pyscheduler/bin/pip install ".[$EXTRAS]"; \
       else /opt/pyscheduler/bin/pip install --no-deps .; fi
# Out-of-tree plugins (docs/plugins.md, "Shipping"): pip requirements installed next to
# pyscheduler, whose entry points `pyscheduler run` finds. Names from an index, or paths under
# examples/plugins/ of the build context, e.g.
#   make image PLUGINS="my-plugins==1.2.0"
#   make image PLUGINS=./examples/plugins/pyscheduler-example-plugins
ARG PLUGINS=""
COPY examples/plugins ./examples/plugins
RUN if [ -n "$PLUGINS" ]; then /opt/pyscheduler/bin/pip install $PLUGINS; fi
# What the runtime image keeps of the virtualenv: no pip or setuptools, no numpy test suites, no
# type stubs, and bytecode only: each module compiled once here (the root filesystem is read-only
# at run time), its source removed (tracebacks name file and line without the line's text). kubernetes_asyncio (EXTRAS=sim) keeps its sources,
# which the local endpoint reads for its OpenAPI documents.
RUN cd /opt/pyscheduler/lib/python3*/site-packages \
    && rm -rf pip pip-* setuptools setuptools-* pkg_resources _distutils_hack distutils-precedence.pth \
        ../../../bin/pip* \
    && find numpy -depth -type d -name tests -exec rm -rf {} + \
    && find . -name '*.pyi' -delete \
    && /opt/pyscheduler/bin/python -m compileall -q -b -j 0 -x '/kubernetes_asyncio/' "$PWD" \
    && find . -path ./kubernetes_asyncio -prune -o -name '*.py' -exec rm -f {} + \
    && find . -path ./kubernetes_asyncio -prune -o -name __pycache__ -prune -exec rm -rf {} +

FROM ${BASE_IMAGE}
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
