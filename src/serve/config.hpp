// The configuration of `sluice serve`: listeners, the store, named policies
// and the rules that map an HTTP request to checks. Read from a TOML file
// (docs/serve.md has every key; serve/sluice.toml is the sample) or built
// from the command line's --policy/--key for the simple case.
//
// Every error names the place: "FILE:LINE:COLUMN: message", the column
// 1-based in bytes, pointing into the value at fault (for a policy
// expression, at the offending token inside the string).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "sluice/core/any.hpp"
#include "sluice/core/result.hpp"
#include "sluice/core/store.hpp"
#include "sluice/core/time.hpp"

namespace sluice::serve {

/// A TCP address to listen on: an IPv4 or IPv6 literal and a port.
struct listen_address {
  std::string host = "127.0.0.1";
  std::uint16_t port = 8080;
  friend bool operator==(const listen_address&, const listen_address&) = default;
};

/// "127.0.0.1:8080", "[::1]:8080"; the host must be an IP literal (no name
/// lookups), the port 0..65535 (0: any free port). The error names "listen".
result<listen_address> parse_listen(std::string_view text);

/// The environment variable that may hold the remote store's password.
inline constexpr const char* password_env = "SLUICE_REDIS_PASSWORD";

/// The name of a failure mode: "fail-open", "fail-closed", "local".
std::string_view name_of(failure_mode m) noexcept;

/// Where the states live.
struct store_config {
  /// "memory" (in process, the default) or a Redis URL:
  /// redis://[user:password@]host:port[/db] or unix:///path[?db=N], or a
  /// Redis Cluster: redis+cluster://[user:password@]host:port[,host:port...].
  std::string url = "memory";
  /// Where `url` stands in the file ("FILE:LINE:COLUMN"; empty: not from a
  /// file), for the store's errors.
  std::string url_place;
  /// Remote store: the password when the URL gives none, from
  /// `password_file` or $SLUICE_REDIS_PASSWORD (exactly one source gives
  /// it). Never printed.
  std::string password;
  /// Memory store: a snapshot path. When set, the states are loaded from it
  /// at start (when it exists) and saved to it at shutdown.
  std::string snapshot;
  /// Memory store: also save every this many nanoseconds (0: only at shutdown).
  tick snapshot_interval = 0;
  /// Memory store: the most states it holds over all policies (0: no
  /// bound). Unset in the file, default_max_keys(server.max_key_bytes).
  /// Past it a new key that would be admitted is answered by `on_failure`.
  std::size_t max_keys = 0;
  /// Whether `max_keys` was given (else the default was filled in).
  bool max_keys_given = false;
  /// How long a request id is remembered (idempotent retries; docs/serve.md,
  /// "Request ids"), in nanoseconds, by the service's clock: 1ms to 7d.
  /// Redis: its records' TTL (whole milliseconds, rounded up).
  tick idempotency_window = 60'000'000'000;
  /// Memory store: the most bytes the remembered request ids hold; past it
  /// a new id is answered by `on_failure`, nothing charged.
  std::size_t max_id_bytes = std::size_t{256} << 20;
  /// Memory store: purge fresh states every this many nanoseconds (0:
  /// never), at the service's clock. Off with server.client_time (no
  /// instant is promised then: semantics.md, "Keys").
  tick purge_interval = 10'000'000'000;
  /// Memory store: whether requests come in time order (the service's own
  /// clock): false when server.client_time lets clients give "now". Set
  /// from the server section, not a key of its own.
  bool in_time_order = true;
  /// Remote store: time to connect, and to wait for one command's reply.
  tick connect_timeout = 200'000'000;
  tick command_timeout = 100'000'000;
  /// Remote store: what decides when the store fails. Memory store: how a
  /// new key past max_keys is answered.
  failure_mode on_failure = failure_mode::fail_closed;
  /// Fail-closed: the retry_after of its denials (ns).
  tick fail_closed_retry_after = 1'000'000'000;
  /// Remote store: answer known denials locally (the exact deny cache).
  bool deny_cache = true;
  /// Remote store: whose clock decides (semantics.md, "Clocks of a
  /// fleet"): the store's unless server.client_time is on (then "local";
  /// "store" given with it is an error naming both keys).
  store_clock clock = store_clock::store;
  /// Remote store: the offset to the store's clock past which a line is
  /// logged (ns; 0: never).
  tick max_clock_offset = 1'000'000'000;
  /// Remote store: the prefix of every key it writes.
  std::string key_prefix = "sluice:";
  /// Remote store: a server that may evict keys (`maxmemory-policy`
  /// volatile-*, allkeys-*) is refused at start ("refuse", false) or only
  /// warned of ("warn", true): store.eviction.
  bool warn_on_eviction_policy = false;
  /// True for the in-process store.
  [[nodiscard]] bool is_memory() const noexcept { return url == "memory"; }
};

/// Where one part of a key comes from.
enum class key_source : std::uint8_t {
  client,   ///< the client's address (or a trusted proxy's forwarded header)
  header,   ///< a request header's value
  path,     ///< the N-th segment of the normalised path (1-based)
  query,    ///< a query parameter's value (percent-decoded, target.hpp query_value)
  literal,  ///< a fixed text
  method,   ///< the request method
  host,     ///< the Host header (lower-cased)
};

/// One part of a key: "client", "header:X-Api-Key", "path:2", "query:user",
/// "literal:global", "method", "host".
struct key_part {
  key_source from = key_source::client;
  std::string arg;          ///< header or parameter name, literal text
  std::size_t segment = 0;  ///< key_source::path: 1-based
  friend bool operator==(const key_part&, const key_part&) = default;
};

/// Parses one key part; the error (field "key") says what is accepted.
result<key_part> parse_key_part(std::string_view text);

/// Parses a key: parts joined by '+' ("client+header:X-User"), each as
/// parse_key_part. The parts' values are joined with ':' into the key
/// (':' and '%' inside a value are written %3A and %25, so different
/// requests never share a key by accident).
result<std::vector<key_part>> parse_key(std::string_view text);

/// The cost of a rule's checks: fixed, or read from a header (a whole number
/// ≥ 1; a request without the header costs `fixed`).
struct cost_spec {
  std::int64_t fixed = 1;
  std::string header;  ///< empty: always `fixed`
};

/// When a rule applies: every given condition must hold.
struct match_spec {
  std::vector<std::string> methods;  ///< any of these (upper case); empty: any method
  std::string path_prefix;           ///< the normalised path starts with it; empty: any path
  std::string host;                  ///< the host equals it (lower case, port stripped); empty: any
  /// Headers that must be present (nullopt) or have exactly this value.
  std::vector<std::pair<std::string, std::optional<std::string>>> headers;
};

/// A rule: a request it matches gets one check of `policy` under the key
/// the rule builds. A request may match several rules (several checks).
struct rule {
  std::string name;
  match_spec match;
  std::string policy;
  std::vector<key_part> key;
  cost_spec cost;
  /// Decide and count, but never deny (the check is left out of the answer).
  bool shadow = false;
};

/// One entry an Envoy descriptor must carry: its key, and the value it must
/// equal (nullopt: any value, each value limited apart).
struct envoy_entry {
  std::string key;
  std::optional<std::string> value;
  /// The value is an envoyproxy/ratelimit wildcard (it holds a '*', kept
  /// in `value`): each '*' matches any run of bytes (envoy_wildcard_match).
  bool wildcard = false;
  friend bool operator==(const envoy_entry&, const envoy_entry&) = default;
};

/// An Envoy rule (`[[envoy]]`, docs/serve.md "Envoy"): a descriptor of a
/// ShouldRateLimit request in `domain` whose entries are exactly `entries`
/// (the same keys in the same order, each value equal where one is given)
/// gets one check of `policy`, keyed by the entries' values joined as key
/// parts are (append_key_part). The first matching rule applies.
struct envoy_rule {
  std::string name;
  std::string domain;
  std::vector<envoy_entry> entries;
  std::string policy;
  /// The rule comes from an envoyproxy/ratelimit file (envoy_yaml.hpp): it
  /// is matched through its domain's tree (config::envoy_trees), not in order.
  bool in_tree = false;
  /// `unlimited: true`: matched, never limited nor charged (no policy).
  bool unlimited = false;
  /// `shadow_mode: true`: decided alone and counted, never denies.
  bool shadow = false;
  /// `rate_limit.name`, which other rules' `replaces` name ("" for none).
  std::string limit_name;
  /// `rate_limit.replaces`: the names of the rules this one drops from a call.
  std::vector<std::string> replaces;
  /// `quota_mode: true`: the call is denied by its quota rules only when
  /// every one of them is over its limit (docs/serve.md).
  bool quota = false;
  /// The descriptor's `metadata` (a JSON object), for a response's
  /// dynamic_metadata; null for none.
  std::shared_ptr<const nlohmann::json> metadata;
};

/// A node of an envoyproxy/ratelimit descriptor tree: the entry it
/// matches, the rule it holds (an index into config::envoy; none for a node
/// that only nests others, or limits nothing), and the next level.
struct envoy_node {
  envoy_entry entry;
  /// `share_threshold: true` (only on a wildcard): every value the wildcard
  /// matches is keyed as the wildcard itself, for this level's rule and
  /// every rule below it.
  bool share_threshold = false;
  std::optional<std::size_t> rule;
  std::vector<envoy_node> children;
};

/// One envoyproxy/ratelimit file: a domain and its descriptor tree.
struct envoy_tree {
  std::string domain;
  std::string file;  ///< "FILE:LINE:COLUMN" of its domain
  std::vector<envoy_node> nodes;
};

/// TLS on the gRPC listener (`[grpc]` tls_cert_file, tls_key_file,
/// tls_client_ca_file; docs/serve.md, "Token and TLS"): the paths as given
/// and the files' PEM text, read with the configuration.
struct tls_files {
  std::string cert_file;
  std::string key_file;
  std::string client_ca_file;  ///< empty: no client certificate asked for
  std::string cert_pem;
  std::string key_pem;
  std::string client_ca_pem;
  friend bool operator==(const tls_files&, const tls_files&) = default;
};

/// A named policy, as written and as parsed.
struct named_policy {
  std::string name;
  std::string text;
  any_policy policy;
};

/// The longest `server.max_key_bytes` a configuration may set.
inline constexpr std::size_t longest_key_bytes = 64 * 1024;
/// The longest policy name (valid_policy_name).
inline constexpr std::size_t longest_policy_name = 64;

/// Limits against hostile or broken clients.
struct limits {
  std::size_t header_bytes = 8 * 1024;    ///< request line + headers; more: 431
  std::size_t body_bytes = 64 * 1024;     ///< request body; more: 413
  std::size_t key_bytes = 256;            ///< one key; longer: 400 (403 on the auth endpoint)
  std::size_t max_connections = 10'000;   ///< open at once; more are closed at accept
  tick idle_timeout = 60'000'000'000;     ///< keep-alive wait for a request's first byte
  tick request_timeout = 10'000'000'000;  ///< from a request's first byte to its last
  tick drain_timeout = 10'000'000'000;    ///< SIGTERM: the longest wait for in-flight requests
};

/// The whole configuration of a service.
struct config {
  /// The file it came from ("" for the command line).
  std::string file;
  /// The decision listeners (JSON API, auth endpoint, metrics, health).
  std::vector<listen_address> listen{listen_address{}};
  /// The admin listener (reload; metrics, health); none by default.
  std::optional<listen_address> admin;
  /// Event loops (threads); 0: one per core.
  unsigned threads = 0;
  limits lim;
  /// A bearer token required on POST /v1/decide and /v1/authorize (empty: none).
  std::string token;
  /// Lets POST /v1/decide give the instant ("now", in the store's ticks):
  /// for replays and tests; off by default (a client could pick its time).
  bool client_time = false;
  /// Peers whose `forwarded_header` is believed for key part "client".
  std::vector<std::string> trusted_proxies;
  /// "X-Real-IP" (the whole value) or "X-Forwarded-For" (its last entry).
  std::string forwarded_header;
  store_config store;
  std::vector<named_policy> policies;
  std::vector<rule> rules;
  /// The gRPC listener of Envoy's rate limit service ([grpc] listen); none
  /// by default. Only a build with gRPC can serve it (sluice_envoy).
  std::optional<listen_address> grpc;
  /// TLS on that listener (none: cleartext HTTP/2).
  std::optional<tls_files> grpc_tls;
  /// `[grpc] dynamic_metadata`: ShouldRateLimit's responses carry
  /// dynamic_metadata as envoyproxy/ratelimit's (RESPONSE_DYNAMIC_METADATA).
  bool grpc_dynamic_metadata = false;
  /// The rules for Envoy's descriptors ([[envoy]], and those of the
  /// envoyproxy/ratelimit files of `[grpc] envoy_config`).
  std::vector<envoy_rule> envoy;
  /// The descriptor trees of the envoyproxy/ratelimit files, one per domain.
  std::vector<envoy_tree> envoy_trees;

  /// The policy of that name, or null.
  [[nodiscard]] const named_policy* find_policy(std::string_view name) const noexcept;
};

/// Parses a TOML configuration; `name` stands for the file in messages.
/// The error's field is "NAME:LINE:COLUMN". Reading goes on past an error:
/// the result is the first in the file's order, and `all`, when given,
/// receives every one (each bad key of a table, each bad policy, each
/// rule's bad keys, each [[envoy]] rule's first). A TOML syntax error is
/// the only one: the TOML parser stops there.
result<config> parse_config(std::string_view text, const std::string& name, std::vector<error>* all = nullptr);

/// Reads and parses a file; a file that cannot be read is an error naming it.
result<config> load_config(const std::string& path, std::vector<error>* all = nullptr);

/// The configuration the command line builds without a file: one policy
/// "default" and one rule keyed by `key` (parse_key), on 127.0.0.1:8080.
result<config> simple_config(std::string_view policy, std::string_view key);

/// The memory store's default max_keys: a quarter of the machine's physical
/// memory divided by what one state may take, 48 bytes (a record's cell,
/// length and padding, and its slot at the table's lowest load) plus the
/// longest key accepted (server.max_key_bytes). 0 when the memory size is
/// unknown (no bound).
std::size_t default_max_keys(std::size_t key_bytes) noexcept;

/// A policy name the wire can carry: 1..64 of [A-Za-z0-9_.-].
bool valid_policy_name(std::string_view name) noexcept;

}  // namespace sluice::serve
