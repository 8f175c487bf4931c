// parse_cluster_url: redis+cluster:// URLs into seed nodes, each read by
// parse_url, with errors that name the part at fault.
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "redis/client/cluster.hpp"
#include "redis/client/sentinel.hpp"
#include "redis/client/sync_client.hpp"
#include "redis/client/url_query.hpp"

namespace sluice::redis {
namespace {

constexpr std::string_view cluster_scheme = "redis+cluster://";
constexpr std::size_t max_seeds = 64;

}  // namespace

bool is_cluster_url(std::string_view text) noexcept { return text.starts_with(cluster_scheme); }

result<std::vector<url>> parse_cluster_url(std::string_view text) {
  if (!is_cluster_url(text)) return error{"scheme", "must be redis+cluster:// for a Redis Cluster"};
  std::string_view rest = text.substr(cluster_scheme.size());
  // The userinfo ends at the last '@' (a password may hold an unescaped
  // '@', '/' or ','), so nothing before it is ever echoed in an error.
  std::string_view userinfo;
  if (const auto at = rest.rfind('@'); at != std::string_view::npos) {
    userinfo = rest.substr(0, at + 1);
    rest = rest.substr(at + 1);
  }
  // The query follows the last seed: read once, for every seed.
  url query;
  if (const auto q = rest.find('?'); q != std::string_view::npos) {
    if (auto e = apply_url_query(rest.substr(q + 1), query, url_kind::cluster)) return *e;
    rest = rest.substr(0, q);
  }
  std::string_view hosts = rest;
  if (const auto slash = rest.find('/'); slash != std::string_view::npos) {
    hosts = rest.substr(0, slash);
    const std::string_view db = rest.substr(slash + 1);
    if (!db.empty() && db != "0")
      return error{"db",
                   "must be 0 or left out, not \"" + escape_bytes(db) + "\" (a Redis Cluster has only database 0)"};
  }
  if (hosts.empty()) return error{"seed", "none given (redis+cluster://host:port[,host:port...])"};
  std::vector<url> seeds;
  std::size_t n = 0;
  while (true) {
    const auto comma = hosts.find(',');
    const std::string_view one = hosts.substr(0, comma);
    ++n;
    if (one.empty())
      return error{"seed", "seed " + std::to_string(n) + " is empty (redis+cluster://host:port[,host:port...])"};
    if (n > max_seeds) return error{"seed", "more than " + std::to_string(max_seeds) + " seeds"};
    // Each seed is read as the host and port of a redis:// URL, so the two
    // schemes agree on every form (brackets for IPv6, the default port).
    auto u = parse_url("redis://" + std::string(userinfo) + std::string(one));
    if (!u) {
      error e = u.err();
      e.message = "seed " + std::to_string(n) + " (\"" + std::string(one) + "\"): " + e.message;
      return e;
    }
    seeds.push_back(std::move(u).value());
    seeds.back().store = query.store;
    seeds.back().module = query.module;
    if (comma == std::string_view::npos) break;
    hosts = hosts.substr(comma + 1);
  }
  return seeds;
}

std::optional<error> cluster_name_error(std::string_view field, std::string_view text) {
  if (text.find_first_of("{}") == std::string_view::npos) return std::nullopt;
  return error{std::string(field), "must not hold '{' or '}' in a Redis Cluster (\"" + escape_bytes(text) +
                                       "\"): the store puts each key in braces to choose its hash slot"};
}

std::optional<error> apply_password(url& u, const std::string& password) {
  if (!password.empty()) {
    if (!u.password.empty())
      return error{"password",
                   "is given twice, in the URL and apart from it (store.password_file or SLUICE_REDIS_PASSWORD): "
                   "give it in one place"};
    u.password = password;
  }
  if (!u.user.empty() && u.password.empty())
    return error{"password", "is missing for user \"" + escape_bytes(u.user) +
                                 "\" (redis://user:password@host, store.password_file or SLUICE_REDIS_PASSWORD)"};
  return std::nullopt;
}

module_use module_use_in(std::string_view text) {
  if (is_cluster_url(text)) {
    const auto seeds = parse_cluster_url(text);
    return seeds ? seeds.value().front().module : module_use::automatic;
  }
  if (is_sentinel_url(text)) {
    const auto s = parse_sentinel_url(text);
    return s ? s.value().login.module : module_use::automatic;
  }
  const auto u = parse_url(text);
  return u ? u.value().module : module_use::automatic;
}

result<std::unique_ptr<sync_client>> open_backend(const store_options& options) {
  if (is_cluster_url(options.url)) {
    auto seeds = parse_cluster_url(options.url);
    if (!seeds) return seeds.err();
    if (auto e = cluster_name_error("prefix", options.key_prefix)) return *e;
    cluster_options co;
    co.seeds = std::move(seeds).value();
    for (auto& seed : co.seeds)
      if (auto e = apply_password(seed, options.password)) return *e;
    co.connect_timeout = options.connect_timeout;
    co.command_timeout = options.command_timeout;
    co.breaker_failures = options.breaker_failures;
    co.breaker_cool_down = options.breaker_cool_down;
    auto c = sync_client::open([co](boost::asio::any_io_executor ex) -> result<std::shared_ptr<async_backend>> {
      auto made = cluster_client::create(std::move(ex), co);
      if (!made) return made.err();
      return std::shared_ptr<async_backend>(std::move(made).value());
    });
    if (!c) return c.err();
    return std::move(c).value();
  }
  if (is_sentinel_url(options.url)) return open_sentinel_backend(options);
  auto where = parse_url(options.url);
  if (!where) return where.err();
  // The password's other sources (a file, the environment) hold for every
  // client: rediss:// ignored them before.
  if (auto e = apply_password(where.value(), options.password)) return *e;
  return open_async_backend(options, std::move(where).value());
}

}  // namespace sluice::redis
