# TFRS Operator. `make demo` runs the main job on a local control plane; `make test` runs every
# test, `make unit` the fast tier alone. Each builds what it needs first. Tools come from the Go
# module proxy only (hack/tools).
SHELL := bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := build

TOOLS_BIN := $(shell bash hack/tools/build.sh --dir)
export TFRS_TOOLS_BIN := $(TOOLS_BIN)
export PATH := $(TOOLS_BIN):$(PATH)
# Local runs never need a passphrase typed in; real deployments set their own (README).
export PULUMI_SKIP_UPDATE_CHECK := true

GO_TEST_FLAGS ?= -count=1 -timeout 45m
PKGS ?= ./...
# The test tiers are build tags (hack/test.sh): unit (untagged), integration, e2e.
TEST_TAGS := integration,e2e
TEST_ENV = GO_TEST_FLAGS="$(GO_TEST_FLAGS)" PKGS="$(PKGS)"


.PHONY: build image tools generate manifests verify-generated test unit integration test-e2e fmt vet bench demo smoke clean-tools

# What `tfrs version` prints; override with `make build VERSION=v1.2.3`.
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT ?= $(shell git rev-parse --short=12 HEAD 2>/dev/null)
LDFLAGS := -X main.tfrsVersion=$(VERSION) -X main.tfrsCommit=$(COMMIT)

build: ## the tfrs binary
	go build -ldflags "$(LDFLAGS)" -o bin/tfrs ./cmd/tfrs

# The image (`make image`): assembled without a container daemon by hack/image, tagged
# $(IMAGE):$(RELEASE) (never latest; the manifests and the chart pin the same tag); its tfrs
# reports $(RELEASE). Same commit and tools, same digest (SOURCE_DATE_EPOCH: the commit time).
IMAGE ?= ghcr.io/tfrs-io/tfrs
RELEASE ?= v0.9.0
SOURCE_DATE_EPOCH ?= $(shell git log -1 --format=%ct 2>/dev/null || echo 0)
IMAGE_FLAGS ?=
image: ## OCI image without a daemon: bin/image/oci (layout), bin/image/tfrs.tar (docker load); IMAGE_FLAGS=-push REF
	bash hack/tools/build.sh pulumi >/dev/null
	bash hack/tools/build.sh provider >/dev/null
	go run ./hack/image -tag $(IMAGE):$(RELEASE) -commit "$(COMMIT)" -tools "$(TOOLS_BIN)" \
		-created $(SOURCE_DATE_EPOCH) -out bin/image $(IMAGE_FLAGS)

tools: ## Pulumi CLI + Kubernetes provider, etcd, kube-*, kwok, versitygw, controller-gen, helm (cached)
	bash hack/tools/build.sh >/dev/null
	bash hack/tools/helm.sh

generate: ## deepcopy for the API types
	bash hack/tools/build.sh controller_gen >/dev/null
	$(TOOLS_BIN)/controller-gen object:headerFile=hack/boilerplate.go.txt paths=./api/...

manifests: ## CRDs under config/crd/bases, RBAC under config/rbac
	bash hack/tools/build.sh controller_gen >/dev/null
	$(TOOLS_BIN)/controller-gen crd paths=./api/... output:crd:artifacts:config=config/crd/bases
	# RBAC comes from the reconcilers' markers, once operator/ exists.
	if [ -d operator ]; then $(TOOLS_BIN)/controller-gen rbac:roleName=tfrs-manager paths=./operator/... output:rbac:artifacts:config=config/rbac; fi
	# The chart reads copies (Helm sees only files inside the chart): CRDs, RBAC rules, dashboard, alerts.
	rm -rf charts/tfrs/files/crds charts/tfrs/files/rbac charts/tfrs/files/monitoring
	mkdir -p charts/tfrs/files/crds charts/tfrs/files/rbac charts/tfrs/files/monitoring
	cp config/crd/bases/*.yaml charts/tfrs/files/crds/
	cp config/rbac/role.yaml config/rbac/provisioner_role.yaml charts/tfrs/files/rbac/
	cp config/monitoring/tfrs-dashboard.json config/monitoring/prometheusrule.yaml charts/tfrs/files/monitoring/

verify-generated: generate manifests ## fails when generated files are stale
	git diff --exit-code -- api config charts && test -z "$$(git status --porcelain -- api config charts)" || { echo "generated files are stale: run make generate manifests"; exit 1; }

fmt:
	gofmt -l -w $$(git ls-files '*.go')

vet: ## every tier's files
	go vet -tags $(TEST_TAGS) ./...

# Each test target ends with `tests: N passed, N failed, N skipped` and prints each tier's time.
unit: ## the unit tier: no external process (every tool is a tripwire), no tools needed
	$(TEST_ENV) bash hack/test.sh unit

integration: ## the integration tier alone: real control plane, Pulumi CLI and provider, S3 server, helm
	$(TEST_ENV) bash hack/test.sh integration

test-e2e: ## the end-to-end suites alone (test/e2e)
	$(TEST_ENV) bash hack/test.sh e2e

test: ## every test once, what CI runs: unit first, then the tools, integration and e2e
	$(TEST_ENV) bash hack/test.sh unit integration e2e

# BENCH_FLAGS: e.g. -rounds 1 -scale 1,10 -idle 10 for a quick look (see go run ./test/bench -h).
BENCH_FLAGS ?=
bench: tools build ## tfrs against the floor (kubectl), idle cost, scale, memory: table on stdout and in bench-results.md
	go run ./test/bench -tfrs bin/tfrs -out bench-results.md $(BENCH_FLAGS)
	@echo; echo "engine micro-benchmarks (CLI processes and time per operation):"
	go test -tags $(TEST_TAGS) -run '^$$' -bench . -benchtime 3x -timeout 30m ./stacks/engine/ | tee bench-engine.txt
	@echo; echo "failover (2 operators + 2 API replicas on one S3 backend; leader SIGKILLed mid-update):"
	@go test -tags $(TEST_TAGS) -count=1 -run '^TestReplicasFailover$$' -v -timeout 15m ./test/e2e/ > bench-failover.log 2>&1; rc=$$?; \
	  grep -E 'BENCH|run +[0-9]|^(--- |ok|FAIL)' bench-failover.log | tee bench-failover.txt; exit $$rc

demo: tools build ## the main job on the embedded default: a local control plane + file:// state, the whole story
	./bin/tfrs dev --demo

smoke: tools build ## the smallest check: control plane + one tiny program up, no-op, destroy
	./bin/tfrs dev --smoke

clean-tools:
	rm -rf "$(dir $(TOOLS_BIN))"
