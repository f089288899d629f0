# The documented way in: make build, make test, make bench, make fuzz, make lint.
GO ?= go
BIN := bin/orchestrator
# The release tag of the checkout, for `orchestrator --version`; the commit is recorded by
# the Go toolchain itself.
VERSION ?= $(shell git describe --tags --dirty 2>/dev/null || echo dev)
FUZZTIME ?= 30s

.PHONY: build test test-race test-quick test-busy test-deps bench fuzz lint bench-data demo demo-tdd demo-plan replay clean

# Without cgo: a static binary, which starts about 3 ms sooner (no dynamic loader, no C
# library to set up) and needs nothing of the C library (Go's own DNS resolver and user
# lookup serve).
build:
	CGO_ENABLED=0 $(GO) build -ldflags "-X main.version=$(VERSION)" -o $(BIN) ./cmd/orchestrator

# Build, then run the bundled example through `watch --once` with replayed agents.
demo: build
	./examples/demo.sh $(BIN)

# Build, then run the TDD cycle of the promo example's requirement with replayed agents.
demo-tdd: build
	./examples/tdd-demo.sh $(BIN)
# Build, then go from a requirements file and a test plan to a running `watch`: a scripted
# planner's tasks, checked by `orchestrator plan`, built by replayed agents.
demo-plan: build
	./examples/plan-demo.sh $(BIN)

# Everything, in two go test runs side by side (scripts/test.sh): the slow real-program
# suites (watch: the loop end to end with scripted agents, the sandbox and real git; agents:
# the real claude and codex programs) without the race detector, every other package with
# it. The code those two suites test runs in the binaries they build, not in their test
# process: test-race checks it, with those binaries race-built.
test: test-deps
	$(GO) vet ./...
	GO=$(GO) ./scripts/test.sh

# The slow real-program suites under the race detector, the orchestrator they run built with
# -race too (internal/racebuild): a race anywhere in the loop fails the run. With `make test`,
# every package has then run under the race detector. CI runs both.
test-race: test-deps
	$(GO) test -race -count=1 -timeout 60m ./watch ./agents

# Everything but the slow real-program suites (watch, agents): the unit tests, the gate's,
# the runners' and the commands' tests.
test-quick: test-deps
	$(GO) test -race -count=1 -timeout 30m $$($(GO) list ./... | grep -v -e '/watch$$' -e '/agents$$')

# The slow real-program suites as `make test` runs them, with a load generator beside them
# (three spinning processes per core): they must pass on a busy machine. BUSY=N sets the
# number of spinners.
test-busy: test-deps
	./scripts/test-busy.sh

# What the tests need beyond Go, installed from the registries when missing: pytest (Debian),
# vitest (npm) for the runner tests, and the real claude and codex programs (npm) for the
# adapter tests. Each script is idempotent and fast when everything is there.
test-deps:
	@for s in testrun/testdata/install-deps.sh agents/testdata/install-agents.sh; do \
		if [ -x $$s ]; then ./$$s || exit 1; fi; \
	done

# Benchmarks of SPEC/issue figures: parsing 1k/10k/50k-task queues, and `set` against sed.
bench:
	$(GO) test -run '^$$' -bench . -benchmem ./queue ./cmd/orchestrator ./testrun ./worktree

# Each fuzz target for a while (FUZZTIME=30s by default).
fuzz:
	$(GO) test ./queue -run '^$$' -fuzz '^FuzzParse$$' -fuzztime $(FUZZTIME)
	$(GO) test ./queue -run '^$$' -fuzz '^FuzzFastAgreesWithGoldmark$$' -fuzztime $(FUZZTIME)
	$(GO) test ./queue -run '^$$' -fuzz '^FuzzFallbackAgreesWithGoldmark$$' -fuzztime $(FUZZTIME)
	$(GO) test ./queue -run '^$$' -fuzz '^FuzzSplice$$' -fuzztime $(FUZZTIME)
	$(GO) test ./queue -run '^$$' -fuzz '^FuzzParsePlan$$' -fuzztime $(FUZZTIME)
	$(GO) test ./queue -run '^$$' -fuzz '^FuzzQuickValid$$' -fuzztime $(FUZZTIME)
	$(GO) test ./agents -run '^$$' -fuzz '^FuzzParseResult$$' -fuzztime $(FUZZTIME)
	$(GO) test ./agents -run '^$$' -fuzz '^FuzzUsageReports$$' -fuzztime $(FUZZTIME)
	$(GO) test ./testrun -run '^$$' -fuzz '^FuzzParse$$' -fuzztime $(FUZZTIME)
	$(GO) test ./testrun -run '^$$' -fuzz '^FuzzDetect$$' -fuzztime $(FUZZTIME)

# Replay commits of public Go, Python, Rust and TypeScript libraries through `watch --once` as TEST + BUILD
# tasks (watch/replay_test.go, cases in watch/testdata/replay/cases.json) and print landed /
# correctly refused / falsely refused. Opt-in, not part of `make test`: it needs local
# mirrors of those repositories (ORCHESTRATOR_REPLAY_MIRRORS, which must be set).
# STRICT=1 fails on every case whose outcome differs from its judgement.
replay:
	ORCHESTRATOR_REPLAY=1 ORCHESTRATOR_REPLAY_STRICT=$(STRICT) $(GO) test ./watch -run '^TestReplayHistory$$' -count=1 -v -timeout 3h

lint:
	@files=$$(git ls-files '*.go' | grep -v /testdata/); test -z "$$(gofmt -l $$files)" || { gofmt -l $$files; exit 1; }
	$(GO) vet ./...
	$(GO) run honnef.co/go/tools/cmd/staticcheck@v0.8.2 ./...

# A generated 10,000-task queue and its test plan, to repeat the benchmarks by hand.
bench-data:
	mkdir -p bin/bench/.orchestrator bin/bench/projectspec
	$(GO) run ./cmd/queuegen -tasks 10000 -o bin/bench/.orchestrator/task_queue.md -plan bin/bench/projectspec/test-plan-output.json -plan-extra 5000

clean:
	rm -rf bin
