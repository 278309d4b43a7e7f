# Herald — every entry point sets up what it needs on a fresh Debian machine.
SHELL := /bin/bash
SWIFT ?= swift
# Debian package → pkg-config module it provides.
SYSTEM_DEPS := libcurl4-openssl-dev:libcurl libuv1-dev:libuv libidn2-dev:libidn2 libsqlite3-dev:sqlite3 pkg-config:

.PHONY: build-deps deps fleet-deps fleet-rules build build-strict check-libcurl-minimum test fleet-test fleet-demo test-tsan test-asan leak-check fuzz soak demo docs docs-coverage lint bench-notifications bench-json bench-transfers bench-cache bench-streaming bench-instructions cache-tests clean

## build-deps: what building and running Herald needs: libcurl, libuv, libidn2 and SQLite development files when
## pkg-config can't find them, and Debian's publicsuffix list (cookie domains are checked against it at run time).
## `make demo` and `make build` need no more.
##
## deps: build-deps, and what the tests need too: the openssl CLI (the TLS tests make a throwaway CA and run
## `openssl s_server` on loopback), python3 and binutils' strings for check-libcurl-minimum, iproute2's ip, with
## which the tests bring up the loopback interface of the network namespace they run in, node, which runs the HTTP
## caching test suite, tinyproxy (HTTP proxy), dante-server (SOCKS5 proxy) and nginx (HTTP/2 over TLS): the proxy
## and HTTP/2 tests start their own on a loopback port, in the foreground, and stop it.
##
## Each installs what is missing with apt-get, through sudo only when not root. Debian starts a service package's
## system service when it installs it, listening on every interface (nginx on port 80, tinyproxy on 8888,
## prometheus on 9090) and enabled at every boot: for the service packages it installed itself, the step then
## disables the system service and, where systemd runs, stops it (`STOP_INSTALLED_SERVICES`). Packages that were
## there before are left as they were.
STOP_INSTALLED_SERVICES := if command -v systemctl >/dev/null; then \
		if [ -d /run/systemd/system ]; then now="--now"; else now=""; fi; \
		for package in $$missing; do \
			case $$package in nginx|tinyproxy|prometheus) unit=$$package;; dante-server) unit=danted;; *) continue;; esac; \
			$$SUDO systemctl disable $$now $$unit >/dev/null 2>&1 || \
				echo "warning: could not disable the $$unit service it installed: run systemctl disable --now $$unit"; \
		done; \
	fi
APT_INSTALL := if [ -n "$$missing" ]; then \
		echo "installing:$$missing"; \
		if [ "$$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi; \
		$$SUDO apt-get -o DPkg::Lock::Timeout=600 update -qq && \
			$$SUDO env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq $$missing && \
			{ $(STOP_INSTALLED_SERVICES); }; \
	fi
build-deps:
	@missing=""; \
	command -v pkg-config >/dev/null || missing="pkg-config"; \
	[ -f /usr/share/publicsuffix/public_suffix_list.dat ] || missing="$$missing publicsuffix"; \
	for pair in $(SYSTEM_DEPS); do \
		pkg=$${pair%%:*}; mod=$${pair##*:}; \
		[ -z "$$mod" ] && continue; \
		pkg-config --exists "$$mod" 2>/dev/null || missing="$$missing $$pkg"; \
	done; \
	$(APT_INSTALL)

deps: build-deps
	@missing=""; \
	command -v openssl >/dev/null || missing="$$missing openssl"; \
	command -v tinyproxy >/dev/null || [ -x /usr/bin/tinyproxy ] || [ -x /usr/sbin/tinyproxy ] || \
		missing="$$missing tinyproxy"; \
	[ -x /usr/sbin/danted ] || missing="$$missing dante-server"; \
	[ -x /usr/sbin/nginx ] || missing="$$missing nginx"; \
	command -v python3 >/dev/null || missing="$$missing python3"; \
	command -v strings >/dev/null || missing="$$missing binutils"; \
	command -v ip >/dev/null || missing="$$missing iproute2"; \
	command -v node >/dev/null || missing="$$missing nodejs"; \
	$(APT_INSTALL)

build: build-deps
	$(SWIFT) build

## build-strict: the library targets with warnings as errors, in a scratch path of their own (CI runs it).
## Only Herald's own targets: a dependency's warnings are not ours to fix.
STRICT_TARGETS := HeraldNotifications HeraldNetlink HeraldCookies HeraldEngine Herald HeraldObservers HeraldTesting
build-strict: deps
	for target in $(STRICT_TARGETS); do \
		$(SWIFT) build --scratch-path .build-strict --target $$target -Xswiftc -warnings-as-errors || exit 1; \
	done

## check-libcurl-minimum: the CCurl shim and the Herald module built against libcurl headers lowered to the
## oldest supported version (README.md, "Supported platforms"), and the guarded fallbacks run both ways.
check-libcurl-minimum: deps
	.ci/check-libcurl-minimum.sh

RACE_SUITES := CancelRaceStressTests|SuspendAtLastByteTests
TIMED_TESTS := StreamingTests/cancelConsumer|TransportLaneTests|RetryTests/resourceTimeoutAcrossThreeHops|TimeInQueueTests
LOOPBACK_ONLY := $(CURDIR)/.ci/loopback-only
# Each test process ends after TEST_TIMEOUT seconds, with a message saying so, rather than holding CI until its
# own limit: a test that hangs (a deadlock, a wait without a timeout) fails its run in minutes, not in an hour and a
# half (.ci/time-limit, which also passes a Ctrl-C on to the tests). No run needs more than a few minutes, even on a
# loaded two-core machine.
TEST_TIMEOUT ?= 1200
TEST_RUN := $(LOOPBACK_ONLY) $(CURDIR)/.ci/time-limit $(TEST_TIMEOUT)

## test: the whole test suite (what CI runs): the library's, then the samples' (their own package, in Samples/).
test: deps
	@# The fleet's Prometheus rules first: a second's work, and no Swift build behind it.
	$(MAKE) --no-print-directory fleet-rules
	$(SWIFT) build --build-tests
	@# Every test process runs in a network namespace whose only interface is loopback (.ci/loopback-only),
	@# so no test can send a packet to any other address, even by mistake.
	$(TEST_RUN) $(SWIFT) test --skip-build --skip LargeTransferTests --skip LargeStreamingTests --skip LoadTests \
		--skip StressTests --skip '$(RACE_SUITES)' --skip ClosedPipeSignalTests --skip ReachabilityNamespaceTests \
		--skip '$(TIMED_TESTS)' --skip DiskResponseCacheProcessTests
	@# Tests that time one reaction in milliseconds (a consumer's cancellation ending its transfer within 100 ms)
	@# or compare two timed rounds (the transport lane's redirect hops with and without slow user code), or that
	@# need a paced server never silent for a 2 s idle timeout (a request waiting for another's connection): in a
	@# process of their own, where 150 other suites running at once on two cores don't decide the times, one test at a
	@# time (--no-parallel), so that neither times the other's load.
	$(TEST_RUN) $(SWIFT) test --skip-build --no-parallel --filter '$(TIMED_TESTS)'
	@# The reachability tests add and remove links, addresses and routes, and take loopback's routes away: in a
	@# process and a namespace of their own, where no other suite's server needs loopback meanwhile.
	HERALD_NETNS_TESTS=1 $(TEST_RUN) $(SWIFT) test --skip-build --filter ReachabilityNamespaceTests
	@# The closed-pipe test counts every SIGPIPE the process receives: beside the other suites' test servers
	@# (SwiftNIO ignores SIGPIPE process-wide and lets socket writes raise it) it would count theirs too.
	$(TEST_RUN) $(SWIFT) test --skip-build --filter ClosedPipeSignalTests
	@# The contract-breach races: one burns both cores beside a poster and a canceller, the other needs suspend()
	@# to land within microseconds of a transfer's last byte. Beside other suites they would starve those
	@# suites' timeouts and be starved themselves, so they run in a process of their own, one test at a time.
	$(TEST_RUN) $(SWIFT) test --skip-build --no-parallel --filter '$(RACE_SUITES)'
	@# The disk cache across processes (about 10 s alone): a child killed 100 times mid-store, then two children
	@# storing in one folder at once, fsync-bound on both cores; in a process of their own, beside no other suite.
	$(TEST_RUN) $(SWIFT) test --skip-build --filter DiskResponseCacheProcessTests
	@# The public HTTP caching suite against the response cache (under a minute): where a copy of it is present.
	@if [ -d "$(CACHE_TESTS)" ] && command -v node >/dev/null; then $(MAKE) --no-print-directory cache-tests; \
	else echo "cache-tests: skipped (no suite at CACHE_TESTS=$(CACHE_TESTS), or no node)"; fi
	@# The load and stress tests keep both cores busy for seconds (10,000 connections; 12 threads posting and
	@# churning): in a process of their own, one test at a time, so that no other test's timeouts fire beside them.
	$(TEST_RUN) $(SWIFT) test --skip-build --no-parallel --filter 'LoadTests|StressTests' --skip '$(RACE_SUITES)'
	@# The 256 MiB transfers measure their own RSS growth, so they run alone in a process of their own.
	$(TEST_RUN) $(SWIFT) test --skip-build --filter LargeTransferTests
	@# The 1 GiB slow-consumer stream measures its own RSS growth too: alone, in a process of its own.
	$(TEST_RUN) $(SWIFT) test --skip-build --filter LargeStreamingTests
	@# The samples (activity-counter and its CLI tests) build against Herald by path in a package of their own,
	@# so that users of Herald never resolve swift-argument-parser; in the library's build folder unless
	@# SHARED_SCRATCH is empty (see fleet-test).
	cd Samples && $(SWIFT) build --build-tests --scratch-path $(SAMPLES_SCRATCH) && \
		$(TEST_RUN) $(SWIFT) test --skip-build --scratch-path $(SAMPLES_SCRATCH)
	@# The fleet (Hummingbird services, swift-otel, swift-prometheus, a real Prometheus): a package of its own.
	$(MAKE) fleet-test

## fleet-deps: what the fleet sample (Samples/Fleet) needs beside Swift packages and build-deps: iproute2's ip (its
## tests and demo run in a network namespace with loopback alone), Debian's prometheus (its tests
## and demo start their own, in the foreground on a loopback port, with a temporary storage folder, and stop it;
## the system service a fresh install starts is disabled, as for deps) and PyPI's opentelemetry-proto, in a venv
## under the fleet's build folder, for its OTLP receiver.
FLEET := Samples/Fleet
FLEET_VENV := $(FLEET)/.build/otlp-venv
OTLP_PROTO_VERSION := 1.45.2
fleet-deps: build-deps
	@missing=""; \
	[ -x /usr/bin/prometheus ] || missing="prometheus"; \
	command -v ip >/dev/null || missing="$$missing iproute2"; \
	python3 -c 'import venv, ensurepip' >/dev/null 2>&1 || missing="$$missing python3-venv"; \
	if [ -n "$$missing" ]; then \
		echo "installing:$$missing"; \
		if [ "$$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi; \
		$$SUDO apt-get -o DPkg::Lock::Timeout=600 update -qq && \
			$$SUDO env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends $$missing && \
			{ $(STOP_INSTALLED_SERVICES); }; \
	fi
	@$(FLEET_VENV)/bin/python3 -c 'import opentelemetry.proto' 2>/dev/null || { \
		mkdir -p $(FLEET)/.build && python3 -m venv $(FLEET_VENV) && \
		$(FLEET_VENV)/bin/pip install -q --disable-pip-version-check opentelemetry-proto==$(OTLP_PROTO_VERSION); }

## fleet-rules: checks the recording and alerting rules shipped for Herald's metrics (Samples/Fleet/prometheus)
## with promtool, Debian's prometheus's: their syntax, and their unit tests (series that fire and series that don't).
fleet-rules: fleet-deps
	cd $(FLEET)/prometheus && promtool check rules herald-rules.yml && promtool test rules herald-rules.test.yml

## fleet-test: the fleet's rules (fleet-rules), then its tests: Prometheus's answers about service A's Herald client
## under their Prometheus names, HELP lines and buckets, the connection wait's share of the p99, one trace through
## A and B with the resource attributes and connection timings.
## The samples and the fleet build in the library's build folder, .build (SHARED_SCRATCH=1, the default), rather than
## in Samples/.build and Samples/Fleet/.build: the Herald, SwiftNIO, swift-crypto, swift-log, swift-metrics and
## tracing modules that the library's build made there are reused rather than compiled twice more, and only what
## each package adds is compiled (for the fleet: Hummingbird, swift-otel and its HTTP client with BoringSSL,
## swift-prometheus, its own targets). Each package resolved there removes the checkouts it doesn't use, so a second
## `make test` checks a few out again and compiles them (45 s in all on a quiet machine); `make test SHARED_SCRATCH=`
## keeps a folder per package instead.
SHARED_SCRATCH ?= 1
SAMPLES_SCRATCH ?= $(if $(SHARED_SCRATCH),$(CURDIR)/.build,$(CURDIR)/Samples/.build)
FLEET_SCRATCH ?= $(if $(SHARED_SCRATCH),$(CURDIR)/.build,$(CURDIR)/$(FLEET)/.build)
FLEET_TIMED := connectionWaitAccountsForTheGap
fleet-test: fleet-deps fleet-rules
	@# The connection-wait test reads p99s out of 200 ms waves: in a process of its own, so that the other tests'
	@# fleets, Prometheus servers and demo runs starting at once on two cores don't move its waves.
	cd $(FLEET) && $(SWIFT) build --build-tests --scratch-path $(FLEET_SCRATCH) && \
		$(TEST_RUN) $(SWIFT) test --skip-build --scratch-path $(FLEET_SCRATCH) --skip $(FLEET_TIMED) && \
		$(TEST_RUN) $(SWIFT) test --skip-build --scratch-path $(FLEET_SCRATCH) --filter $(FLEET_TIMED)

## fleet-demo: starts the fleet and Prometheus on loopback, sends a few hundred requests, prints PromQL answers
## (request rate, p50/p99 latency by status class, connection wait, the rules' recorded series) and the trace tree
## of one request. `make fleet-demo KEEP=1` (or FLEET_DEMO_SECONDS=0) then keeps it up with a light load until
## Ctrl-C, FLEET_DEMO_SECONDS=N for N seconds; it then runs in the machine's own network namespace, so that the
## Prometheus URL it prints opens in a browser here (every process still listens on 127.0.0.1 only).
FLEET_DEMO_SECONDS ?= $(if $(KEEP),0,)
fleet-demo: fleet-deps
	cd $(FLEET) && $(SWIFT) build --scratch-path $(FLEET_SCRATCH) && \
		$(if $(FLEET_DEMO_SECONDS),FLEET_DEMO_SECONDS=$(FLEET_DEMO_SECONDS),$(LOOPBACK_ONLY)) $(FLEET_SCRATCH)/debug/fleet-demo

## test-tsan: the notification-center, engine and session tests under ThreadSanitizer.
test-tsan: deps
	@# The 256 MiB and 1 GiB RSS-budget tests are memory measurements, meaningless under TSan shadow memory.
	@# One test at a time: TSan slows everything ~10x, and parallel suites would starve the timeout tests.
	@# The 10,000-connection load test is skipped: it checks counts and timelines, which test and test-asan cover,
	@# and under TSan it needs ~10x the time and memory; the stress tests, where races would show, do run.
	@# Suspend-at-the-last-byte is skipped too: it needs suspend() to land within microseconds of a transfer's
	@# end, which TSan's slowdown never let happen (0 of 150 rounds), so under TSan it would test nothing.
	@# .ci/tsan.supp names the one false positive outside Herald (a continuation resumed by SwiftNIO).
	TSAN_OPTIONS=suppressions=$(CURDIR)/.ci/tsan.supp $(LOOPBACK_ONLY) $(SWIFT) test --sanitize=thread --scratch-path .build-tsan --skip LargeTransferTests --skip LargeStreamingTests --skip LoadTests \
		--skip SuspendAtLastByteTests --no-parallel

# Each of test-asan's runs: the tests already built with AddressSanitizer, in its scratch path.
ASAN_TEST = ASAN_OPTIONS=detect_leaks=0:suppressions=$(CURDIR)/.ci/asan.supp $(LOOPBACK_ONLY) $(SWIFT) test \
	--skip-build --sanitize=address --scratch-path .build-asan

## test-asan: the whole suite under AddressSanitizer, in its own scratch path (leaks: see leak-check).
test-asan: deps
	@# The 256 MiB and 1 GiB RSS-budget tests are memory measurements, meaningless with ASan's shadow memory and
	@# quarantine.
	$(SWIFT) build --build-tests --sanitize=address --scratch-path .build-asan
	@# Leaks are checked by leak-check on a whole demo run: in the test process, XCTest's runner, Foundation's
	@# URLSession (used as a reference client by HeraldTesting's tests) and Swift values whose pointers are
	@# packed into enum payloads (static test data) give LeakSanitizer reports that are not Herald's.
	@# As in `test`, the load and stress tests, the contract-breach races and the disk cache across processes
	@# run in processes of their own: beside them, ASan's slowdown made other suites' timeouts fire (18 tests
	@# at once, their transfers idle for 10 s while a race burned both cores and a child was killed 100 times).
	@# The closed-pipe test counts every SIGPIPE the process receives: in a process of its own, as in `test`.
	$(ASAN_TEST) --skip LargeTransferTests --skip LargeStreamingTests --skip LoadTests --skip StressTests \
		--skip ClosedPipeSignalTests --skip '$(TIMED_TESTS)' --skip '$(RACE_SUITES)' --skip DiskResponseCacheProcessTests
	$(ASAN_TEST) --filter '$(RACE_SUITES)'
	$(ASAN_TEST) --filter DiskResponseCacheProcessTests
	@# The millisecond timings in a process of their own, as in `test`: beside the other suites under ASan they
	@# measured the scheduler (127 ms for a cancellation that takes 2 ms).
	$(ASAN_TEST) --filter '$(TIMED_TESTS)'
	$(ASAN_TEST) --filter ClosedPipeSignalTests
	$(ASAN_TEST) --filter 'LoadTests|StressTests'

## leak-check: the activity-counter demo built with AddressSanitizer; LeakSanitizer fails it on any leak.
leak-check: build-deps
	cd Samples && $(SWIFT) build --sanitize=address --scratch-path .build-asan --product activity-counter
	@# .ci/lsan.supp and .ci/asan.supp name what is suppressed and why (none of it Herald's code).
	ASAN_OPTIONS=detect_leaks=1:suppressions=$(CURDIR)/.ci/asan.supp LSAN_OPTIONS=suppressions=$(CURDIR)/.ci/lsan.supp \
		Samples/.build-asan/debug/activity-counter demo > /dev/null

## demo: the main job (the samples are a package of their own, in Samples/, built in the same folder as for
## `make test`).
demo: build-deps
	cd Samples && $(SWIFT) run --scratch-path $(SAMPLES_SCRATCH) activity-counter demo

## docs: DocC for every library target, warnings are errors (DOCS_SCRATCH=.build-docs to build elsewhere).
DOC_TARGETS := HeraldNotifications Herald HeraldObservers HeraldTesting
DOCS_SCRATCH ?= .build
docs: deps
	@mkdir -p $(DOCS_SCRATCH)/docs
	for target in $(DOC_TARGETS); do \
		$(SWIFT) package --scratch-path $(DOCS_SCRATCH) --allow-writing-to-directory $(DOCS_SCRATCH)/docs \
			generate-documentation --target $$target --warnings-as-errors \
			--output-path $(DOCS_SCRATCH)/docs/$$target || exit 1; \
	done

## docs-coverage: list every public symbol without a doc comment (from the symbol graphs `docs` extracted); fail if any.
docs-coverage: docs
	graphs=""; for target in $(DOC_TARGETS); do \
		graphs="$$graphs $$(ls $(DOCS_SCRATCH)/*/extracted-symbols/*/$$target/*.symbols.json)" || exit 1; \
	done; \
	$(SWIFT) .ci/doc-coverage.swift $$graphs

lint:
	$(SWIFT) format lint --strict --recursive Sources Tests Samples

## bench-notifications: notification center vs Foundation's NotificationCenter (ARGS="--json out.json").
bench-notifications: deps
	cd Benchmarks && $(SWIFT) run -c release NotificationBench $(ARGS)

## cache-tests: the public HTTP caching test suite (cache-tests, browser mode) against Herald's response cache,
## through herald-cache-proxy (one Herald session, cache on) on loopback, inside the loopback-only namespace.
## Prints Herald's summary beside Chrome's, Firefox's and Safari's published results and lists the tests that
## fail here but pass in all three browsers (and fails when there is one). CACHE_TESTS names an unmodified copy
## of the suite; node (>= 18) runs it. CACHE_DIRECTORY=DIR runs it against the on-disk cache in DIR instead.
## A run takes under a minute, so `make test` runs it too when the suite is present (a fresh clone has no copy:
## it is skipped there, and says so).
CACHE_TESTS ?= /work/shared/cache-tests
cache-tests: deps
	@command -v node >/dev/null || { echo "cache-tests needs node (>= 18)"; exit 1; }
	$(SWIFT) build --product HeraldCacheProxy
	$(LOOPBACK_ONLY) node CacheTests/run.mjs --suite "$(CACHE_TESTS)" \
		--proxy "$$($(SWIFT) build --show-bin-path)/HeraldCacheProxy" --out .build/cache-tests-results.json \
		$(if $(CACHE_DIRECTORY),--cache-directory "$(CACHE_DIRECTORY)") --expect-none-below-browsers

## bench-json: Herald's JSON parser vs JSONSerialization + conversion to JSONValue (and JSONDecoder), in release.
bench-json: deps
	cd Benchmarks && $(SWIFT) run -c release JSONBench $(ARGS)

## soak: mixed tasks against a loopback server for SOAK_SECONDS (default 300), RSS every SOAK_INTERVAL seconds.
SOAK_SECONDS ?= 300
SOAK_INTERVAL ?= 10
soak: deps
	@# The server runs in a child process (herald-test-server, built next to Soak) so only the client is measured.
	cd Benchmarks && $(SWIFT) build -c release --product herald-test-server && $(SWIFT) build -c release --product Soak
	Benchmarks/.build/release/Soak --seconds $(SOAK_SECONDS) --interval $(SOAK_INTERVAL)

## fuzz: libFuzzer on thirteen parsers (the response head, resume data, JSON, server-sent events, cookies, challenges,
## cache and range fields, netlink, the public suffix list), FUZZ_SECONDS (default 60) each; FUZZ_TARGETS picks some.
fuzz: deps
	Fuzz/run.sh

## bench-transfers: Herald vs URLSession vs AsyncHTTPClient vs a C libcurl+libuv client against a loopback nginx:
## plain HTTP, HTTPS/1.1, HTTP/2 and fresh TLS connections (ARGS="--protocols http1 --tls-fresh none" for plain HTTP only).
bench-transfers: deps
	Benchmarks/run-transfers.sh $(ARGS)

## bench-cache: 1,000 GETs of a cacheable 10 KiB response answered from disk, from memory and from the network, and
## 64 concurrent GETs of an uncacheable one with the cache on and off, against a loopback nginx (ARGS="--runs K").
bench-cache: deps
	Benchmarks/run-cache.sh $(ARGS)

## bench-streaming: a 256 MiB body streamed (bytes(for:)) and collected (data(for:)) and 1 KiB server-sent events
## through Herald, against AsyncHTTPClient's streamed body and mattt/EventSource's parser (ARGS="--mib N --runs K").
bench-streaming: deps
	cd Benchmarks && $(SWIFT) build -c release --product StreamBenchPeers && $(SWIFT) run -c release StreamBench $(ARGS)

## bench-instructions: instructions per 1 KiB GET for Herald and the C client under valgrind's callgrind
## (installed with apt when missing), and Herald's top 20 functions (ARGS="--requests N --concurrency C
## --protocol http1|https1|h2 --threads --c-herald-fields --post N"; Benchmarks/run-instructions.sh says what each does).
bench-instructions: deps
	@command -v valgrind >/dev/null || { if [ "$$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi; \
		$$SUDO apt-get -o DPkg::Lock::Timeout=600 update -qq && \
			$$SUDO env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq valgrind; }
	Benchmarks/run-instructions.sh $(ARGS)

clean:
	rm -rf .build .build-* Benchmarks/.build Samples/.build Samples/.build-* Samples/Fleet/.build
