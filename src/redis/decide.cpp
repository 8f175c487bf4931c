// The Redis store's decisions (include/sluice/redis.hpp): requests to FCALLs
// of the Lua library and replies back to decisions with the core's code.
//
// The hot path — one check of a plain policy, no request id — is built into
// a per-thread buffer (no allocation once warm), sent as `sluice_v2_one`,
// and its reply read and checked without building any container. Every
// other request goes through `sluice_v2_decide` and the general reading
// (decide_on). A reply of status 3 (a value of an earlier configuration) is
// decided in carry.cpp.
#include <algorithm>
#include <array>

#include <boost/container/small_vector.hpp>

#include "redis/binary.hpp"
#include "redis/combine.hpp"
#include "redis/resp.hpp"
#include "redis/store_impl.hpp"
#include "sluice/concurrency.hpp"
#include "sluice/report.hpp"

namespace sluice {

using redis::outcome;

namespace {

/// The most attempts at one request whose states must be carried over (a
/// compare-and-set that lost a race is read and decided again).
constexpr int carry_attempts = 4;

/// The most times one request is built again for an override that changed
/// under it (status 6): a change racing every attempt makes it an error.
constexpr int max_moves = 4;

/// The most calls in one pipeline: hiredis 0.14 moves its whole output
/// buffer after every partial write, so one huge pipeline costs quadratic
/// time.
constexpr std::size_t max_pipeline = 256;

thread_local redis::scratch tls_calls;

/// Whether a decision of `r` may take a lease: some check's policy holds a
/// concurrency part. Such a decision draws its nonce before its call, sends
/// it to the library and decides with the core under the same nonce
/// (semantics.md, "Leases in a Redis store").
bool takes_leases(const store_request& r, const redis::entry* const* es) noexcept {
  for (std::size_t i = 0; i < r.checks.size(); ++i)
    if (es[i]->p->leases()) return true;
  return false;
}

/// A nonce for `r` when it may take a lease (not a peek), else 0.
std::uint64_t nonce_for(const store_request& r, const redis::entry* const* es, bool peek) {
  return !peek && takes_leases(r, es) ? draw_lease_nonce() : 0;
}

/// Starts a view in `s.bytes`.
std::size_t begin_piece(redis::scratch& s) { return s.bytes.size(); }
void end_piece(redis::scratch& s, std::size_t from) { s.pieces.emplace_back(from, s.bytes.size() - from); }

/// The views and calls of everything built in `s` (after the last build:
/// `bytes` no longer moves).
void seal(redis::scratch& s) {
  s.views.clear();
  for (const auto& [off, len] : s.pieces) s.views.emplace_back(s.bytes.data() + off, len);
  s.fcalls.clear();
  for (const auto& c : s.calls)
    s.fcalls.push_back(redis::function_call{c.function, c.keys, std::span(s.views.data() + c.first, c.views)});
}

void clear(redis::scratch& s) {
  s.bytes.clear();
  s.pieces.clear();
  s.calls.clear();
  s.owner.clear();
}

}  // namespace

void redis_store::impl::build(const store_request& r, const entry* const* es, bool peek, std::int64_t batch,
                              redis::scratch& s, bool report) const {
  redis::call_span c;
  c.first = s.pieces.size();
  const bool single = !report && !peek && r.id.empty() && r.checks.size() == 1 && es[0]->p->single();
  const bool has_id = !report && !peek && !r.id.empty();
  c.function = report ? fns.report : single ? fns.one : (peek ? fns.peek : fns.decide);
  if (has_id) {
    const std::size_t at = begin_piece(s);
    append_id_key(r, es, s.bytes);
    end_piece(s, at);
  }
  // Per check with a state: its override key (docs/redis.md, "Overrides"),
  // then its state keys; `_one`'s is its second key.
  std::array<bool, max_checks> named{};
  for (std::size_t i = 0; i < r.checks.size(); ++i) {
    named[i] = !es[i]->p->leaves().empty() && overridable(r.checks[i].key);
    const auto name_override = [&] {
      const std::size_t at = begin_piece(s);
      s.bytes.append(es[i]->override_head).append(r.checks[i].key).append(1, '}');
      end_piece(s, at);
    };
    if (named[i] && !single) name_override();
    for (const auto& lp : es[i]->p->leaves()) {
      const std::size_t at = begin_piece(s);
      s.bytes.append(es[i]->key_head).append(r.checks[i].key).append(1, '}').append(lp.suffix);
      end_piece(s, at);
    }
    if (named[i] && single) name_override();
  }
  c.keys = s.pieces.size() - c.first;
  const std::size_t at = begin_piece(s);
  put_instant(s.bytes, r.now);
  redis::put_number(s.bytes, opt.tick_ns);
  redis::put_number(s.bytes, ttl_base);
  redis::put_number(s.bytes, batch);
  if (single) {
    es[0]->p->append_leaf(0, r.now, cost_of(r, r.checks[0]), s.bytes);
  } else {
    redis::put_number(s.bytes, has_id ? 1 : 0);
    redis::put_number(s.bytes, std::max<std::int64_t>(1, opt.idempotency_window.count()));
    s.bytes.push_back('A');
    redis::put_number(s.bytes, static_cast<std::int64_t>(r.checks.size()));
    for (std::size_t i = 0; i < r.checks.size(); ++i) {
      if (named[i]) {
        // 'V': what this call was built for at the override key (-1: none).
        const std::string& o = es[i]->override_bytes;
        s.bytes.push_back('V');
        redis::put_number(s.bytes, es[i]->is_override ? static_cast<std::int64_t>(o.size()) : -1);
        s.bytes.append(o);
      }
      es[i]->p->append_tree(r.now, cost_of(r, r.checks[i]), s.bytes, report);
    }
  }
  end_piece(s, at);
  if (single && named[0]) {
    // ARGV[2] of `_one`: '-' (built for no override) or '=' and its bytes.
    const std::size_t from = begin_piece(s);
    s.bytes.push_back(es[0]->is_override ? '=' : '-');
    s.bytes.append(es[0]->override_bytes);
    end_piece(s, from);
  }
  if (has_id) {
    // ARGV[2]: the request's identity, kept beside its first decision and
    // compared with a repeat's in the same call (semantics.md, "Request ids").
    thread_local std::string identity;
    identity_of(r, es, identity);
    const std::size_t from = begin_piece(s);
    s.bytes.append(identity);
    end_piece(s, from);
  }
  c.views = s.pieces.size() - c.first;
  s.calls.push_back(c);
}

outcome redis_store::impl::judge(const store_request& r, const entry* const* es, const redis::reply& rep, bool peek,
                                 store_decision& out, std::span<decision> per_check,
                                 std::vector<std::optional<std::string>>& stale, std::span<std::optional<tick>> grows) {
  if (const auto msg = rep.as_error())
    return msg->starts_with("sluice: corrupt state") ? outcome::corrupt : outcome::failure;
  const auto* arr = rep.as_array();
  if (arr == nullptr || arr->empty()) return outcome::failure;
  const auto status = (*arr)[0].as_integer();
  if (!status) return outcome::failure;
  bool ok = true;
  switch (*status) {
    case 6:
      return moved_of(*arr, stale) ? outcome::moved : outcome::failure;
    case 5:
      return outcome::id_conflict;
    case 4:
      return outcome::skipped;
    case 3:
      return stale_values(*arr, stale) ? outcome::stale : outcome::failure;
    case 2:
      if (arr->size() != 2 || !(*arr)[1].as_string()) return outcome::failure;
      return replay(r, es, *(*arr)[1].as_string(), peek, out, per_check, grows);
    case 0:
    case 1:
      break;
    default:
      return outcome::failure;
  }
  const bool admitted = *status == 1;
  if (r.checks.size() == 1 && es[0]->p->single() && !peek && r.id.empty()) {
    // The hot path: {0, before} or {1, before, after}, one leaf, one check.
    if (arr->size() != (admitted ? 3U : 2U)) return outcome::failure;
    const auto before = value_of((*arr)[1], ok);
    const auto after = admitted ? value_of((*arr)[2], ok) : std::nullopt;
    if (!ok || (admitted && !after)) return outcome::failure;
    const entry& e = *es[0];
    tick latest = detail::i64_min;
    auto read = e.p->decode_leaf(0, before, latest);
    if (!read) return outcome::corrupt;
    any_state& st = read.value();
    if ((latest != detail::i64_min &&
         static_cast<detail::i128>(r.now) < static_cast<detail::i128>(latest) - opt.skew_tolerance) ||
        ahead_of_store(r.now))
      skew.fetch_add(1, std::memory_order_relaxed);
    const any_policy& pol = e.p->policy();
    const std::int64_t cost = cost_of(r, r.checks[0]);
    // As combine() decides one check (store.hpp): the request's figures are
    // the check's, part 0.
    decision d;
    if (!admitted) {
      d = sluice::peek(pol, st, r.now, cost);
      if (d.allowed) return outcome::mismatch;
      out.d = decision{};
      out.d.remaining = d.remaining;
      if (d.retry_after != 0) {
        out.d.retry_after = d.retry_after;
        out.d.part = 0;
      }
      out.d.reset_after = std::max<tick>(0, d.reset_after);
    } else {
      d = sluice::decide(pol, st, r.now, cost);
      if (!d.allowed) return outcome::mismatch;
      tick ignored = detail::i64_min;
      auto written = e.p->decode_leaf(0, after, ignored);
      if (!written || !(written.value() == st)) return outcome::mismatch;
      out.d = decision{};
      out.d.allowed = true;
      out.lease = e.p->leases() ? detail::lease_ctx.nonce : 0;  // a plain concurrency policy: its lease
      out.d.remaining = d.remaining;
      out.d.part = 0;
      out.d.reset_after = std::max<tick>(0, d.reset_after);
      out.d.release_after = std::max<tick>(0, d.release_after);
    }
    if (!per_check.empty()) per_check[0] = d;
    if (!grows.empty()) grows[0] = grows_after_of(pol, st, r.now, d.remaining);  // `st`: after the decision
    out.from = source::store;
    return outcome::ok;
  }
  // {admitted, before₁, after₁, ...}: the general reading.
  std::vector<std::optional<std::string_view>> before;
  std::vector<std::optional<std::string_view>> after;
  if (!leaf_values(r, es, *arr, before, after)) return outcome::failure;
  return decide_on(r, es, r.now, {}, before, after, admitted, peek, !peek, out, per_check, nullptr, nullptr, {}, grows);
}

bool redis_store::impl::stale_values(const std::vector<redis::reply>& arr,
                                     std::vector<std::optional<std::string>>& stale) {
  bool ok = true;
  stale.clear();
  for (std::size_t i = 1; i < arr.size(); ++i) {
    const auto v = value_of(arr[i], ok);
    stale.push_back(v ? std::optional<std::string>(std::string(*v)) : std::nullopt);
  }
  return ok;
}

bool redis_store::impl::moved_of(const std::vector<redis::reply>& arr, std::vector<std::optional<std::string>>& moved) {
  if (arr.size() != 3) return false;
  const auto v = arr[1].as_integer();
  bool ok = true;
  const auto stored = value_of(arr[2], ok);
  if (!v || *v < 1 || !ok) return false;
  moved.clear();
  moved.emplace_back(std::to_string(*v));
  moved.push_back(stored ? std::optional<std::string>(std::string(*stored)) : std::nullopt);
  return true;
}

bool redis_store::impl::leaf_values(const store_request& r, const entry* const* es,
                                    const std::vector<redis::reply>& arr,
                                    std::vector<std::optional<std::string_view>>& before,
                                    std::vector<std::optional<std::string_view>>& after) {
  std::size_t leaves = 0;
  for (std::size_t i = 0; i < r.checks.size(); ++i) leaves += es[i]->p->leaves().size();
  if (arr.size() != 1 + 2 * leaves) return false;
  bool ok = true;
  before.assign(leaves, std::nullopt);
  after.assign(leaves, std::nullopt);
  for (std::size_t k = 0; k < leaves; ++k) {
    before[k] = value_of(arr[1 + 2 * k], ok);
    after[k] = value_of(arr[2 + 2 * k], ok);
  }
  return ok;
}

outcome redis_store::impl::decide_on(const store_request& r, const entry* const* es, tick now,
                                     std::span<const std::size_t> epoch_of,
                                     std::span<const std::optional<std::string_view>> before,
                                     std::span<const std::optional<std::string_view>> after,
                                     std::optional<bool> admitted, bool peek, bool count_skew, store_decision& out,
                                     std::span<decision> per_check, std::vector<any_state>* read_states,
                                     std::vector<any_state>* new_states, std::span<bool> stale,
                                     std::span<std::optional<tick>> grows, bool report) {
  const std::size_t n = r.checks.size();
  // `grows`, when asked, comes with a `per_check` of n (one() gives its own
  // when the caller wants none): its `remaining` is what grows_after reads.
  std::vector<any_state> states;
  std::vector<const any_policy*> pols;
  std::vector<const redis::plan*> plans;
  std::vector<any_state> read_leaves;  // every leaf's state as read, in request order
  std::vector<const any_state*> ptrs;
  states.reserve(n);
  pols.reserve(n);
  tick latest = detail::i64_min;
  std::size_t at = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const std::size_t e = epoch_of.empty() ? es[i]->epochs.size() - 1 : epoch_of[i];
    const std::span<const redis::epoch> upto(es[i]->epochs.data(), e + 1);
    const redis::plan& p = *upto.back().p;
    const std::size_t k = p.leaves().size();
    if (at + k > before.size()) return outcome::failure;
    redis::read_outcome how = redis::read_outcome::current;
    auto st = redis::read_check(upto, before.subspan(at, k), latest, how,
                                stale.empty() ? std::span<bool>() : stale.subspan(at, k));
    if (how == redis::read_outcome::unknown) return outcome::unknown;
    if (!st) return outcome::corrupt;
    ptrs.clear();
    p.leaf_states(*st, ptrs);
    for (const any_state* x : ptrs) read_leaves.push_back(*x);
    states.push_back(std::move(*st));
    pols.push_back(&p.policy());
    plans.push_back(&p);
    at += k;
  }
  if (at != before.size()) return outcome::failure;
  if (count_skew && ((latest != detail::i64_min &&
                      static_cast<detail::i128>(now) < static_cast<detail::i128>(latest) - opt.skew_tolerance) ||
                     ahead_of_store(now)))
    skew.fetch_add(1, std::memory_order_relaxed);
  std::array<std::int64_t, max_checks> costs{};
  for (std::size_t i = 0; i < n; ++i) costs[i] = cost_of(r, r.checks[i]);
  if (report) {
    // Every check charged by the core's report (semantics.md, "Reports").
    std::array<decision, max_checks> each{};
    for (std::size_t i = 0; i < n; ++i) {
      each[i] = sluice::report(*pols[i], states[i], now, costs[i]);
      if (i < per_check.size()) per_check[i] = each[i];
    }
    out.d = combine_reports(std::span<const decision>(each.data(), n));
  } else {
    const std::uint64_t issued = detail::lease_ctx.issued;
    out.d = redis::combine(pols, states, now, std::span<const std::int64_t>(costs.data(), n), per_check);
    // The lease this admit took: the scope's nonce, when a concurrency part paid.
    out.lease = !peek && out.d.allowed && detail::lease_ctx.issued > issued ? detail::lease_ctx.nonce : 0;
  }
  if (admitted && out.d.allowed != *admitted) return outcome::mismatch;
  out.from = source::store;
  // `states`: every check's state after the decision (combine charged them
  // on an admit).
  for (std::size_t i = 0; i < grows.size() && i < n; ++i)
    grows[i] = grows_after_of(*pols[i], states[i], now, per_check[i].remaining);
  if (read_states != nullptr) *read_states = read_leaves;
  if (new_states != nullptr || (!peek && admitted)) {
    // Every leaf's state after the decision, in request order.
    std::vector<const any_state*> now_leaves;
    for (std::size_t i = 0; i < n; ++i) plans[i]->leaf_states(states[i], now_leaves);
    if (new_states != nullptr) {
      new_states->clear();
      for (const any_state* s : now_leaves) new_states->push_back(*s);
    }
    if (!peek && admitted && !after.empty()) {
      // The script's writes must be the core's: on an admit every committed
      // leaf's written value is its new state and every other leaf is
      // unchanged; a denial writes nothing.
      at = 0;
      for (std::size_t i = 0; i < n; ++i) {
        const redis::plan& p = *plans[i];
        for (std::size_t j = 0; j < p.leaves().size(); ++j, ++at) {
          if (!out.d.allowed) {
            if (after[at]) return outcome::mismatch;
            continue;
          }
          if (after[at]) {
            tick ignored = detail::i64_min;
            auto written = p.decode_leaf(j, after[at], ignored);
            if (!written || !(written.value() == *now_leaves[at])) return outcome::mismatch;
          } else if (!(read_leaves[at] == *now_leaves[at])) {
            return outcome::mismatch;
          }
        }
      }
    }
  }
  return outcome::ok;
}

std::optional<store_decision> redis_store::impl::before_call(const store_request& r, bool peek, const entry** es,
                                                             std::span<decision> per_check,
                                                             std::span<std::optional<tick>> grows) {
  for (std::size_t i = 0; i < grows.size() && i < r.checks.size(); ++i) grows[i].reset();
  maybe_measure_clock();
  if (!entries_of(r, es)) {
    count(decisions, peek);
    count(errors, peek);
    return error_decision(r, per_check);
  }
  if (!one_slot(r, es)) return refuse_cross_slot(r, peek, per_check);
  // No state to read (always-* only): decided here, exactly, with no call,
  // so no failure of the store can change it.
  if (stateless(r, es)) return decide_stateless(r, es, peek, per_check, grows);
  return local_answer(r, es, peek, per_check, grows);
}

store_decision redis_store::impl::one(const store_request& request, bool peek, std::span<decision> per_check,
                                      std::span<std::optional<tick>> grows) {
  std::array<const entry*, max_checks> es{};
  store_request r = request;
  if (peek) grows = {};
  // At the store's clock: looked up at the estimate of it, sent as the
  // window split's reference, decided at the instant the reply returns.
  r.now = lookup_now(r.now);
  if (auto early = before_call(r, peek, es.data(), per_check, grows)) return *early;
  const auto seen = cache_generation();  // before the call (conclude)
  // Per-check decisions for the deny cache or `grows` when the caller wants none.
  std::array<decision, max_checks> mine{};
  if (!peek && per_check.empty() && (!grows.empty() || (denials && r.checks.size() > 1)))
    per_check = std::span(mine.data(), r.checks.size());
  store_decision out;
  std::vector<std::optional<std::string>> stale;
  outcome o = outcome::failure;
  const lease_scope scope(nonce_for(r, es.data(), peek));  // sent, and decided with
  int moves = 0;
  for (int attempt = 0; attempt < carry_attempts;) {
    redis::scratch& s = tls_calls;
    clear(s);
    build(r, es.data(), peek, 0, s);
    seal(s);
    const std::int64_t sent = remote::circuit_breaker::steady_ns();
    auto res = call_one(s.fcalls[0]);
    if (auto* rep = std::get_if<redis::reply>(&res)) {
      o = take_instant(*rep, sent, r.now) ? judge(r, es.data(), *rep, peek, out, per_check, stale, grows)
                                          : outcome::failure;
    } else {
      o = redis::outcome_of(std::get<redis::call_error>(res));
    }
    if (o == outcome::moved) {
      // Built for another override than the one stored: built again under
      // the stored one (nothing was decided or written).
      if (!follow(r, es.data(), stale)) {
        o = outcome::corrupt;
        break;
      }
      if (++moves > max_moves) break;
      continue;
    }
    if (o == outcome::stale) o = decide_carried(r, es.data(), stale, peek, out, per_check, grows);
    if (o != outcome::conflict) break;
    ++attempt;
    carry_conflicts.fetch_add(1, std::memory_order_relaxed);
    o = outcome::mismatch;  // still conflicting after the last attempt: an error, never an admit
  }
  return conclude(r, es.data(), o, out, peek, per_check, grows, seen);
}

void redis_store::impl::enter() {
  const std::lock_guard lock(flight_mu);
  ++in_flight;
}

void redis_store::impl::leave() {
  {
    const std::lock_guard lock(flight_mu);
    --in_flight;
  }
  flight_cv.notify_all();
}

namespace {

/// One asynchronous decision between its call and its answer: the
/// request's own copy of what `one` keeps on its stack. Its per-check
/// arrays hold a few checks in place and are sized once, before any span
/// points into them: a request of up to four checks is one allocation
/// small enough for malloc's per-thread cache, where arrays of max_checks
/// made it a large one on malloc's slow path.
struct async_job {
  static constexpr std::size_t in_place = 4;
  store_request r;
  bool peek = false;
  std::span<decision> per_check;
  std::span<std::optional<tick>> grows;
  store::decided done;
  boost::container::small_vector<const redis::entry*, in_place> es;
  boost::container::small_vector<decision, in_place> mine;
  redis::scratch s;  // the call's bytes: the client reads them until it answers
  std::int64_t t0 = 0;
  std::uint64_t nonce = 0;            // of the leases it may take
  std::optional<std::uint64_t> seen;  // the deny cache's generation before the call
};

}  // namespace

void redis_store::impl::one_async(const store_request& request, bool peek, std::span<decision> per_check,
                                  std::span<std::optional<tick>> grows, store::decided done) {
  if (peek) grows = {};
  auto j = std::make_shared<async_job>();
  j->r = request;
  j->peek = peek;
  j->r.now = lookup_now(j->r.now);  // as `one`
  // entries_of refuses more than max_checks before it writes an entry.
  j->es.resize(std::min(request.checks.size(), max_checks));
  if (auto early = before_call(j->r, peek, j->es.data(), per_check, grows)) return done(*early);
  j->done = std::move(done);
  j->grows = grows;
  // Per-check decisions for the deny cache or `grows` when the caller wants none (as `one`).
  if (!peek && per_check.empty() && (!grows.empty() || (denials && j->r.checks.size() > 1))) {
    j->mine.resize(j->r.checks.size());
    per_check = std::span(j->mine.data(), j->mine.size());
  }
  j->per_check = per_check;
  enter();
  clear(j->s);
  // The call's bytes in one allocation, not one per doubling (a key and a
  // few numbers per check; a larger request grows it as it needs).
  j->s.bytes.reserve(256 * j->r.checks.size());
  j->nonce = nonce_for(j->r, j->es.data(), peek);
  {
    const lease_scope scope(j->nonce);
    build(j->r, j->es.data(), peek, 0, j->s);
  }
  seal(j->s);
  j->seen = cache_generation();
  j->t0 = remote::circuit_breaker::steady_ns();
  backend_here().async_fcall_each(std::span(j->s.fcalls.data(), 1), [this, j](std::vector<redis::call_result> v) {
    redis::call_result& res = v[0];
    if (auto* rep = std::get_if<redis::reply>(&res); rep != nullptr && rep->is_error())
      res = redis::server_error(std::move(rep->str));  // as the synchronous face's fcall
    figures.observe(remote::circuit_breaker::steady_ns() - j->t0);
    figures.note(res);
    store_decision out;
    std::vector<std::optional<std::string>> stale;
    outcome o = outcome::failure;
    if (auto* rep = std::get_if<redis::reply>(&res)) {
      const lease_scope scope(j->nonce);  // the nonce the call sent
      o = take_instant(*rep, j->t0, j->r.now)
              ? judge(j->r, j->es.data(), *rep, j->peek, out, j->per_check, stale, j->grows)
              : outcome::failure;
    } else {
      o = redis::outcome_of(std::get<redis::call_error>(res));
    }
    if (o == outcome::moved) {
      // Built for another override than the one stored: the belief
      // follows it, and the slow lane decides afresh (as `one`), built
      // under the stored override.
      (void)follow(j->r, j->es.data(), stale);
      o = outcome::stale;
    }
    if (o == outcome::stale) {
      // A value of an earlier configuration: carried over with a
      // compare-and-set (more calls). The stale reply wrote nothing, so
      // the slow lane decides the request afresh, exactly as `one`.
      slow.post([this, j] {
        const store_decision d = one(j->r, j->peek, j->per_check, j->grows);
        j->done(d);
        leave();
      });
      return;
    }
    const store_decision d = conclude(j->r, j->es.data(), o, out, j->peek, j->per_check, j->grows, j->seen);
    j->done(d);
    leave();
  });
}

void redis_store::impl::many(std::span<const store_request> given, std::span<store_decision> out) {
  // At the store's clock: each request looked up at the estimate of it,
  // and decided at the instant its own call returns (as `one`).
  maybe_measure_clock();
  std::vector<store_request> at_store;
  std::span<const store_request> requests = given;
  if (at_store_clock()) {
    at_store.assign(given.begin(), given.end());
    for (auto& r : at_store) r.now = lookup_now(r.now);
    requests = at_store;
  }
  const std::size_t n = requests.size();
  std::vector<std::array<const entry*, max_checks>> es(n);
  std::vector<bool> done(n, false);
  std::array<decision, max_checks> mine{};
  for (std::size_t i = 0; i < n; ++i) {
    if (!entries_of(requests[i], es[i].data())) {
      count(decisions, false);
      count(errors, false);
      out[i] = error_decision(requests[i], {});
      done[i] = true;
    } else if (!one_slot(requests[i], es[i].data())) {
      out[i] = refuse_cross_slot(requests[i], false, {});
      done[i] = true;
    } else if (stateless(requests[i], es[i].data())) {
      out[i] = decide_stateless(requests[i], es[i].data(), false, {});
      done[i] = true;
    } else if (auto answered = local_answer(requests[i], es[i].data(), false, {})) {
      out[i] = *answered;
      done[i] = true;
    }
  }
  std::vector<std::optional<std::string>> stale;
  const auto seen = cache_generation();  // before the first call: the whole batch's (conclude)
  // Each request's nonce, kept across rounds (a skipped call is sent again
  // with the same one).
  std::vector<std::uint64_t> nonces(n, 0);
  std::vector<int> moves(n, 0);  // times each was built again for a changed override
  for (std::size_t i = 0; i < n; ++i)
    if (!done[i]) nonces[i] = nonce_for(requests[i], es[i].data(), false);
  // Each round sends the requests not yet decided, in order, at most
  // max_pipeline of them (the deny cache answers most of a batch of mostly
  // denied traffic without a call, so a batch may hold many times that
  // many requests); a round stops
  // at a request whose states must be carried over (the calls after it are
  // skipped by the library), which is decided on its own before the next.
  for (std::size_t round = 0; round <= (n + 8) * (max_moves + 1); ++round) {
    redis::scratch& s = tls_calls;
    clear(s);
    const std::int64_t batch = next_batch();
    for (std::size_t i = 0; i < n && s.owner.size() < max_pipeline; ++i) {
      if (done[i]) continue;
      const lease_scope scope(nonces[i]);
      build(requests[i], es[i].data(), false, batch, s);
      s.owner.push_back(i);
    }
    if (s.owner.empty()) return;
    seal(s);
    const std::vector<std::size_t> owner = s.owner;  // the carry path below reuses the buffers
    // One outcome per call: in a cluster each node's pipeline succeeds or
    // fails on its own (one server: all of them together).
    const std::int64_t sent = remote::circuit_breaker::steady_ns();
    auto results = call_each(s.fcalls);
    for (std::size_t c = 0; c < owner.size(); ++c) {
      const std::size_t i = owner[c];
      const store_request& r = requests[i];
      std::span<decision> pc;
      if (denials && r.checks.size() > 1) pc = std::span(mine.data(), r.checks.size());
      store_decision d;
      outcome o = outcome::failure;
      const lease_scope scope(nonces[i]);  // the nonce its call sent
      if (c >= results.size()) {
        o = outcome::failure;
      } else if (const auto* err = std::get_if<redis::call_error>(&results[c])) {
        o = redis::outcome_of(*err);
      } else {
        auto& rep = std::get<redis::reply>(results[c]);
        o = take_instant(rep, sent, at_store.empty() ? d.at : at_store[i].now)
                ? judge(r, es[i].data(), rep, false, d, pc, stale)
                : outcome::failure;
      }
      // Skipped: a call after a stale one on the same server (the library
      // ran nothing); sent again, in order, next round. The calls of other
      // servers (a cluster) did run: they are decided here, not sent again.
      if (o == outcome::skipped) continue;
      // Built for another override than the one stored (nothing decided):
      // built again under it, next round, in order.
      const auto moved_again = [&] {
        if (o != outcome::moved) return false;
        if (!follow(r, es[i].data(), stale)) {
          o = outcome::corrupt;
          return false;
        }
        return ++moves[i] <= max_moves;
      };
      if (moved_again()) continue;
      for (int attempt = 0; o == outcome::stale && attempt < carry_attempts; ++attempt) {
        o = decide_carried(r, es[i].data(), stale, false, d, pc);
        if (o != outcome::conflict) break;
        carry_conflicts.fetch_add(1, std::memory_order_relaxed);
        o = outcome::mismatch;
        // Read again, alone.
        redis::scratch& again = tls_calls;
        clear(again);
        build(r, es[i].data(), false, 0, again);
        seal(again);
        const std::int64_t again_sent = remote::circuit_breaker::steady_ns();
        auto res2 = call_one(again.fcalls[0]);
        auto* rep = std::get_if<redis::reply>(&res2);
        o = rep != nullptr && take_instant(*rep, again_sent, at_store.empty() ? d.at : at_store[i].now)
                ? judge(r, es[i].data(), *rep, false, d, pc, stale)
                : outcome::failure;
      }
      if (moved_again()) continue;
      out[i] = conclude(r, es[i].data(), o, d, false, pc, {}, seen);
      done[i] = true;
    }
  }
  for (std::size_t i = 0; i < n; ++i)
    if (!done[i]) out[i] = conclude(requests[i], es[i].data(), outcome::failure, {}, false, {});
}

}  // namespace sluice
