// Opening a store from its URL: the one place that knows every store
// scheme, and a registry of the openers this program was built with.
//
// Every front end (the command's `--store`, the service's `store.url`, a
// program of your own) opens its store the same way:
//
//   sluice::store_registry stores;         // opens "memory" (built in)
//   sluice::register_redis_stores(stores); // sluice/redis.hpp: redis://, rediss://, ...
//   auto st = stores.open({.url = "redis://127.0.0.1:6379"});
//
// Registration is an explicit call, made once by whoever links the store's
// target, never a static initialiser: a static library's object file that
// nothing references is not linked at all, so a self-registering global in
// it would silently never run (and the order of such globals across files
// is unspecified). A registry is a plain value: two registries in one
// program (a test's, the command's) never see each other's openers.
//
// `known_store_schemes` lists every scheme sluice knows, built into this
// program or not, so that a URL of a store left out of the build is told
// apart from a URL that names no store at all, and a configuration can be
// checked (is it a remote store?) before any store is opened.
//
// Thread safety: `open`, `has` and `describe` may be called from any number
// of threads at once; `add` must not race with any other member.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "sluice/core/result.hpp"
#include "sluice/core/store.hpp"
#include "sluice/core/time.hpp"
#include "sluice/keyed/memory.hpp"

namespace sluice {

/// A store scheme sluice knows: how its URLs begin, and which library
/// target opens them.
struct store_scheme {
  /// The scheme: "memory" (a whole URL of its own), "redis", "rediss",
  /// "unix", "redis+cluster", "redis+sentinel", "rediss+sentinel".
  std::string_view name;
  /// How a URL of the scheme is written, for messages and help texts.
  std::string_view form;
  /// The library target whose registration opens it ("sluice::keyed" for
  /// the memory store, built into every registry; "sluice::redis", whose
  /// `register_redis_stores` adds it).
  std::string_view target;
  /// False for the in-process store, true for a store other processes share.
  bool remote = true;
};

/// Every scheme sluice knows, built into this program or not, in the order
/// messages list them.
inline constexpr store_scheme known_store_schemes[] = {
    {"memory", "memory", "sluice::keyed", false},
    {"redis", "redis://[user:password@]host[:port][/db]", "sluice::redis", true},
    {"rediss", "rediss://[user:password@]host[:port][/db][?ca_file=...] (TLS)", "sluice::redis", true},
    {"unix", "unix://[user:password@]/path[?db=N]", "sluice::redis", true},
    {"redis+cluster", "redis+cluster://host:port[,host:port...]", "sluice::redis", true},
    {"redis+sentinel", "redis+sentinel://host:port[,host:port...]/MASTER[/db]", "sluice::redis", true},
    {"rediss+sentinel", "rediss+sentinel://host:port[,host:port...]/MASTER[/db] (TLS)", "sluice::redis", true},
};

/// The scheme `url` is written in, or nullptr when sluice knows none: the
/// part before "://" (case-sensitive; "redis" for "redis://h:1"), or, for a
/// URL without "://", the whole URL ("memory"). Reads no more than the
/// scheme: the store that opens the URL checks the rest.
[[nodiscard]] constexpr const store_scheme* scheme_of(std::string_view url) noexcept {
  const std::size_t end = url.find("://");
  const std::string_view name = end == std::string_view::npos ? url : url.substr(0, end);
  for (const store_scheme& s : known_store_schemes)
    if (s.name == name && (end != std::string_view::npos) == s.remote) return &s;
  return nullptr;
}

/// What a store is opened with, whichever its kind: the one set of options
/// every store shares (a remote store's timeouts, failure mode, breaker,
/// deny cache, clock; the memory store's sizes), each store reading the
/// fields that concern it and ignoring the rest. What only one store has
/// rides in its URL's query (Redis: TLS files, `wait_replicas`,
/// `eviction_poll`; docs/redis.md, "URLs, passwords"). `sluice serve`'s `[store]` maps to it
/// once (src/serve/stores.cpp), `--store` too (tools/sluice/store_flag.cpp).
struct store_options {
  /// The store's URL: "memory", or a remote store's (known_store_schemes).
  std::string url = "memory";

  /// The memory store: its sizes, bound and clock (store/memory.hpp).
  memory_store_options memory{};

  /// A remote store: the password when the URL gives none (a URL that gives
  /// one too is an error: "password"). Never printed.
  std::string password;
  /// A remote store: the prefix of every key it writes (states and request
  /// ids). In a Redis Cluster it must hold no '{' or '}' (the error "prefix").
  std::string key_prefix = "sluice:";
  /// A remote store: the time to connect, and the bound on each call (a call
  /// past it is a store failure, decided by `on_failure`; it may still have
  /// been applied: use request ids to retry without paying twice).
  std::chrono::milliseconds connect_timeout{200};
  std::chrono::milliseconds command_timeout{100};
  /// A remote store: the length of a tick in ns, for the keys' expiry (1:
  /// the default realtime clock in ns; 0: ticks of unknown length, such as a
  /// replayed trace's, and every key expires `unknown_tick_ttl` after it is
  /// written).
  std::int64_t tick_ns = 1;
  std::chrono::milliseconds unknown_tick_ttl{std::chrono::hours(24 * 7)};
  /// A remote store: added to every key's time to fresh (its expiry), so
  /// that clocks that step back by up to that much meet their states
  /// (semantics.md, "Remote stores"; not negative).
  std::chrono::milliseconds grace{60'000};
  /// A remote store: how long a request id's record is kept (its TTL, by
  /// the store's own clock).
  std::chrono::milliseconds idempotency_window{60'000};
  /// A remote store: a request whose `now` is behind a key's latest admit
  /// by more than this many ticks is counted in `store_stats::clock_skew`
  /// (not negative).
  tick skew_tolerance = 1'000'000'000;
  /// A remote store: what decides when it cannot answer.
  failure_mode on_failure = failure_mode::fail_closed;
  /// A remote store: the `retry_after` of a fail-closed denial, in ticks.
  tick fail_closed_retry_after = 1'000'000'000;
  /// A remote store: its circuit breaker opens after this many failures in a
  /// row (0: no breaker): the store is not called for `breaker_cool_down`
  /// (the failure mode answers at once), then one probe call at a time until
  /// one succeeds. In a Redis Cluster each node has a breaker of its own.
  std::uint32_t breaker_failures = 5;
  std::chrono::milliseconds breaker_cool_down{1000};
  /// A remote store: answer known denials locally (the exact deny cache,
  /// remote/deny_cache.hpp; semantics.md, "Remote stores"), holding about
  /// `deny_cache_capacity` denied (policy, key) pairs.
  bool deny_cache = false;
  std::size_t deny_cache_capacity = 1 << 16;
  /// A remote store: whose clock decides (store.hpp, store_clock; `store`
  /// needs ticks that divide a microsecond: `tick_ns` 1, 2, 4, 5, ..., 1000),
  /// and the bound on the measured offset to the store's clock past which
  /// `on_health_change` gets a line (0: none).
  store_clock clock = store_clock::local;
  std::chrono::milliseconds max_clock_offset{1000};
  /// A remote store whose server may evict keys (Redis's `maxmemory-policy`
  /// other than noeviction, or one that cannot be read): warn at open, through
  /// `on_health_change` (or on stderr without it), instead of refusing to
  /// open (the error "eviction"; docs/redis.md, "Eviction").
  bool warn_on_eviction_policy = false;
  /// A remote store: called once per change of its health (a breaker opens
  /// or closes), with one line that says so and never a password; on the
  /// deciding thread, so it must be quick and thread-safe. Needs the breaker
  /// (`breaker_failures` > 0).
  std::function<void(std::string_view line)> on_health_change;
};

/// Opens the stores of one scheme from `options` (whose `url` is of that
/// scheme). Its errors name the URL's part at fault ("host", "port", ...)
/// or the option.
using store_opener = result<std::unique_ptr<store>> (*)(const store_options& options);

/// The openers of this program, one per scheme; see the overview.
class store_registry {
 public:
  /// A registry that opens "memory" (the memory store is built in).
  store_registry();

  /// Registers `opener` for `scheme` (a name of known_store_schemes, not
  /// "memory"), replacing an earlier opener of it. False, and nothing
  /// registered, for a scheme sluice does not know.
  bool add(std::string_view scheme, store_opener opener);

  /// Whether this registry opens `scheme` (a name, such as "redis").
  [[nodiscard]] bool has(std::string_view scheme) const noexcept;

  /// Opens the store `options.url` names. A URL whose scheme sluice knows
  /// but this program was built without, or whose scheme is no store's, is
  /// an error ("url") that shows the URL (its password hidden, redact.hpp)
  /// and lists the forms this registry opens; every other error is the
  /// store's own. Connects lazily where the store does (a server that is
  /// down now is a store failure later, not an error here). Throws
  /// std::bad_alloc only.
  [[nodiscard]] result<std::unique_ptr<store>> open(const store_options& options) const;

  /// The forms of the URLs this registry opens, in known_store_schemes'
  /// order, joined by ", " ("memory, redis://[user:password@]host[:port][/db], ...").
  [[nodiscard]] std::string describe() const;

 private:
  struct entry {
    const store_scheme* scheme;
    store_opener open;
  };
  std::vector<entry> openers_;
};

}  // namespace sluice
