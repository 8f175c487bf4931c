# The two commands a new user needs: `make run` and `make test`. Each
# installs what is missing (Debian packages, as root), configures and builds.
BUILD ?= build
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=

.PHONY: all setup configure build run test asan tsan bench lint format clean

all: build

setup:
	@scripts/setup.sh

$(BUILD)/build.ninja: | setup
	cmake -S . -B $(BUILD) -G Ninja -DSLUICE_WERROR=ON $(CMAKE_FLAGS)

configure: setup $(BUILD)/build.ninja

build: configure
	cmake --build $(BUILD) -j $(JOBS)

# Starts the P096 explorer; see `$(BUILD)/sluice --help` for the other commands.
run: build
	$(BUILD)/sluice

test: build
	ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS)

# The whole suite under AddressSanitizer + UndefinedBehaviorSanitizer.
asan: setup
	cmake --preset asan
	cmake --build --preset asan -j $(JOBS)
	ctest --preset asan -j $(JOBS)

tsan: setup
	cmake --preset tsan
	cmake --build --preset tsan -j $(JOBS)
	ctest --preset tsan -j $(JOBS)

# Google Benchmark programs (not part of `make test`); see bench/run.sh.
bench:
	@scripts/setup.sh --bench
	bench/run.sh

# clang-format check over our sources (CI runs it).
lint:
	@files=$$(git ls-files '*.cpp' '*.hpp' | grep -v '^tests/fuzz/corpus'); \
	clang-format --dry-run --Werror $$files && echo "clang-format: clean"

format:
	clang-format -i $$(git ls-files '*.cpp' '*.hpp')

clean:
	rm -rf $(BUILD) build/
