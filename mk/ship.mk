# Shipping: the image, a kind cluster, the e2e suite, chart linting. Included by the Makefile,
# which provides BIN (the virtualenv's bin, with kubectl) and puts it and .tools/bin (helm) on PATH.
# kind needs the internet; CI builds and tests the image (`image-test`) but runs no kind cluster.

IMAGE        ?= pyscheduler:dev
# pip requirements of out-of-tree plugins to install in the image (the Dockerfile's PLUGINS), e.g.
# PLUGINS=./examples/plugins/pyscheduler-example-plugins
PLUGINS      ?=
# Extras of pyproject.toml to install in the image, e.g. EXTRAS=sim for the local API endpoint.
EXTRAS       ?=
# Empty: the registry's python:3.12-slim-bookworm if it can be pulled, else BASE_IMAGE_LOCAL.
BASE_IMAGE   ?=
BASE_IMAGE_LOCAL ?= pyscheduler-base:bookworm
EXAMPLE_PLUGINS := ./examples/plugins/pyscheduler-example-plugins
KIND_CLUSTER ?= pyscheduler
KIND_VERSION ?= v0.29.0
KIND         ?= $(or $(shell command -v kind 2>/dev/null),$(CURDIR)/.tools/bin/kind)
E2E_ARGS     ?=
CHART        := helm/pyscheduler

.PHONY: docker docker-stop base-image image image-test kind kind-up kind-load kind-down e2e helm-lint

## A Docker daemon: Debian's docker.io installed and dockerd started where missing (as root).
docker:
	bash scripts/install-docker.sh

## Stops the dockerd that `make docker` started, if it did start one.
docker-stop:
	bash scripts/install-docker.sh stop

## The stand-in Python base built from Debian packages (mmdebstrap), for hosts without a registry.
base-image: docker
	BASE_IMAGE_LOCAL=$(BASE_IMAGE_LOCAL) bash scripts/base-image.sh

## Prints the image's size and build time.
image: docker
	IMAGE=$(IMAGE) BASE_IMAGE=$(BASE_IMAGE) BASE_IMAGE_LOCAL=$(BASE_IMAGE_LOCAL) \
		PLUGINS="$(PLUGINS)" EXTRAS="$(EXTRAS)" bash scripts/build-image.sh

## The container test: builds $(IMAGE), and $(IMAGE)-plugins with the example plugins and the sim
## extra (from cached layers where nothing changed), then runs the container tests of tests/deploy
## (marker `docker`) against them.
image-test: install tools docker
	$(MAKE) --no-print-directory image
	$(MAKE) --no-print-directory image IMAGE=$(IMAGE)-plugins PLUGINS=$(EXAMPLE_PLUGINS) EXTRAS=sim
	PYSCHEDULER_IMAGE=$(IMAGE) PYSCHEDULER_PLUGINS_IMAGE=$(IMAGE)-plugins \
		$(BIN)/pytest -q -rs -m docker tests/deploy

## kind itself, into .tools/bin, when it is not on PATH already.
kind: $(KIND)
$(CURDIR)/.tools/bin/kind:
	mkdir -p $(@D)
	curl -fsSLo $@ https://kind.sigs.k8s.io/dl/$(KIND_VERSION)/kind-$$(uname -s | tr A-Z a-z)-$$(uname -m | sed 's/x86_64/amd64/;s/aarch64/arm64/')
	chmod +x $@

kind-up: $(KIND)
	$(KIND) get clusters | grep -qx $(KIND_CLUSTER) \
		|| $(KIND) create cluster --name $(KIND_CLUSTER) --config e2e/kind-config.yaml --wait 120s
	kubectl config use-context kind-$(KIND_CLUSTER)

kind-load: $(KIND)
	$(KIND) load docker-image $(IMAGE) --name $(KIND_CLUSTER)

kind-down: $(KIND)
	$(KIND) delete cluster --name $(KIND_CLUSTER)

## The e2e suite against $$KUBECONFIG's cluster (skips when none answers). With kind:
##   make kind-up image kind-load e2e
## Against a scheduler you run yourself: make e2e E2E_ARGS="--scheduler=external"
e2e: install tools
	$(BIN)/pytest -q -rs e2e --image=$(IMAGE) $(E2E_ARGS)

helm-lint: tools
	helm lint --strict $(CHART)
	@for values in $(CHART)/ci/*-values.yaml; do \
		echo "helm lint --strict $(CHART) --values $$values"; \
		helm lint --strict --quiet $(CHART) --values $$values || exit 1; \
		helm template pyscheduler $(CHART) --namespace pyscheduler --values $$values >/dev/null || exit 1; \
	done
	kubectl kustomize deploy >/dev/null
