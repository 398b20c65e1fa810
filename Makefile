# gitfleet — make build | test | run | lint | bench | image | generate | crds
GO        ?= go
BIN       ?= bin/gitfleet
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT    ?= $(shell git rev-parse HEAD 2>/dev/null)
LDFLAGS   := -s -w -X main.version=$(VERSION) -X main.commit=$(COMMIT)
IMAGE     ?= gitfleet:$(VERSION)

.PHONY: all build test testbin fuzz lint vet fmt run run-clusters simulate bench image generate crds clean

all: lint test build

build: ## Build the gitfleet binary (static, no cgo)
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/gitfleet

test: ## Run the whole test suite (waits end shortly before -timeout, see internal/await)
	$(GO) test -timeout 30m ./...

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

simulate: build ## Preview the quickstart rollout in virtual time
	./hack/quickstart.sh $(BIN) --simulate

bench: ## Benchmarks of the engine, render, git and delivery layers (member/kube needs make testbin)
	$(GO) test -run '^$$' -bench . -benchmem ./reconciler/... ./render/... ./gitsource/... ./member/...

image: ## Build the container image (needs a Docker engine)
	docker build --build-arg VERSION=$(VERSION) -t $(IMAGE) .

generate: crds ## Regenerate deep copies of api/v1beta1 and the CRDs
	$(GO) run sigs.k8s.io/controller-tools/cmd/controller-gen@$(CONTROLLER_TOOLS_VERSION) object:headerFile=hack/boilerplate.go.txt paths=./api/v1beta1

# The CRDs are generated from the per-kind root types in internal/crd (whose
# spec and status are api/v1beta1's types), one file per CRD. internal/crd's
# test reads the version from this line and fails when config/crd is stale.
CONTROLLER_TOOLS_VERSION ?= v0.23.0
CRD_DIR ?= config/crd

crds: ## Regenerate the CRDs under config/crd (kubectl apply --server-side -R -f config/crd/)
	rm -f $(CRD_DIR)/*.yaml
	$(GO) run sigs.k8s.io/controller-tools/cmd/controller-gen@$(CONTROLLER_TOOLS_VERSION) crd paths=./internal/crd/... output:crd:artifacts:config=$(CRD_DIR)

clean:
	rm -rf bin
