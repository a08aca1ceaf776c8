# guestmode — build, test, run and install.
#   make run       build, then walk every profile with `guestmode tour`
#   make test      check the layout and the format, build and run every test, run the serve benchmark for a
#                  second per workload, lint the man pages, build and run Examples/, build the DocC catalogue,
#                  build and test Clients/GuestModeClient against a real server (make client-test)
#   make stress    8 processes x STRESS_OPERATIONS (default 400) racing on one PostgreSQL database
#   make crash     kill -9 at many random points (CRASH_ROUNDS=50, CRASH_SEED=14), then check and resume
#   make fuzz      libFuzzer over archive import for FUZZ_SECONDS (default 60)
#   make bench     measure guestmode against sqlite3, zstd and psql, and serve with wrk against Hummingbird's
#                  floor and pgbench (BENCH_SCALE=0.1, BENCH_SERVE_SECONDS=5 for a quick run; bench/results.md)
#   make scale     SCALE_GUESTS (default 10,000,000) guests on SQLite and PostgreSQL beside the plain tools (bench/scale.md)
#   make docs      the DocC catalogue of GuestModeKit into .build/docs
#   make format    format the sources with swift-format (.swift-format); make lint checks them
#   make install   PREFIX=/usr/local DESTDIR= (guestmode and guestmode-serve, templates, man pages, completions)
#   make release-hooks  build release as make install does and search both binaries for fault hooks

PREFIX ?= /usr/local
DESTDIR ?=
SWIFT ?= swift
BINDIR = $(DESTDIR)$(PREFIX)/bin
SHAREDIR = $(DESTDIR)$(PREFIX)/share
DEBUG_BIN = .build/debug/guestmode
RELEASE_BIN = .build/release/guestmode
APT_PACKAGES = curl libarchive-dev libzstd-dev libcurl4-openssl-dev nginx wrk zlib1g-dev libarchive-tools libsqlite3-dev sqlite3 zstd mandoc groff-base time bc libpq-dev postgresql \
	python3-jsonschema valgrind
# PyPI's packages as PACKAGE:MODULE (the module python3 imports once the package is installed).
PIP_PACKAGES = schemathesis:schemathesis openapi-python-client==0.29.1:openapi_python_client PyJWT:jwt cryptography:cryptography

.PHONY: all deps build run test example client-test client docs release-hooks stress crash sweep fuzz fuzz-build lint-man check-layout man-codes format lint bench scale scale-check install uninstall clean

all: build

# Installs the C libraries and tools the build and tests need, only when missing.
deps:
	@missing=""; \
	for package in $(APT_PACKAGES); do \
		dpkg -s $$package >/dev/null 2>&1 || missing="$$missing $$package"; \
	done; \
	if [ -n "$$missing" ]; then \
		echo "installing:$$missing"; \
		if [ "$$(id -u)" = 0 ]; then SUDO=""; else SUDO=sudo; fi; \
		$$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq $$missing; \
	fi
	@# PyPI's packages, for python3 on PATH: schemathesis checks `guestmode serve` against its OpenAPI document,
	@# openapi-python-client makes a client of it (scripts/check-openapi-clients.py); PyJWT (with cryptography
	@# for ES256) verifies its access tokens as another service would (scripts/verify-token.py).
	@for entry in $(PIP_PACKAGES); do \
		package=$${entry%%:*}; module=$${entry##*:}; \
		python3 -c "import $$module" 2>/dev/null || { echo "installing from PyPI: $$package"; python3 -m pip install -q "$$package"; }; \
	done

# Builds only: installing is `make deps`' work, which the README's two commands (run, test) do first.
build:
	$(SWIFT) build

run: deps build
	$(DEBUG_BIN) tour

# The debug build the tests run has the fault hooks (Sources/GuestModeCommandLine/FaultHooks.swift);
# the last step checks, in seconds, that the release build `make install` makes cannot have them.
test: deps
	bash scripts/check-layout.sh
	$(MAKE) lint
	$(SWIFT) build --build-tests
	bash scripts/with-postgres.sh bash scripts/with-nginx.sh $(SWIFT) test --skip-build
	BENCH_SERVE_SECONDS=1 BENCH_SERVE_USERS=8 bash scripts/with-postgres.sh bash bench/serve.sh $(DEBUG_BIN) .build/debug/ServeFloor
	$(MAKE) lint-man
	$(MAKE) scale-check
	SWIFT=$(SWIFT) bash scripts/check-release-hooks.sh $(RELEASE_FLAGS)
	$(MAKE) example
	$(MAKE) client-test
	$(MAKE) docs

# Flips every byte of a small archive of each format (make test flips every 11th).
sweep: deps
	$(SWIFT) build --build-tests
	GUESTMODE_SWEEP_STRIDE=1 $(SWIFT) test --skip-build --filter everyByteFlipped

check-layout:
	bash scripts/check-layout.sh

# Examples/EmbeddingApp depends on this package by path and embeds the engine as an app would; it
# exits non-zero when an answer is not the expected one. A package of its own, it compiles against the
# products' public surface only. It builds in this package's .build: its dependencies (GRDB,
# swift-crypto, Yams, the engine) are the same compile commands with the same flags, so it reuses
# them and neither build redoes the other's work. In a .build of its own they were compiled again:
# 168 s of `make test` on two cores, against 9 s shared.
example:
	$(SWIFT) build --package-path Examples/EmbeddingApp --scratch-path $(CURDIR)/.build
	.build/debug/EmbeddingApp

# Clients/GuestModeClient, the Swift package an app embeds, is a package of its own (its own .build), so
# that this package's build never compiles the OpenAPI generator its build plugin runs. Its copy of the
# OpenAPI document and its error codes are checked against schemas/openapi.json and the catalogue first;
# its tests start the debug guestmode (GUESTMODE_BIN) with `serve` on loopback, on SQLite and PostgreSQL;
# then its Examples/AppJourney plays each profile's first minutes against a server of its own, and the
# README's "Apps in Swift" block runs as written.
CLIENT = Clients/GuestModeClient
CLIENT_SERVER ?= $(CURDIR)/$(DEBUG_BIN)

client:
	$(SWIFT) build --package-path $(CLIENT) --build-tests

client-test: build
	python3 $(CLIENT)/scripts/openapi-for-generator.py --check
	python3 $(CLIENT)/scripts/error-codes.py --check
	$(SWIFT) build --package-path $(CLIENT) --build-tests
	bash $(CLIENT)/scripts/check-generator.sh
	GUESTMODE_BIN=$(CLIENT_SERVER) bash scripts/with-postgres.sh $(SWIFT) test --package-path $(CLIENT) --skip-build
	bash $(CLIENT)/scripts/run-examples.sh $(CLIENT_SERVER) $(CLIENT)/.build/debug/AppJourney
	bash $(CLIENT)/scripts/run-readme.sh

# The DocC catalogue of GuestModeKit (Sources/GuestModeKit/GuestModeKit.docc) with the engine's public
# symbols, into .build/docs, with the toolchain's docc (no plugin); a warning (a broken or ambiguous
# symbol link in the catalogue or a doc comment) fails. `make test` runs it last: after its build it
# costs about 30 s on two cores. scripts/check-sources.py keeps every public declaration documented.
DOCC ?= docc

docs:
	$(SWIFT) package dump-symbol-graph --minimum-access-level public
	rm -rf .build/docs .build/docs-symbols && mkdir -p .build/docs-symbols
	cp "$$($(SWIFT) build --show-bin-path)/../symbolgraph/GuestModeKit.symbols.json" .build/docs-symbols/
	$(DOCC) convert Sources/GuestModeKit/GuestModeKit.docc --additional-symbol-graph-dir .build/docs-symbols \
		--fallback-display-name GuestModeKit --fallback-bundle-identifier guestmode.GuestModeKit \
		--output-path .build/docs --warnings-as-errors

# libFuzzer over the archive reader, header trust and row validation
# (Sources/ArchiveFuzzer), seeded from the committed corpus; new inputs go to
# .build/fuzz-corpus, crashes to .build/fuzz-crashes. FUZZ_SECONDS=60 by default.
FUZZ_SECONDS ?= 60
FUZZ_BIN = .build/fuzz/debug/ArchiveFuzzer

fuzz-build: deps
	$(SWIFT) build --build-path .build/fuzz --product ArchiveFuzzer -Xswiftc -sanitize=fuzzer -Xswiftc -DFUZZING

fuzz: fuzz-build
	mkdir -p .build/fuzz-corpus .build/fuzz-crashes
	$(FUZZ_BIN) -max_total_time=$(FUZZ_SECONDS) -max_len=65536 -timeout=10 -rss_limit_mb=1024 \
		-artifact_prefix=.build/fuzz-crashes/ .build/fuzz-corpus Tests/Fuzz/corpus

# Rewrites the list of JSON error codes in guestmode(1) from the catalogue.
man-codes:
	python3 scripts/error-codes.py --write

FORMATTED = Sources Tests Package.swift Examples/EmbeddingApp/Sources Examples/EmbeddingApp/Package.swift \
	Clients/GuestModeClient/Sources Clients/GuestModeClient/Tests Clients/GuestModeClient/Examples \
	Clients/GuestModeClient/Package.swift

format:
	$(SWIFT) format --in-place --recursive --parallel $(FORMATTED)

lint:
	$(SWIFT) format lint --strict --recursive --parallel $(FORMATTED)

CRASH_ROUNDS ?= 50
CRASH_SEED ?= 14

# The crash suite of `make test` with many more rounds: each round kills a
# track --from, migrate, merge or profile apply at a seeded random point.
STRESS_OPERATIONS ?= 400

stress: deps
	$(SWIFT) build --build-tests
	GUESTMODE_STRESS_OPERATIONS=$(STRESS_OPERATIONS) bash scripts/with-postgres.sh \
		$(SWIFT) test --skip-build --filter PostgresStressTests

crash: deps
	$(SWIFT) build --build-tests
	GUESTMODE_CRASH_ROUNDS=$(CRASH_ROUNDS) GUESTMODE_CRASH_SEED=$(CRASH_SEED) \
		$(SWIFT) test --skip-build --filter 'CrashTests|RaceAndLeftoverTests'

# Both formatters must accept every page without a warning.
lint-man:
	mandoc -Tlint -Wwarning man/*.1 man/*.5
	@for page in man/*.1 man/*.5; do \
		warnings=$$(groff -ww -z -man $$page 2>&1); \
		if [ -n "$$warnings" ]; then echo "$$warnings"; failed=1; fi; \
	done; [ -z "$$failed" ]

# The Swift runtime and Foundation linked statically: dynamic linking was 38 % of a short command's
# instructions (bench/results.md, "Start-up"). Linked by lld with packed relative relocations (DT_RELR,
# glibc 2.36): the loader applies 100,000 relocations from a bitmap instead of a 2.5 MB table, so each
# start touches fewer pages ("Start-up: packed relocations"). Two programs: guestmode, and guestmode-serve
# (the HTTP server, which `guestmode serve` runs), each built on its own (SwiftPM builds one --product at a time).
# Every module's concrete generic types are made by their metadata accessors, not from a mangled name: the
# run-time's demangler checks each generic requirement of such a name by a conformance look-up, a scan of
# the binary's 9,400 conformance records the first time, dozens in every command's start ("Start-up: generic
# types made without their mangled names", 36.1 M → 27.8 M instructions for `counters U`). A flag of the
# compiler's front end, for the command line: in Package.swift (unsafeFlags) the package could not be a dependency.
# The C++ run-time the Swift run-time needs is linked statically too: loading libstdc++.so and binding its
# symbols was 2.0 M of `counters U`'s 26.4 M instructions (bench/results.md, "Start-up: output by write(2), stores
# closed at exit, the C++ run-time linked in"). The linker takes libstdc++.a from STATIC_CXX_DIR, which holds
# only a link to it, ahead of the directory with the shared one. Linker flags only: changing them relinks, it
# recompiles nothing.
STATIC_CXX_DIR = .build/static-libstdc++
RELEASE_FLAGS = -c release --static-swift-stdlib -Xswiftc -use-ld=lld -Xlinker -z -Xlinker pack-relative-relocs \
	-Xswiftc -Xfrontend -Xswiftc -disable-concrete-type-metadata-mangled-name-accessors \
	-Xlinker -L$(CURDIR)/$(STATIC_CXX_DIR)
# guestmode exports no symbols: the static Swift library's flags export all 22,000 of its own, which only
# a crash's stack trace reads (by name, in a stripped binary), and which made every symbol look-up and
# the run-time's dladdr at start cost 0.7 M. guestmode-serve keeps them: it starts once, and its crash
# reports are read in production.
RELEASE_CLI_FLAGS = $(RELEASE_FLAGS) -Xlinker --no-export-dynamic
RELEASE_SERVE_BIN = .build/release/guestmode-serve
RELEASE_BUILD = $(SWIFT) build $(RELEASE_CLI_FLAGS) --product guestmode && $(SWIFT) build $(RELEASE_FLAGS) --product guestmode-serve

$(STATIC_CXX_DIR)/libstdc++.a:
	@archive=$$(clang -print-file-name=libstdc++.a); \
	if [ ! -f "$$archive" ]; then \
		echo "no libstdc++.a for a release build: install the libstdc++ development package the Swift toolchain names (libstdc++-12-dev on Debian 12)" >&2; \
		exit 1; \
	fi; \
	mkdir -p $(STATIC_CXX_DIR) && ln -sf "$$archive" $@

# The slow, direct form of the last step of `make test`: a release build, searched for the hook names.
release-hooks: deps $(STATIC_CXX_DIR)/libstdc++.a
	SWIFT=$(SWIFT) bash scripts/check-release-hooks.sh --binary $(RELEASE_FLAGS)

bench: deps $(STATIC_CXX_DIR)/libstdc++.a
	$(RELEASE_BUILD)
	$(SWIFT) build $(RELEASE_FLAGS) --product ServeFloor
	bash bench/run.sh $(RELEASE_BIN)

# The scale run of bench/scale.md: every step on both backends beside the plain tools, each step's peak memory
# at most 64 MB (the script exits 1 otherwise). SCALE_GUESTS=10000000 by default: hours, and about 40 GB of disk.
SCALE_GUESTS ?= 10000000

scale: deps $(STATIC_CXX_DIR)/libstdc++.a
	$(SWIFT) build $(RELEASE_CLI_FLAGS) --product guestmode
	SCALE_GUESTS=$(SCALE_GUESTS) bash scripts/with-postgres.sh bash bench/scale.sh $(RELEASE_BIN)

# The same script at 1/1000 of the size with the debug build, so that it cannot rot (a step of `make test`).
scale-check:
	SCALE_GUESTS=10000 bash scripts/with-postgres.sh bash bench/scale.sh $(DEBUG_BIN)

install: deps $(STATIC_CXX_DIR)/libstdc++.a
	$(RELEASE_BUILD)
	install -d $(BINDIR) $(SHAREDIR)/guestmode/templates $(SHAREDIR)/man/man1 $(SHAREDIR)/man/man5
	install -m 755 -s $(RELEASE_BIN) $(BINDIR)/guestmode
	install -m 755 -s $(RELEASE_SERVE_BIN) $(BINDIR)/guestmode-serve
	install -m 644 Templates/*.yaml $(SHAREDIR)/guestmode/templates/
	install -m 644 man/*.1 $(SHAREDIR)/man/man1/
	install -m 644 man/*.5 $(SHAREDIR)/man/man5/
	install -d $(SHAREDIR)/bash-completion/completions $(SHAREDIR)/zsh/site-functions $(SHAREDIR)/fish/vendor_completions.d
	$(RELEASE_BIN) --generate-completion-script bash > $(SHAREDIR)/bash-completion/completions/guestmode
	$(RELEASE_BIN) --generate-completion-script zsh > $(SHAREDIR)/zsh/site-functions/_guestmode
	$(RELEASE_BIN) --generate-completion-script fish > $(SHAREDIR)/fish/vendor_completions.d/guestmode.fish

uninstall:
	rm -f $(BINDIR)/guestmode $(BINDIR)/guestmode-serve
	rm -rf $(SHAREDIR)/guestmode
	rm -f $(SHAREDIR)/man/man1/guestmode.1 $(SHAREDIR)/man/man1/guestmode-*.1 $(SHAREDIR)/man/man5/guestmode-profile.5
	rm -f $(SHAREDIR)/bash-completion/completions/guestmode $(SHAREDIR)/zsh/site-functions/_guestmode \
		$(SHAREDIR)/fish/vendor_completions.d/guestmode.fish

clean:
	rm -rf .build Examples/EmbeddingApp/.build Clients/GuestModeClient/.build
