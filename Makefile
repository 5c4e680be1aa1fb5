# lxd-deployd: `make help` lists the targets.

GO ?= go
export PATH := $(PATH):/usr/local/go/bin
export CGO_ENABLED ?= 1

RUN_DIR := $(CURDIR)/.run
BUILD_DEPS := libdqlite-dev libraft-dev pkg-config gcc
TEST_DEPS := $(BUILD_DEPS) lxd busybox-static prometheus chromium haproxy
BENCH_DEPS := $(TEST_DEPS) python3-jinja2 python3-yaml

.PHONY: help
help: ## list the targets
	@grep -E '^[a-zA-Z_-]+:.*?## ' $(MAKEFILE_LIST) | awk 'BEGIN {FS = ":.*?## "}; {printf "  %-14s %s\n", $$1, $$2}'

.PHONY: deps-build
deps-build: ## install the C libraries the daemon needs (apt, when root and missing)
	@./.ci/apt-install $(BUILD_DEPS)

.PHONY: deps-test
deps-test: ## install what the tests need: dqlite, LXD, busybox-static, promtool, chromium, haproxy (apt, when root and missing)
	@./.ci/timed "apt (what the tests need)" ./.ci/apt-install $(TEST_DEPS)

.PHONY: build
build: deps-build ## build bin/lxd-deployd (cgo, dqlite) and bin/lxd-deploy (static)
	$(GO) build -o bin/lxd-deployd ./lxd-deployd
	CGO_ENABLED=0 $(GO) build -o bin/lxd-deploy ./cli

# PRIVATE_LXD is where `make run` keeps a private LXD when none answers; empty turns it off.
PRIVATE_LXD ?= $(RUN_DIR)/lxd

.PHONY: run
run: build ## run the daemon in the foreground, data in ./.run/ (a private LXD in ./.run/lxd if none answers; PRIVATE_LXD= turns it off)
	@if [ -n "$(PRIVATE_LXD)" ]; then ./.ci/apt-install lxd busybox-static; fi
	@./.ci/apt-install haproxy # the private front door of shapes with traffic (doc/traffic.md)
	mkdir -p $(RUN_DIR)
	LXD_DEPLOYD_DIR=$(RUN_DIR) ./bin/lxd-deployd --private-lxd="$(PRIVATE_LXD)"

# `make test` prints each step's wall time ("== step: N s"): apt and the module downloads
# apart from vet and the tests. ./test runs its serial suites in two lanes beside its
# parallel ones (test/lanes_test.go); LXDTEST_LANES=0 runs them one after another instead.
.PHONY: test
test: deps-test ## go vet, then every test: unit and end-to-end against a private LXD
	@./.ci/timed "module downloads" $(GO) mod download
	./.ci/timed "go vet" $(GO) vet ./...
	LXDTEST_REQUIRE=1 ./.ci/timed "go test (unit and end to end)" $(GO) test -race -count=1 -timeout 45m ./...

.PHONY: test-cluster
test-cluster: deps-test ## only the suites on a real 3-member LXD cluster (doc/placement.md); `test` runs them too
	LXDTEST_REQUIRE=1 $(GO) test -race -count=1 -timeout 20m -run 'TestCluster$$' ./test/lxdtest/
	LXDTEST_REQUIRE=1 $(GO) test -race -count=1 -timeout 20m -run 'TestLXDCluster' ./test/

.PHONY: bench
bench: deps-test ## print performance figures: database, template expansion, launches, listings (100 and 1,000 instances), health checks and exec capacity on a private LXD, the front door's overhead
	@./.ci/apt-install $(BENCH_DEPS)
	$(GO) test -run '^$$' -bench . -benchtime 200x ./db/
	$(GO) test -run '^$$' -bench 'Expand10kShapes$$|Shapes10k' -benchtime 10x ./shared/templates/
	$(GO) test -run '^$$' -bench 'Isolated' -benchtime 10x ./shared/templates/isolate/
	$(GO) test -run '^$$' -bench . -benchtime 20x ./lxd-deployd/metrics/
	$(GO) test -run '^$$' -bench 'LoopsAtRest' -benchtime 50x ./lxd-deployd/fleet/
	$(GO) test -run '^$$' -bench 'FrontDoor' -benchtime 1x ./lxd-deployd/frontdoor/haproxy/
	$(GO) test -run '^$$' -bench 'PythonJinja2' -benchtime 1x -timeout 30m ./shared/templates/
	LXDTEST_REQUIRE=1 $(GO) test -run '^$$' -bench . -benchtime 1x -timeout 60m ./test/

# BenchmarkScale (test/bench_scale_test.go) at 1,000 instances: every figure of issue 20's goals.
# `make bench` runs it at 200. SCALE_BENCH_PROFILE=dir keeps the daemon's heap and CPU profiles.
.PHONY: bench-1000
bench-1000: deps-test ## print the figures of 1,000 instances over 4 shapes on one daemon (about 20 minutes on 2 shared cores)
	LXDTEST_REQUIRE=1 SCALE_BENCH_INSTANCES=1000 SCALE_BENCH_PROFILE=$(SCALE_BENCH_PROFILE) \
		$(GO) test -run '^$$' -bench '^BenchmarkScale$$' -benchtime 1x -timeout 90m ./test/

# BenchmarkRolloutAtScale (test/rollout_bench_test.go) beside 1,000 containers: a rolling
# rollout of 100 and 100 concurrent launches against the same LXD work done directly, with
# LXD's CPU and the requests made of LXD (about 6 minutes on 2 shared cores). `make bench`
# runs it with no background. ROLLOUT_BENCH_BACKGROUND_RUNNING=1 starts the background.
ROLLOUT_BENCH_BACKGROUND ?= 1000

.PHONY: bench-rollout
bench-rollout: deps-test ## print what a rollout of 100 and 100 launches cost beside 1,000 instances
	LXDTEST_REQUIRE=1 ROLLOUT_BENCH_BACKGROUND=$(ROLLOUT_BENCH_BACKGROUND) ROLLOUT_BENCH_PROFILE=$(ROLLOUT_BENCH_PROFILE) \
		$(GO) test -run '^$$' -bench '^BenchmarkRolloutAtScale$$' -benchtime 1x -timeout 60m ./test/

# The randomized invariant suite (test/torture_test.go): `make test` runs it for 60 s with the
# operations of open known issues left out; `make torture` runs every operation for
# TORTURE_TIME. TORTURE_SEED replays a run's operations; TORTURE_OPS=safe leaves out those of
# open issues; TORTURE_LOG=file keeps the operation log of a run that passed.
TORTURE_TIME ?= 10m
TORTURE_OPS ?= all
TORTURE_TIMEOUT ?= 2h

.PHONY: torture
torture: deps-test ## run the randomized invariant suite for TORTURE_TIME (default 10m); TORTURE_SEED=n replays a run
	LXDTEST_REQUIRE=1 TORTURE_TIME=$(TORTURE_TIME) TORTURE_OPS=$(TORTURE_OPS) TORTURE_SEED=$(TORTURE_SEED) \
		$(GO) test -count=1 -v -run '^TestTorture$$' -timeout $(TORTURE_TIMEOUT) ./test/

# Fuzz targets as "package:target"; `go test` (and so `make test`) runs their seed corpora in
# testdata/fuzz, `make fuzz` explores each for FUZZTIME.
FUZZTIME ?= 60s
FUZZ_TARGETS := ./lxd-deployd/auth:FuzzVerifyToken ./shared/validate:FuzzName ./shared/validate:FuzzConfigKey \
	./shared/validate:FuzzWebhookURL ./shared/validate:FuzzCPULimit ./shared/webhook:FuzzVerify ./lxd-deployd:FuzzDecodeBody ./lxd-deployd/metrics:FuzzMethod \
	./shared/templates:FuzzJinja ./shared/templates:FuzzPython ./shared/templates:FuzzConfig ./shared/schedule:FuzzCron

.PHONY: fuzz
fuzz: ## run every fuzz target for FUZZTIME (default 60s) each; failures land in testdata/fuzz
	@set -e; for t in $(FUZZ_TARGETS); do \
		echo "== $${t#*:} ($${t%%:*})"; \
		$(GO) test -run '^$$' -fuzz "^$${t#*:}$$" -fuzztime $(FUZZTIME) "$${t%%:*}"; \
	done

.PHONY: check-static
check-static: ## gofmt, go vet, and staticcheck when installed
	@test -z "$$(gofmt -l . | tee /dev/stderr)" || (echo "run gofmt -w on the files above"; exit 1)
	$(GO) vet ./...
	@if command -v staticcheck >/dev/null; then staticcheck ./...; else echo "staticcheck not installed: skipped"; fi

.PHONY: clean
clean: ## remove built binaries and ./.run (and the private LXD ./.run/lxd links to, if any); stops the private front door's HAProxy, which outlives the daemon
	if [ -f $(RUN_DIR)/frontdoor/haproxy.pid ]; then kill $$(cat $(RUN_DIR)/frontdoor/haproxy.pid) 2>/dev/null || true; fi
	if [ -L $(RUN_DIR)/lxd ]; then rm -rf "$$(readlink $(RUN_DIR)/lxd)"; fi
	rm -rf bin $(RUN_DIR)
