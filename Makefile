# rankgate — developer and CI entry points. `make` (or `make help`) lists targets.

SHELL := bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

GO                ?= go
CLUSTER_SH        := deploy/cluster/cluster.sh
CLUSTER_PORT      ?= 7000
TEST_CLUSTER_PORT ?= 7100
CONFIG            ?= deploy/rankgate.dev.yaml

# Integration tests: the Redis Cluster started by test-cluster-up, and a
# PostgreSQL for the ledger: deploy/deps.sh prints the DSN of one that answers
# ($RANKGATE_TEST_PG_DSN if set, else the local server on 5432, else a private
# server it starts on 55432, installing PostgreSQL if it must).
DEPS_SH            := deploy/deps.sh
TEST_CLUSTER_ADDRS = $(shell $(CLUSTER_SH) -p $(TEST_CLUSTER_PORT) addrs)
# (An assignment of its own, so that a failing deps.sh stops the recipe.)
PG_DSN             = pg_dsn="$$($(DEPS_SH) postgres)";
WITH_TEST_DEPS     = $(PG_DSN) RANKGATE_TEST_PG_DSN="$$pg_dsn" RANKGATE_TEST_REDIS_CLUSTER=$(TEST_CLUSTER_ADDRS)

.PHONY: size-bench soak help cluster-up cluster-down cluster-status test-cluster-up test test-race fuzz run bench lint vet build

help: ## list targets
	@echo "usage: make <target> [CLUSTER_PORT=$(CLUSTER_PORT)] [TEST_CLUSTER_PORT=$(TEST_CLUSTER_PORT)]"
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed -E 's/^([a-z-]+):.*## (.*)/  \1\t\2/' | expand -t 20

cluster-up: ## start the dev Redis Cluster (3 masters + 3 replicas) on CLUSTER_PORT..+5
	$(CLUSTER_SH) -p $(CLUSTER_PORT) up

cluster-down: ## stop the Redis Cluster on CLUSTER_PORT and remove its data
	$(CLUSTER_SH) -p $(CLUSTER_PORT) down

cluster-status: ## show the Redis Cluster on CLUSTER_PORT
	$(CLUSTER_SH) -p $(CLUSTER_PORT) status

# The shared test cluster always runs default settings (fault tests use their own ports).
test-cluster-up: ## start the test Redis Cluster on TEST_CLUSTER_PORT..+5
	RANKGATE_CLUSTER_NODE_TIMEOUT= RANKGATE_CLUSTER_EXTRA_ARGS= $(CLUSTER_SH) -p $(TEST_CLUSTER_PORT) up >/dev/null

vet: ## go vet
	$(GO) vet ./...

# What the tests need beyond Go: chromium (the status page's browser test);
# redis-server comes with test-cluster-up, PostgreSQL with WITH_TEST_DEPS.
.PHONY: test-deps
test-deps: ## install what the tests need when it is missing (chromium; PostgreSQL and redis-server on use)
	$(DEPS_SH) chromium

# The test cluster holds nothing but tests' keys: it is flushed before the Go
# tests, so that runs on a long-lived test cluster do not pile keys up (bounded
# scans, like the monitor's, would see only part of a crowded keyspace).
test: vet test-deps test-cluster-up ts-test ## go vet, the TypeScript client's tests, then all Go tests against the test cluster (flushed first) and PostgreSQL (installed/started when missing)
	$(CLUSTER_SH) -p $(TEST_CLUSTER_PORT) flush
	$(WITH_TEST_DEPS) $(GO) test -count=1 ./...

# The TypeScript client (clients/ts): node >= 20 and npm (deploy/deps.sh node),
# its dependencies exactly as package-lock.json pins them (npm ci, again
# whenever the lockfile changes), then `npm test`: the generated types must
# be what openapi-typescript makes of api/openapi.yaml (stale: it fails; make
# ts-generate), the build (tsc, strict), the README's examples type-check, and
# node --test against a gateway built from this tree on the test cluster and
# a fresh PostgreSQL database.
TS_DIR   := clients/ts
TS_STAMP := $(TS_DIR)/node_modules/.rankgate-lock

.PHONY: ts-deps ts-generate ts-test generate
ts-deps: ## node and npm (installed when missing), and clients/ts's dependencies from its lockfile (npm ci)
	@$(DEPS_SH) node
	@if ! cmp -s $(TS_DIR)/package-lock.json $(TS_STAMP); then \
		echo "npm ci (clients/ts)"; \
		(cd $(TS_DIR) && npm ci --no-audit --no-fund) && cp $(TS_DIR)/package-lock.json $(TS_STAMP); \
	fi

ts-generate: ts-deps ## regenerate clients/ts/src/schema.ts from api/openapi.yaml (openapi-typescript)
	cd $(TS_DIR) && npm run --silent generate

generate: ts-generate ## regenerate the code generated from api/openapi.yaml

# What `make generate` writes. The Go wire types (api/wire) are written by
# hand, not generated: api/wire's test ties them to api/openapi.yaml, and
# generate-check runs it too.
GENERATED := $(TS_DIR)/src/schema.ts

.PHONY: generate-check
generate-check: generate ## make generate, fail when a generated file differs from the committed one; the Go wire types match api/openapi.yaml
	@git diff --exit-code --stat -- $(GENERATED) || { echo "generated files are stale: run make generate and commit them"; exit 1; }
	$(GO) test -count=1 ./api/...

ts-test: ts-deps test-cluster-up ## the TypeScript client: generated types up to date, build, tests against a real gateway on the test cluster
	$(WITH_TEST_DEPS) npm --prefix $(TS_DIR) test

test-race: vet test-deps test-cluster-up ## go vet, then every test with -race
	$(WITH_TEST_DEPS) $(GO) test -race -count=1 ./...

# Fault injection (internal/faults, build tag faults): kills, pauses, restarts
# and reconfigures nodes of clusters of its own on base ports 7500-7589 and
# 7920-7949 (plus gateway processes on 7960-7962 and a private PostgreSQL on
# 7989), which it starts and stops; never the dev or test cluster, never the
# shared PostgreSQL. Results: docs/reliability.md.
.PHONY: test-faults
test-faults: ## fault-injection suite against its own local clusters (ports 7500-7589, 7920-7989), under 10 minutes
	$(DEPS_SH) iproute2
	$(PG_DSN) RANKGATE_TEST_PG_DSN="$$pg_dsn" $(GO) test -tags faults -count=1 -v -timeout 15m ./internal/faults/

# Fuzz targets, package:FuzzName; each runs for FUZZTIME, one after another
# (go test -fuzz takes one target of one package at a time). Failing inputs
# land in the package's testdata/fuzz/FuzzName/; commit them with the fix.
# FUZZTIME is an execution count (Nx), not a duration: with a duration, the
# go1.26 fuzz coordinator can report a spurious "context deadline exceeded"
# failure at the deadline when workers are starved of CPU (golang/go#75804,
# fixed in go1.27). A count has no deadline to race. A duration still works
# (FUZZTIME=30s) for local exploration.
FUZZTIME ?= 500000x
FUZZ_TARGETS := \
	./internal/rank:FuzzValidIDs \
	./internal/rank:FuzzScoreRoundTrip \
	./internal/period:FuzzParse \
	./internal/gateway:FuzzDecodeCursor \
	./internal/httpapi:FuzzEventJSON \
	./internal/httpapi:FuzzFastEventSameAsStrict \
	./internal/httpapi:FuzzAuthorizationHeader

fuzz: ## run every fuzz target for FUZZTIME (default 500000x executions) each
	@for t in $(FUZZ_TARGETS); do \
		pkg=$${t%%:*}; name=$${t##*:}; \
		echo "$(GO) test -run '^\$$' -fuzz '^$$name\$$' -fuzztime $(FUZZTIME) $$pkg"; \
		$(GO) test -run '^$$' -fuzz "^$$name\$$" -fuzztime $(FUZZTIME) "$$pkg"; \
	done

run: cluster-up ## start the dev cluster and the gateway on :8080, seeded with demo data
	@$(DEPS_SH) curl
	@(deploy/demo-seed.sh || true) &
	$(GO) run ./cmd/gateway -config $(CONFIG)

bench: ## benchmarks of ./internal/...
	$(GO) test -run '^$$' -bench . -benchmem ./internal/...

# staticcheck: `make staticcheck-install` puts this version in $(go env GOPATH)/bin.
STATICCHECK_VERSION ?= v0.8.2

lint: staticcheck-install ts-lint generate-check ## gofmt (must be clean), go vet, staticcheck $(STATICCHECK_VERSION) (installed when missing), Markdown links; clients/ts: tsc clean; generated code up to date (generate-check)
	@unformatted="$$(gofmt -l .)"; \
	if [[ -n "$$unformatted" ]]; then echo "gofmt: these files need formatting (run gofmt -w):"; echo "$$unformatted"; exit 1; fi
	$(GO) test -count=1 -run '^TestMarkdownLinksResolve$$' .
	$(GO) vet ./...
	$(GO) vet -tags faults ./internal/faults/
	@echo "staticcheck ./... (and -tags faults)"
	"$$($(GO) env GOPATH)/bin/staticcheck" ./...
	"$$($(GO) env GOPATH)/bin/staticcheck" -tags faults ./internal/faults/

.PHONY: ts-lint
ts-lint: ts-deps ## clients/ts: the generated types up to date with api/openapi.yaml, tsc (strict) clean, README examples type-check
	cd $(TS_DIR) && npm run --silent lint

.PHONY: staticcheck-install
staticcheck-install: ## go install staticcheck $(STATICCHECK_VERSION) into $(go env GOPATH)/bin unless it is there
	@STATICCHECK_VERSION=$(STATICCHECK_VERSION) $(DEPS_SH) staticcheck

.PHONY: deploy-check
deploy-check: ## validate the deploy files without an engine: helm lint, helm template | kubeconform -strict (offline schemas), compose config (go-installs helm, kubeconform)
	deploy/deploy-check.sh

.PHONY: check-rules
check-rules: ## promtool (installed when missing): check and unit-test deploy/prometheus (rules.yml, rules_test.yml, prometheus.yml)
	@$(DEPS_SH) promtool
	promtool check rules deploy/prometheus/rules.yml
	promtool test rules deploy/prometheus/rules_test.yml
	promtool check config deploy/prometheus/prometheus.yml

build: ## build all commands into bin/
	@mkdir -p bin
	$(GO) build -o bin/ ./cmd/...

.PHONY: loadtest
loadtest: ## run the load tool: make loadtest ARGS='...'
	$(GO) run ./loadtest $(ARGS)

.PHONY: bench-writes
bench-writes: ## writes of this tree ÷ an earlier commit's, paired A-B-B-A (events, batches of 100, 16 shards; FEED=1: feed on ÷ off): own cluster on BENCH_PORT (7250), BASE (61ffcf5), ROUNDS, DURATION
	deploy/bench-writes.sh

.PHONY: bench-fanout
bench-fanout: ## sharded reads vs naive fan-out and one sorted set: own cluster on BENCH_PORT (7210), MEMBERS (1M), ROUNDS, KEEP=1
	deploy/bench-fanout.sh

.PHONY: bench-refresh
bench-refresh: ## cached hot Top-100 (16 shards) at its refreshes: p50/p99 of this tree vs BASE (f06cb1f) vs a plain net/http handler, interleaved, per load-tool client (CLIENTS): own cluster on BENCH_PORT (7320), ROUNDS, DURATION, WORKERS (16); PIN=1: servers on CPU 0, the load tool on CPU 1
	deploy/bench-refresh.sh

.PHONY: bench-live
bench-live: ## live boards vs polling in the same run, and a plain Go server pushing and polled the same way (the floor): delivery delay, drops, CPU and memory per client, Redis commands/s: own cluster on BENCH_PORT (7360), KS (1000,3000), DURATION, RATE
	deploy/bench-live.sh

.PHONY: bench-index
bench-index: ## the read index vs fan-outs and one sorted set, feed on/off writes, freshness, load, heap, idle: own cluster on BENCH_PORT (7230), MEMBERS (1M), ROUNDS, KEEP=1
	deploy/bench-index.sh

size-bench: ## Top-100 p50 against board size (100k vs 10M members, 3 rounds; SIZES, ROUNDS, PREFILL=0, CLEAN=1) on the dev cluster
	deploy/size-bench.sh

.PHONY: bench-ledger
bench-ledger: ## ledger mode ÷ Redis-only side by side: a gateway per mode on the cluster on CLUSTER_PORT, a fresh PostgreSQL database (dropped after); BENCH_DURATION, BENCH_ROUNDS, BENCH_PHASES
	BENCH_CLUSTER_PORT=$(CLUSTER_PORT) deploy/bench-ledger.sh

soak: ## 10 minutes of mixed load through a real gateway on the dev cluster; heap, goroutines, error rate before/after (SOAK_DURATION, SOAK_RATE)
	deploy/soak.sh
