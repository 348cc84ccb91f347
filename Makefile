# kmirror — the two commands a newcomer needs are `make run` and `make test`.
GO ?= go

.PHONY: run demo test generate kafka-up build vet lint static image

build:
	$(GO) build -o bin/kmirror ./cmd/kmirror

# The main job: the console with two in-process Kafka clusters and a task
# replicating between them.
run:
	$(GO) run ./cmd/kmirror serve --demo

demo:
	$(GO) run ./cmd/kmirror demo

# From views/, as views/generate_test.go runs it: the generated files carry
# source paths relative to where templ runs, so running it from the root
# would write "views/x.templ" and fail the staleness test.
generate:
	cd views && $(GO) tool templ generate

vet:
	$(GO) vet ./...

# golangci-lint, pinned (the linters and why: .golangci.yml). .ci/run builds
# it once into this cache from the Go module proxy, as it does helm; by hand:
#   GOBIN=~/.cache/kmirror/tools/golangci-lint-v2.15.0 go install \
#     github.com/golangci/golangci-lint/v2/cmd/golangci-lint@v2.15.0
GOLANGCI_LINT_VERSION = v2.15.0
GOLANGCI_LINT ?= $(HOME)/.cache/kmirror/tools/golangci-lint-$(GOLANGCI_LINT_VERSION)/golangci-lint
lint:
	$(GOLANGCI_LINT) run ./...

# All tests, real Apache Kafka included (jars fetched once from Maven Central),
# and beside them every package's in-process tests again under the race detector
# (-short: real Kafka is the first run's), but for the packages that only
# drive processes and a browser (their code is raced where it lives; the
# race-built children and Chromium cost a minute).
RACE_PKGS = ./internal/replicator/ $(shell $(GO) list ./... | grep -v -E '/(internal/replicator|internal/consoletest|internal/apitest|bench|deploy)$$|/cmd/')
# The slowest packages first (go test runs them in the order given,
# TEST_PACKAGES at a time): started last, the replicator's 11 minutes ran
# alone.
SLOW_PKGS = ./internal/replicator/ ./internal/apitest/ ./internal/kafkatest/ ./bench/ ./internal/connect/connectengine/ ./internal/consoletest/ ./internal/connect/ ./cmd/kmirror/
# Parallel tests of one package at a time: the replicator's tests that take
# brokers away or wait for a broker's clock run side by side, each on
# clusters it may use (go test's default is the number of cores, 2).
TEST_PARALLEL = 12
# Packages at once. CI is not CPU-bound at two (vmstat every 10 s over a
# whole run: 55 % idle on average, ci36): most tests wait on brokers,
# Connect and clocks. Three cut the main pass from 827 s to 642 s once
# (ci23), and that run failed a replicator test under the load of the API
# tests' parallel phase overlapping it; that phase now starts after the
# replicator package has ended (the API package's sequential Connect tests
# come first and take longer).
TEST_PACKAGES = 3
# The race pass runs beside the main pass, at a lower priority: the main
# pass leaves about a quarter of two cores idle (waits on brokers, Connect
# and clocks; 1,673 of 2,280 CPU-s busy, ci57), and the race pass alone
# took 160-200 s after it. Tried before (ci61-63: 17 min 12 s against about
# 19 for the whole run) and taken back when starved -short tests failed:
# one asserted RUNNING at an instant (now polls), one asserted a call took
# under 100 ms (now counts dials), and 25 concurrent creates neared SQLite's
# 5 s busy timeout (writes now queue in the process). A -short test that
# waits on a clock must poll with a bound.
RACE_NICE = 10
# gotestsum (a go tool of the module) prints every test with its time as it
# ends, and the failures again at the end; the slowest tests are listed
# last from the JSON it keeps in bin/.
GOTESTSUM = $(GO) tool gotestsum --format testname
test:
	mkdir -p bin
	@race=0; main=0; \
	nice -n $(RACE_NICE) $(GOTESTSUM) --jsonfile bin/test-race.json -- -race -short -count=1 -timeout 15m $(RACE_PKGS) > bin/test-race.log 2>&1 & \
	pid=$$!; \
	$(GOTESTSUM) --jsonfile bin/test.json -- -count=1 -timeout 25m -p $(TEST_PACKAGES) -parallel $(TEST_PARALLEL) $(SLOW_PKGS) ./... || main=$$?; \
	wait $$pid || race=$$?; \
	echo "The race pass (-race -short, run beside the main pass at nice $(RACE_NICE)):"; cat bin/test-race.log; \
	echo "The slowest tests (over 20 s):"; $(GO) tool gotestsum tool slowest --jsonfile bin/test.json --threshold 20s; \
	[ $$main -eq 0 ] && [ $$race -eq 0 ]

# KAFKA_UP_FLAGS="-brokers 3 -min-isr 2" for multi-broker clusters
# (go run ./cmd/kafka-up -h lists the flags).
kafka-up:
	$(GO) run ./cmd/kafka-up $(KAFKA_UP_FLAGS)

# kmirror vs MirrorMaker 2 vs the raw limit on two real Kafka clusters, one
# run side by side (about 12 minutes on 2 cores); writes
# bench/results/<date>.md and .png. BENCH_FLAGS=-quick for a smoke run.
.PHONY: bench
bench:
	$(GO) run ./bench $(BENCH_FLAGS)

# A fully static binary (SQLite through cgo, linked statically; no NSS), as
# the container image needs: it runs on an empty base.
STATIC_TAGS = osusergo,netgo,sqlite_omit_load_extension
static:
	CGO_ENABLED=1 $(GO) build -trimpath -tags $(STATIC_TAGS) \
		-ldflags '-s -w -linkmode external -extldflags -static' -o bin/static/kmirror ./cmd/kmirror

# The container image (see Dockerfile for why the binary is built here): the
# context is bin/image/, staged from the static binary, the host's CA bundle
# and deploy/image/. buildah needs no daemon; IMAGE_TOOL=docker works too.
IMAGE ?= kmirror:dev
IMAGE_TOOL ?= buildah
IMAGE_FLAGS ?= $(if $(filter buildah,$(IMAGE_TOOL)),--storage-driver vfs,)
# --format docker: the OCI format has no HEALTHCHECK, buildah would drop it.
IMAGE_BUILD_FLAGS ?= $(if $(filter buildah,$(IMAGE_TOOL)),--isolation chroot --format docker,)
CA_BUNDLE ?= /etc/ssl/certs/ca-certificates.crt
image: static
	rm -rf bin/image && mkdir -p bin/image/etc/ssl/certs bin/image/data bin/image/tmp
	cp bin/static/kmirror bin/image/kmirror
	cp deploy/image/passwd deploy/image/group bin/image/etc/
	cp $(CA_BUNDLE) bin/image/etc/ssl/certs/ca-certificates.crt
	$(IMAGE_TOOL) $(IMAGE_FLAGS) build $(IMAGE_BUILD_FLAGS) -f Dockerfile -t $(IMAGE) bin/image
