// The Redis store's reports (store.hpp, report_at; semantics.md, "Reports"):
// one `sluice_v2_report` FCALL charges every check of a request at once,
// whatever the limits say; the client checks the script's writes against
// the core's `report` and reads the figures from the charged states. A
// value of an earlier configuration (status 3) is carried over and charged
// by the client with a compare-and-set, as a decision is (carry.cpp). On
// the pipelined client a report waits on nothing (report_async): its call
// is judged on the client's I/O thread, and only a carry-over goes to the
// slow lane.
#include <array>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "redis/resp.hpp"
#include "redis/store_impl.hpp"
#include "sluice/report.hpp"

namespace sluice {

using redis::outcome;

namespace {

/// The most attempts at a report whose states must be carried over.
constexpr int carry_attempts = 4;

thread_local redis::scratch tls_reports;

}  // namespace

std::optional<store_decision> redis_store::impl::report_before_call(store_request& r, const entry** es,
                                                                    std::span<decision> per_check) {
  maybe_measure_clock();
  r.now = lookup_now(r.now);  // at the store's clock: its estimate, the call's reference
  if (!r.id.empty() || !entries_of(r, es) || (!per_check.empty() && per_check.size() < r.checks.size())) {
    count(decisions, false);
    count(errors, false);
    return error_decision(r, per_check);
  }
  if (!one_slot(r, es)) return refuse_cross_slot(r, false, per_check);
  if (stateless(r, es)) {
    // always-* only: nothing to charge, answered here as the core answers.
    std::array<decision, max_checks> each{};
    for (std::size_t i = 0; i < r.checks.size(); ++i) {
      any_state st = fresh_state(es[i]->p->policy());
      each[i] = sluice::report(es[i]->p->policy(), st, r.now, cost_of(r, r.checks[i]));
      if (i < per_check.size()) per_check[i] = each[i];
    }
    count(decisions, false);
    count(from_store, false);
    return store_decision{combine_reports(std::span<const decision>(each.data(), r.checks.size())), source::store,
                          r.now};
  }
  // A report moves its keys' time to `now` as an admit does: the deny cache
  // must know (deny_cache.hpp), though its entries stay true (a report only
  // makes a state stricter).
  if (denials)
    for (std::size_t i = 0; i < r.checks.size(); ++i) denials->note(r.checks[i].policy, r.checks[i].key, r.now);
  if (breaker && !breaker->allow_call_now()) return report_concluded(r, outcome::not_sent, {}, per_check);
  return std::nullopt;
}

void redis_store::impl::build_report(const store_request& r, const entry* const* es, redis::scratch& s) const {
  s.bytes.clear();
  s.pieces.clear();
  s.calls.clear();
  s.owner.clear();
  build(r, es, false, 0, s, true);
  s.views.clear();
  for (const auto& [off, len] : s.pieces) s.views.emplace_back(s.bytes.data() + off, len);
  s.fcalls.clear();
  for (const auto& c : s.calls)
    s.fcalls.push_back(redis::function_call{c.function, c.keys, std::span(s.views.data() + c.first, c.views)});
}

outcome redis_store::impl::judge_report(const store_request& r, const entry* const* es, const redis::call_result& res,
                                        store_decision& out, std::span<decision> pc,
                                        std::vector<std::optional<std::string>>& stale) {
  const auto* rep = std::get_if<redis::reply>(&res);
  if (rep == nullptr) return redis::outcome_of(std::get<redis::call_error>(res));
  if (const auto msg = rep->as_error())
    return msg->starts_with("sluice: corrupt state") ? outcome::corrupt : outcome::failure;
  const auto* arr = rep->as_array();
  if (arr == nullptr || arr->empty() || !(*arr)[0].as_integer()) return outcome::failure;
  const auto status = *(*arr)[0].as_integer();
  if (status == 3) return stale_values(*arr, stale) ? outcome::stale : outcome::failure;
  if (status == 6) return moved_of(*arr, stale) ? outcome::moved : outcome::failure;
  if (status != 1) return outcome::failure;  // 0, 2, 4, 5: no answer a report call gives
  std::vector<std::optional<std::string_view>> before;
  std::vector<std::optional<std::string_view>> after;
  if (!leaf_values(r, es, *arr, before, after)) return outcome::failure;
  return decide_on(r, es, r.now, {}, before, after, true, false, true, out, pc, nullptr, nullptr, {}, {}, true);
}

store_decision redis_store::impl::report_concluded(const store_request& r, outcome o, store_decision out,
                                                   std::span<decision> per_check) {
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
    case outcome::moved:  // the key's override changed under every attempt: nothing charged
      count(decisions, false);
      count(override_races, false);
      count(errors, false);
      return error_decision(r, per_check);
    default:
      // Nothing charged: the caller learns the report is lost (semantics.md).
      count(decisions, false);
      count(o == outcome::not_sent ? breaker_open : failures, false);
      return error_decision(r, per_check);
  }
}

store_decision redis_store::impl::report_one(const store_request& request, std::span<decision> per_check) {
  std::array<const entry*, max_checks> es{};
  store_request r = request;
  if (auto early = report_before_call(r, es.data(), per_check)) return *early;
  std::array<decision, max_checks> mine{};
  const std::span<decision> pc = per_check.empty() ? std::span<decision>(mine.data(), r.checks.size()) : per_check;
  store_decision out;
  outcome o = outcome::failure;
  std::vector<std::optional<std::string>> stale;
  int moves = 0;
  for (int attempt = 0; attempt < carry_attempts;) {
    redis::scratch& s = tls_reports;
    build_report(r, es.data(), s);
    const std::int64_t sent = remote::circuit_breaker::steady_ns();
    auto res = call_one(s.fcalls[0]);
    o = take_instant(res, sent, r.now) ? judge_report(r, es.data(), res, out, pc, stale) : outcome::failure;
    if (o == outcome::moved) {
      // Built for another override than the one stored: nothing charged;
      // built again under the stored one.
      if (!follow(r, es.data(), stale)) {
        o = outcome::corrupt;
        break;
      }
      if (++moves > carry_attempts) break;
      continue;
    }
    if (o == outcome::stale) o = decide_carried(r, es.data(), stale, false, out, pc, {}, true);
    if (o != outcome::conflict) break;
    ++attempt;
    carry_conflicts.fetch_add(1, std::memory_order_relaxed);
    o = outcome::mismatch;  // still conflicting after the last attempt: an error, never a half charge
  }
  return report_concluded(r, o, out, per_check);
}

namespace {

/// One asynchronous report: what its call and its answer need until the
/// reply comes.
struct report_job {
  store_request r;
  std::span<decision> per_check;
  store::decided done;
  std::array<const redis::entry*, max_checks> es{};
  std::array<decision, max_checks> mine{};
  redis::scratch s;  // the call's bytes: the client reads them until it answers
  std::int64_t t0 = 0;
};

}  // namespace

void redis_store::impl::report_async(const store_request& request, std::span<decision> per_check, store::decided done) {
  auto j = std::make_shared<report_job>();
  j->r = request;
  if (auto early = report_before_call(j->r, j->es.data(), per_check)) return done(*early);
  j->done = std::move(done);
  j->per_check = per_check;
  enter();
  build_report(j->r, j->es.data(), j->s);
  j->t0 = remote::circuit_breaker::steady_ns();
  backend_here().async_fcall_each(std::span(j->s.fcalls.data(), 1), [this, j](std::vector<redis::call_result> v) {
    redis::call_result& res = v[0];
    if (auto* rep = std::get_if<redis::reply>(&res); rep != nullptr && rep->is_error())
      res = redis::server_error(std::move(rep->str));  // as the synchronous face's fcall
    figures.observe(remote::circuit_breaker::steady_ns() - j->t0);
    figures.note(res);
    const std::span<decision> pc =
        j->per_check.empty() ? std::span<decision>(j->mine.data(), j->r.checks.size()) : j->per_check;
    store_decision out;
    std::vector<std::optional<std::string>> stale;
    outcome o =
        take_instant(res, j->t0, j->r.now) ? judge_report(j->r, j->es.data(), res, out, pc, stale) : outcome::failure;
    if (o == outcome::moved) {
      (void)follow(j->r, j->es.data(), stale);  // the slow lane builds it again under the stored override
      o = outcome::stale;
    }
    if (o == outcome::stale) {
      // A value of an earlier configuration: the stale reply wrote nothing,
      // so the slow lane reports afresh (carried over with more calls).
      slow.post([this, j] {
        j->done(report_one(j->r, j->per_check));
        leave();
      });
      return;
    }
    j->done(report_concluded(j->r, o, out, j->per_check));
    leave();
  });
}

store_decision redis_store::report_at(const store_request& r, std::span<decision> per_check) {
  return impl_->report_one(r, per_check);
}

void redis_store::report_async(const store_request& r, std::span<decision> per_check, decided done) {
  impl_->report_async(r, per_check, std::move(done));
}

}  // namespace sluice
