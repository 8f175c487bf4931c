// The Redis store's reports (store.hpp, report_at; semantics.md, "Reports"):
// one `sluice_v2_report` FCALL charges every check of a request at once,
// whatever the limits say; the client checks the script's writes against
// the core's `report` and reads the figures from the charged states. A
// value of an earlier configuration (status 3) is carried over and charged
// by the client with a compare-and-set, as a decision is (carry.cpp). A
// report is sent, judged and resolved by the same code as a decision, on
// either face (decide.cpp: run, run_async); what is a report's own is here.
#include <array>
#include <optional>
#include <string>
#include <vector>

#include "redis/client/resp.hpp"
#include "redis/store/store_impl.hpp"
#include "sluice/core/report.hpp"

namespace sluice {

using redis::outcome;

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

outcome redis_store::impl::judge_report(const store_request& r, const entry* const* es, const redis::reply& rep,
                                        store_decision& out, std::span<decision> pc,
                                        std::vector<std::optional<std::string>>& stale) {
  if (const auto msg = rep.as_error())
    return msg->starts_with("sluice: corrupt state") ? outcome::corrupt : outcome::failure;
  const auto* arr = rep.as_array();
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

store_decision redis_store::report_at(const store_request& r, std::span<decision> per_check) {
  return impl_->run(r, redis::call_kind::report, per_check);
}

void redis_store::report_async(const store_request& r, std::span<decision> per_check, decided done) {
  impl_->run_async(r, redis::call_kind::report, per_check, {}, std::move(done));
}

}  // namespace sluice
