# The two commands a new user needs: `make run` and `make test` (or, where
# make itself is not installed yet, `./make run` and `./make test`). Each
# installs what is missing (Debian packages, as root), configures and builds.
BUILD ?= build
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=

.PHONY: all setup configure build run test test-plain asan tsan tsan-keyed bench lint format clean fuzz

all: build

setup:
	@scripts/setup.sh

$(BUILD)/build.ninja: | setup
	cmake -S . -B $(BUILD) -G Ninja -DSLUICE_WERROR=ON $(CMAKE_FLAGS)

configure: setup $(BUILD)/build.ninja

build: configure
	cmake --build $(BUILD) -j $(JOBS)

# Starts the P096 explorer; see `$(BUILD)/sluice --help` for the other commands.
# Builds only the command it runs (the tests and benchmarks wait for `make
# build`, `make test-plain` or `make test`), so a newcomer's first command
# compiles what it starts and nothing more.
run: configure
	cmake --build $(BUILD) -j $(JOBS) --target sluice
	$(BUILD)/sluice

# Every test, on a build with AddressSanitizer + UndefinedBehaviorSanitizer
# (build/asan): a memory error or undefined behaviour fails the test that
# meets it. One build: CI compiling the project twice, plain and sanitized,
# took half its time to run the same tests again. `make run` uses the plain
# build; `ctest --test-dir build` runs the suite on that one. A failed
# test's output is printed again after the summary, where a log cut to its
# tail still shows it.
test: setup
	cmake --preset asan
	cmake --build --preset asan -j $(JOBS)
	ctest --preset asan -j $(JOBS) || { scripts/show-failed-tests.sh build/asan; exit 1; }

# The suite on the plain debug build (build/), the one `make run` starts.
test-plain: build
	ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS)

asan: test

tsan: setup
	cmake --preset tsan
	cmake --build --preset tsan -j $(JOBS)
	ctest --preset tsan -j $(JOBS) || { scripts/show-failed-tests.sh build/tsan; exit 1; }

# The threaded tests (the keyed store) under ThreadSanitizer, as CI runs them:
# sluice_keyed_threaded_tests, the keyed tests without the files of suites
# that start no thread (tests/keyed/CMakeLists.txt; TSan finds nothing in
# one thread, and they were three quarters of the run, 128 of 173 s, and
# five files to compile). `make test` runs them all under ASan+UBSan.
tsan-keyed: setup
	cmake --preset tsan
	cmake --build --preset tsan -j $(JOBS) --target sluice_keyed_threaded_tests
	TSAN_OPTIONS="suppressions=$(CURDIR)/tests/keyed/tsan.supp" build/tsan/tests/keyed/sluice_keyed_threaded_tests

# Google Benchmark programs (not part of `make test`); see bench/run.sh.
bench:
	@scripts/setup.sh --bench
	bench/run.sh

# clang-format check over our sources (CI runs it). No file to check (no git,
# or not a checkout) is a failure, not "clean".
lint: setup
	@files=$$(git ls-files -- '*.cpp' '*.hpp' ':!:tests/fuzz/corpus') || exit 1; \
	if [ -z "$$files" ]; then echo "lint: git lists no C++ file to check" >&2; exit 1; fi; \
	clang-format --dry-run --Werror $$files && echo "clang-format: clean ($$(echo "$$files" | wc -l) files)"

format:
	clang-format -i $$(git ls-files '*.cpp' '*.hpp')

clean:
	rm -rf $(BUILD) build/

# Fuzzing with clang's libFuzzer (FUZZ_SECONDS each); new finds land in
# tests/fuzz/corpus/, which every ctest run replays.
FUZZ_SECONDS ?= 60
fuzz:
	@scripts/setup.sh --fuzz
	cmake -S . -B build-fuzz -G Ninja -DCMAKE_CXX_COMPILER=clang++ -DSLUICE_LIBFUZZER=ON -DSLUICE_BUILD_BENCH=OFF \
	  -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS="-O1 -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all"
	cmake --build build-fuzz -j $(JOBS) --target fuzz_rate fuzz_trace fuzz_explore fuzz_decide fuzz_serve_config fuzz_serve_request \
	  fuzz_redis_module
	for t in rate trace explore decide serve_config serve_request redis_module; do \
	  dict=$$( [ -f tests/fuzz/$$t.dict ] && echo -dict=tests/fuzz/$$t.dict ); \
	  build-fuzz/tests/fuzz/fuzz_$$t -max_total_time=$(FUZZ_SECONDS) -max_len=4096 $$dict tests/fuzz/corpus/$$t || exit 1; \
	done
