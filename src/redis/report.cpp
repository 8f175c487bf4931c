// The Redis store's reports (store.hpp, report_at; semantics.md, "Reports"):
// one `sluice_v2_report` FCALL charges every check of a request at once,
// whatever the limits say; the client checks the script's writes against
// the core's `report` and reads the figures from the charged states. A
// value of an earlier configuration (status 3) is carried over and charged
// by the client with a compare-and-set, as a decision is (carry.cpp).
#include <array>
#include <vector>

#include "redis/store_impl.hpp"
#include "sluice/report.hpp"

namespace sluice {

using redis::outcome;

namespace {

/// The most attempts at a report whose states must be carried over.
constexpr int carry_attempts = 4;

thread_local redis::scratch tls_reports;

std::optional<std::string_view> value_of(const redis::reply& r, bool& ok) {
  if (r.is_nil()) return std::nullopt;
  const auto s = r.as_string();
  if (!s) ok = false;
  return s;
}

}  // namespace

store_decision redis_store::impl::report_one(const store_request& request, std::span<decision> per_check) {
  std::array<const entry*, max_checks> es{};
  store_request r = request;
  if (!r.id.empty() || !entries_of(r, es.data()) || (!per_check.empty() && per_check.size() < r.checks.size())) {
    count(decisions, false);
    count(errors, false);
    return error_decision(r, per_check);
  }
  if (!one_slot(r, es.data())) return refuse_cross_slot(r, false, per_check);
  if (stateless(r, es.data())) {
    // always-* only: nothing to charge, answered here as the core answers.
    std::array<decision, max_checks> each{};
    for (std::size_t i = 0; i < r.checks.size(); ++i) {
      any_state st = fresh_state(es[i]->p->policy());
      each[i] = sluice::report(es[i]->p->policy(), st, r.now, cost_of(r, r.checks[i]));
      if (i < per_check.size()) per_check[i] = each[i];
    }
    count(decisions, false);
    count(from_store, false);
    store_decision out{combine_reports(std::span<const decision>(each.data(), r.checks.size())), source::store, r.now};
    return out;
  }
  // A report moves its keys' time to `now` as an admit does: the deny cache
  // must know (deny_cache.hpp), though its entries stay true (a report only
  // makes a state stricter).
  if (denials)
    for (std::size_t i = 0; i < r.checks.size(); ++i) denials->note(r.checks[i].policy, r.checks[i].key, r.now);
  const auto lost = [&](outcome o) {
    // Nothing charged: the caller learns the report is lost (semantics.md).
    count(decisions, false);
    count(o == outcome::not_sent ? breaker_open : failures, false);
    return error_decision(r, per_check);
  };
  if (breaker && !breaker->allow_call_now()) return lost(outcome::not_sent);
  if (opt.server_clock) {
    const auto t = server_now();
    if (!t) return lost(outcome::failure);
    r.now = *t;
  }
  std::array<decision, max_checks> mine{};
  const std::span<decision> pc = per_check.empty() ? std::span<decision>(mine.data(), r.checks.size()) : per_check;
  store_decision out;
  outcome o = outcome::failure;
  std::vector<std::optional<std::string>> stale;
  for (int attempt = 0; attempt < carry_attempts; ++attempt) {
    redis::scratch& s = tls_reports;
    s.bytes.clear();
    s.pieces.clear();
    s.calls.clear();
    s.owner.clear();
    build(r, es.data(), false, 0, s, true);
    s.views.clear();
    for (const auto& [off, len] : s.pieces) s.views.emplace_back(s.bytes.data() + off, len);
    s.fcalls.clear();
    for (const auto& c : s.calls)
      s.fcalls.push_back(redis::function_call{c.function, c.keys, std::span(s.views.data() + c.first, c.views)});
    const auto res = call_one(s.fcalls[0]);
    o = outcome::failure;
    if (const auto* rep = std::get_if<redis::reply>(&res)) {
      if (const auto msg = rep->as_error()) {
        o = msg->starts_with("sluice: corrupt state") ? outcome::corrupt : outcome::failure;
      } else if (const auto* arr = rep->as_array(); arr != nullptr && !arr->empty() && (*arr)[0].as_integer()) {
        const auto status = *(*arr)[0].as_integer();
        bool ok = true;
        if (status == 3) {
          stale.clear();
          for (std::size_t i = 1; i < arr->size(); ++i) {
            const auto v = value_of((*arr)[i], ok);
            stale.push_back(v ? std::optional<std::string>(std::string(*v)) : std::nullopt);
          }
          o = ok ? decide_carried(r, es.data(), stale, false, out, pc, {}, true) : outcome::failure;
        } else if (status == 1) {
          std::size_t leaves = 0;
          for (std::size_t i = 0; i < r.checks.size(); ++i) leaves += es[i]->p->leaves().size();
          if (arr->size() == 1 + 2 * leaves) {
            std::vector<std::optional<std::string_view>> before(leaves);
            std::vector<std::optional<std::string_view>> after(leaves);
            for (std::size_t k = 0; k < leaves; ++k) {
              before[k] = value_of((*arr)[1 + 2 * k], ok);
              after[k] = value_of((*arr)[2 + 2 * k], ok);
            }
            if (ok)
              o = decide_on(r, es.data(), r.now, {}, before, after, true, false, true, out, pc, nullptr, nullptr, {},
                            {}, true);
          }
        }
        // Any other status (0, 2, 4, 5) is no answer a report call gives.
      }
    } else {
      o = redis::outcome_of(std::get<redis::call_error>(res));
    }
    if (o != outcome::conflict) break;
    carry_conflicts.fetch_add(1, std::memory_order_relaxed);
    o = outcome::mismatch;  // still conflicting after the last attempt: an error, never a half charge
  }
  if (breaker && o != outcome::not_sent) {
    if (o == outcome::failure ? breaker->record_failure_now() : breaker->record_success_now())
      health_changed(node, o != outcome::failure, figures.last_reason());
  }
  switch (o) {
    case outcome::ok:
      count(decisions, false);
      count(from_store, false);
      out.from = source::store;
      out.at = r.now;
      return out;
    case outcome::corrupt:
      count(decisions, false);
      count(corrupt, false);
      count(errors, false);
      return error_decision(r, per_check);
    case outcome::unknown:
      count(decisions, false);
      count(unknown_config, false);
      count(errors, false);
      return error_decision(r, per_check);
    case outcome::mismatch:
      count(decisions, false);
      count(mismatches, false);
      count(errors, false);
      return error_decision(r, per_check);
    default:
      return lost(o);
  }
}

store_decision redis_store::report_at(const store_request& r, std::span<decision> per_check) {
  return impl_->report_one(r, per_check);
}

}  // namespace sluice
