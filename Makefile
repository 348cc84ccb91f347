# kmirror — the two commands a newcomer needs are `make run` and `make test`.
GO ?= go

.PHONY: run demo test generate kafka-up build vet

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

# All tests, real Apache Kafka included (jars fetched once from Maven Central).
test:
	$(GO) test -count=1 -timeout 25m ./...

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
