// call_figures (figures.hpp): latency buckets and failures by reason.
#include "redis/client/figures.hpp"

namespace sluice::redis {

namespace {

// The reason Redis's error code at the start of `text` names, if any.
std::optional<failure_reason> code_reason(std::string_view text) noexcept {
  if (text.starts_with("OOM")) return failure_reason::oom;
  if (text.starts_with("NOPERM")) return failure_reason::noperm;
  if (text.starts_with("CLUSTERDOWN")) return failure_reason::cluster_down;
  if (text.starts_with("BUSY")) return failure_reason::busy;
  if (text.starts_with("NOAUTH") || text.starts_with("WRONGPASS")) return failure_reason::auth;
  return std::nullopt;
}

}  // namespace

std::optional<failure_reason> reason_of_reply(std::string_view text) noexcept {
  if (text.starts_with("sluice:")) return std::nullopt;  // about a key's value, not the store
  // Redis's code opens its reply; the client may have put where it was
  // met before it ("SCRIPT LOAD of library ...: NOPERM ...").
  for (std::string_view rest = text;;) {
    if (auto r = code_reason(rest)) return r;
    const auto colon = rest.find(": ");
    if (colon == std::string_view::npos) break;
    rest = rest.substr(colon + 2);
  }
  return failure_reason::server;
}

std::optional<failure_reason> tls_reason_of(std::string_view message) noexcept {
  // The client puts where it was ("127.0.0.1:6380: ") before the words.
  const auto has = [&](std::string_view w) { return message.find(w) != std::string_view::npos; };
  if (has(tls_words::untrusted)) return failure_reason::untrusted;
  if (has(tls_words::name_mismatch)) return failure_reason::name_mismatch;
  if (has(tls_words::expired)) return failure_reason::expired;
  if (has(tls_words::no_client_certificate)) return failure_reason::no_client_certificate;
  if (has(tls_words::plaintext_peer) || has("no TLS handshake within the connect timeout"))
    return failure_reason::plaintext_peer;
  if (has(tls_words::handshake)) return failure_reason::handshake;
  return std::nullopt;
}

std::optional<failure_reason> reason_of(const call_error& e) noexcept {
  if (e.kind != call_error::server && e.kind != call_error::breaker)
    if (const auto tls = tls_reason_of(e.message)) return tls;
  switch (e.kind) {
    case call_error::timeout:
      return failure_reason::timeout;
    case call_error::io:
      return failure_reason::io;
    case call_error::refused:
      return failure_reason::refused;
    case call_error::auth:
      return failure_reason::auth;
    case call_error::server:
      return reason_of_reply(e.message);
    case call_error::protocol:
      return failure_reason::protocol;
    case call_error::breaker:
      return std::nullopt;
  }
  return failure_reason::server;
}

void call_figures::observe(std::int64_t ns) noexcept {
  if (ns < 0) ns = 0;
  const auto& b = redis_store_stats::call_latency_bounds;
  std::size_t i = 0;
  while (i < b.size() && ns > b[i]) ++i;
  buckets_[i].fetch_add(1, std::memory_order_relaxed);
  sum_ns_.fetch_add(static_cast<std::uint64_t>(ns), std::memory_order_relaxed);
}

void call_figures::count(failure_reason r, std::string_view message) {
  reasons_[static_cast<std::size_t>(r)].fetch_add(1, std::memory_order_relaxed);
  last_.store(static_cast<std::uint8_t>(r), std::memory_order_relaxed);
  std::lock_guard lock(last_mu_);
  last_message_.assign(redis_store_stats::failure_reasons[static_cast<std::size_t>(r)]).append(": ").append(message);
}

void call_figures::note(const call_result& r) {
  if (const auto* e = std::get_if<call_error>(&r)) {
    if (const auto why = reason_of(*e)) count(*why, e->message);
  } else if (const auto* rep = std::get_if<reply>(&r); rep != nullptr && rep->is_error()) {
    if (const auto why = reason_of_reply(rep->str)) count(*why, rep->str);
  }
}

std::string call_figures::last_failure() const {
  std::lock_guard lock(last_mu_);
  return last_message_;
}

void call_figures::note_each(std::span<const call_result> rs) {
  for (const auto& r : rs) note(r);
}

std::optional<failure_reason> call_figures::last_reason() const noexcept {
  const std::uint8_t v = last_.load(std::memory_order_relaxed);
  if (v >= reasons_.size()) return std::nullopt;
  return static_cast<failure_reason>(v);
}

void call_figures::read(redis_store_stats& s) const {
  for (std::size_t i = 0; i < buckets_.size(); ++i)
    s.call_latency_buckets[i] = buckets_[i].load(std::memory_order_relaxed);
  s.call_latency_sum_ns = sum_ns_.load(std::memory_order_relaxed);
  for (std::size_t i = 0; i < reasons_.size(); ++i) s.call_failures[i] = reasons_[i].load(std::memory_order_relaxed);
}

}  // namespace sluice::redis
