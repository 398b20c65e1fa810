# gitfleet — make build | test | run | lint | bench | screenshots | image | generate | crds
GO        ?= go
BIN       ?= bin/gitfleet
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT    ?= $(shell git rev-parse HEAD 2>/dev/null)
LDFLAGS   := -s -w -X main.version=$(VERSION) -X main.commit=$(COMMIT)
IMAGE     ?= gitfleet:$(VERSION)

.PHONY: all build test testbin fuzz lint vet fmt run run-clusters run-clusters-pull simulate bench screenshots image generate crds crd-summary clean

all: lint test build

build: ## Build the gitfleet binary (static, no cgo)
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/gitfleet

test: ## Run the whole test suite (waits end shortly before -timeout, see internal/testing/await)
	$(GO) test -timeout 60m ./...

testbin: ## Build etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kubectl and kwok for the member-cluster tests (cached; cold: ~15 min)
	./hack/testbin.sh

# FUZZTIME counts executions, not seconds: a time-bounded run fails with
# "context deadline exceeded" when its time ends while the fuzzer minimizes
# a new input, which a loaded machine makes likely. Minimizing is bounded
# too.
FUZZTIME ?= 30000x
FUZZMINIMIZETIME ?= 500x
# package:target pairs; each runs for FUZZTIME on top of its committed seed
# corpus (testdata/fuzz/<target>/). A crasher is written there: fix it and
# commit it as a seed.
FUZZ_TARGETS := render:FuzzManifest render:FuzzTree render:FuzzKustomization render:FuzzApprovals gitsource:FuzzPushRef internal/yamlstream:FuzzWrite internal/yamlstream:FuzzReadJSON internal/yamlstream:FuzzReadJSONAnyText

fuzz: ## Run every fuzz target for FUZZTIME (default 30000 executions)
	@set -e; for t in $(FUZZ_TARGETS); do \
		pkg=$${t%%:*}; fn=$${t##*:}; \
		echo "fuzz $$fn ($$pkg) for $(FUZZTIME)"; \
		$(GO) test -run '^$$' -fuzz "^$$fn\$$" -fuzztime $(FUZZTIME) -fuzzminimizetime $(FUZZMINIMIZETIME) ./$$pkg; \
	done

lint: fmt vet ## gofmt + go vet

fmt:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet ./...

run: build ## Quickstart: local bare repo + clone of examples/quickstart, gitfleet serve against it
	./hack/quickstart.sh $(BIN)

run-clusters: build ## Quickstart against three real local member clusters (etcd + kube-apiserver, built by make testbin)
	./hack/quickstart.sh $(BIN) --clusters

run-clusters-pull: build ## The same three members pulling: a local hub API server (serve --hub kube) and gitfleet agent on each member
	./hack/quickstart.sh $(BIN) --clusters-pull

simulate: build ## Preview the quickstart rollout in virtual time
	./hack/quickstart.sh $(BIN) --simulate

bench: ## Benchmarks of the engine, hubs, delivery, render, git and status layers (the kube packages need make testbin; the Git loop's end-to-end benchmarks run on their own, see README)
	$(GO) test -run '^$$' -bench . -benchmem ./reconciler/... ./render/... ./gitsource ./status/...

screenshots: ## PNGs of the web view's fleet, run and cluster pages into docs/screenshots (README shows them), from status/web's browser tests (needs chromium)
	mkdir -p docs/screenshots
	CI=true GITFLEET_SCREENSHOTS=$(CURDIR)/docs/screenshots $(GO) test -count=1 -run '^TestScreenshots$$' ./status/web

image: ## Build the container image (needs a Docker engine)
	docker build --build-arg VERSION=$(VERSION) -t $(IMAGE) .

generate: crds ## Regenerate deep copies of api/v1beta1 and the CRDs
	$(GO) run sigs.k8s.io/controller-tools/cmd/controller-gen@$(CONTROLLER_TOOLS_VERSION) object:headerFile=hack/boilerplate.go.txt paths=./api/v1beta1

# The CRDs are generated from the per-kind root types in internal/crd (whose
# spec and status are api/v1beta1's types), one file per CRD. internal/crd's
# test reads the version from this line and fails when config/crd is stale.
# config/crd/crd.go embeds the files into the binary (internal/crdschema
# applies them as kube-apiserver does); make crds leaves it in place.
CONTROLLER_TOOLS_VERSION ?= v0.23.0
CRD_DIR ?= config/crd

# The last step rewrites internal/crdschema's index of the file that serves
# each kind (a render worker parses only the CRDs it uses); the package's
# TestIndexMatchesCRDs fails when the index is stale.
crds: ## Regenerate the CRDs under config/crd (kubectl apply --server-side -R -f config/crd/)
	rm -f $(CRD_DIR)/*.yaml
	$(GO) run sigs.k8s.io/controller-tools/cmd/controller-gen@$(CONTROLLER_TOOLS_VERSION) crd paths=./internal/crd/... output:crd:artifacts:config=$(CRD_DIR)
	$(GO) test ./internal/crdschema -run '^TestIndexMatchesCRDs$$' -count 1 -update

# KubeFleet's CRDs, summarized (internal/crdsummary) into the file
# internal/crd's TestCRDsMatchKubeFleet compares config/crd with; the
# committed summary is what the test reads, so only regenerating it needs
# KubeFleet's source (a git directory at KUBEFLEET_GIT).
KUBEFLEET_GIT    ?= /work/.mirror/kubefleet-dev+kubefleet/repo
KUBEFLEET_COMMIT ?= e160c1cdfdd9bf4c0234713d2b7f34e0ec95dab6
KUBEFLEET_NOT_SERVED ?= ClusterResourcePlacementStatus
CRD_SUMMARY ?= internal/crd/testdata/kubefleet-crds.summary

crd-summary: ## Rewrite the committed summary of KubeFleet's CRDs from its source at KUBEFLEET_GIT
	@test -d $(KUBEFLEET_GIT) || { echo "no KubeFleet git directory at $(KUBEFLEET_GIT) (set KUBEFLEET_GIT)"; exit 1; }
	set -e; tmp=$$(mktemp -d); trap 'rm -rf $$tmp' EXIT; \
	git -C $(KUBEFLEET_GIT) archive $(KUBEFLEET_COMMIT) config/crd/bases | tar -x -C $$tmp; \
	$(GO) run ./internal/crdsummary/cmd/crdsummary \
		-groups placement.kubernetes-fleet.io,cluster.kubernetes-fleet.io \
		-exclude $(KUBEFLEET_NOT_SERVED) \
		-source "kubefleet-dev/kubefleet $(KUBEFLEET_COMMIT) config/crd/bases" \
		$$tmp/config/crd/bases > $(CRD_SUMMARY).tmp; \
	mv $(CRD_SUMMARY).tmp $(CRD_SUMMARY)

clean:
	rm -rf bin
