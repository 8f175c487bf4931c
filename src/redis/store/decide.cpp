// The Redis store's decisions (include/sluice/redis/store.hpp): requests to FCALLs
// of the Lua library and replies back to decisions with the core's code.
// Every request — a decision, a peek, a report — is opened, built, sent,
// judged, resolved and concluded by the one code below, whichever face sends
// it: synchronously (run), without waiting (run_async: the first call on the
// asynchronous client, anything more on the slow lane) or in pipelines
// (many).
//
// The hot path — one check of a plain policy, no request id — is built into
// a per-thread buffer (no allocation once warm), sent as `sluice_v2_one`,
// and its reply read and checked without building any container. Every
// other request goes through `sluice_v2_decide` and the general reading
// (decide_on). A reply of status 3 (a value of an earlier configuration) is
// decided in carry.cpp.
#include <algorithm>
#include <array>
#include <memory>

#include "redis/client/binary.hpp"
#include "redis/client/resp.hpp"
#include "redis/store/combine.hpp"
#include "redis/store/store_impl.hpp"
#include "sluice/core/concurrency.hpp"
#include "sluice/core/report.hpp"

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
    s.fcalls.push_back(
        redis::function_call{c.function, c.keys, std::span(s.views.data() + c.first, c.views), c.module, c.letters});
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
  const redis::library_function& f = report ? fns.report : single ? fns.one : (peek ? fns.peek : fns.decide);
  c.function = f.name;
  // The same call as the module's command, where a node's module decides
  // every leaf's algorithm (docs/redis.md, "The store and the module").
  c.module = f.module;
  for (std::size_t i = 0; i < r.checks.size(); ++i)
    for (const auto& lp : es[i]->p->leaves()) c.letters |= redis::letter_bit(lp.letter);
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

std::optional<store_decision> redis_store::impl::prepare(redis::request_job& j, const store_request& request,
                                                         redis::call_kind kind, std::span<decision> per_check,
                                                         std::span<std::optional<tick>> grows) {
  j.r = request;
  j.kind = kind;
  // entries_of refuses more than max_checks before it writes an entry.
  j.es.resize(std::min(request.checks.size(), max_checks));
  const auto own_per_check = [&] {
    j.mine.resize(j.r.checks.size());
    per_check = std::span(j.mine.data(), j.mine.size());
  };
  if (j.report()) {
    if (auto early = report_before_call(j.r, j.es.data(), per_check)) return early;
    // Every check's figures: a report reads them from the charged states.
    if (per_check.empty()) own_per_check();
    j.per_check = per_check;
    return std::nullopt;
  }
  if (j.peek()) grows = {};
  // At the store's clock: looked up at the estimate of it, sent as the
  // window split's reference, decided at the instant the reply returns.
  j.r.now = lookup_now(j.r.now);
  if (auto early = before_call(j.r, j.peek(), j.es.data(), per_check, grows)) return early;
  // Per-check decisions for the deny cache or `grows` when the caller wants none.
  if (!j.peek() && per_check.empty() && (!grows.empty() || (denials && j.r.checks.size() > 1))) own_per_check();
  j.per_check = per_check;
  j.grows = grows;
  j.nonce = nonce_for(j.r, j.es.data(), j.peek());
  return std::nullopt;
}

outcome redis_store::impl::answered(redis::request_job& j, redis::call_result& res, std::int64_t sent,
                                    store_decision& out) {
  auto* rep = std::get_if<redis::reply>(&res);
  if (rep == nullptr) return redis::outcome_of(std::get<redis::call_error>(res));
  if (!take_instant(*rep, sent, j.r.now)) return outcome::failure;
  if (j.report()) return judge_report(j.r, j.es.data(), *rep, out, j.per_check, j.stale);
  return judge(j.r, j.es.data(), *rep, j.peek(), out, j.per_check, j.stale, j.grows);
}

outcome redis_store::impl::send(redis::request_job& j, store_decision& out) {
  redis::scratch& s = tls_calls;
  clear(s);
  build(j.r, j.es.data(), j.peek(), 0, s, j.report());
  seal(s);
  const std::int64_t sent = remote::circuit_breaker::steady_ns();
  auto res = call_one(s.fcalls[0]);
  return answered(j, res, sent, out);
}

outcome redis_store::impl::resolve(redis::request_job& j, outcome o, store_decision& out) {
  for (int attempt = 0;;) {
    if (o == outcome::moved) {
      // Built for another override than the one stored: built again under
      // the stored one (nothing was decided or written).
      if (!follow(j.r, j.es.data(), j.stale)) return outcome::corrupt;
      if (++j.moves > max_moves) return outcome::moved;
      o = send(j, out);
      continue;
    }
    if (o == outcome::stale)
      o = decide_carried(j.r, j.es.data(), j.stale, j.peek(), out, j.per_check, j.grows, j.report());
    if (o != outcome::conflict) return o;  // a conflict: counted by compare_and_set
    // Still conflicting after the last attempt: an error, never an admit
    // (nor a half charge).
    if (++attempt == carry_attempts) return outcome::mismatch;
    o = send(j, out);  // read again
  }
}

store_decision redis_store::impl::finish(redis::request_job& j, outcome o, const store_decision& out) {
  if (j.report()) return report_concluded(j.r, o, out, j.per_check);
  return conclude(j.r, j.es.data(), o, out, j.peek(), j.per_check, j.grows, j.seen);
}

store_decision redis_store::impl::run(const store_request& request, redis::call_kind kind,
                                      std::span<decision> per_check, std::span<std::optional<tick>> grows) {
  redis::request_job j;
  if (auto early = prepare(j, request, kind, per_check, grows)) return *early;
  j.seen = cache_generation();       // before the call (conclude)
  const lease_scope scope(j.nonce);  // sent, and decided with
  store_decision out;
  const outcome o = resolve(j, send(j, out), out);
  return finish(j, o, out);
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

/// One asynchronous request between its call and its answer.
struct async_job {
  redis::request_job j;
  store::decided done;
  redis::scratch s;  // the call's bytes: the client reads them until it answers
  std::int64_t t0 = 0;
};

}  // namespace

void redis_store::impl::run_async(const store_request& request, redis::call_kind kind, std::span<decision> per_check,
                                  std::span<std::optional<tick>> grows, store::decided done) {
  auto a = std::make_shared<async_job>();
  if (auto early = prepare(a->j, request, kind, per_check, grows)) return done(*early);
  a->done = std::move(done);
  enter();
  // The call's bytes in one allocation, not one per doubling (a key and a
  // few numbers per check; a larger request grows it as it needs).
  a->s.bytes.reserve(256 * a->j.r.checks.size());
  {
    const lease_scope scope(a->j.nonce);
    build(a->j.r, a->j.es.data(), a->j.peek(), 0, a->s, a->j.report());
  }
  seal(a->s);
  a->j.seen = cache_generation();
  a->t0 = remote::circuit_breaker::steady_ns();
  backend_here().async_fcall_each(std::span(a->s.fcalls.data(), 1), [this, a](std::vector<redis::call_result> v) {
    redis::call_result& res = v[0];
    if (auto* rep = std::get_if<redis::reply>(&res); rep != nullptr && rep->is_error())
      res = redis::server_error(std::move(rep->str));  // as the synchronous face's fcall
    figures.observe(remote::circuit_breaker::steady_ns() - a->t0);
    figures.note(res);
    store_decision out;
    outcome o = outcome::failure;
    {
      const lease_scope scope(a->j.nonce);  // the nonce the call sent
      o = answered(a->j, res, a->t0, out);
    }
    if (o == outcome::moved) {
      // Built for another override than the one stored: the belief
      // follows it, and the slow lane runs it afresh, built under the
      // stored override.
      (void)follow(a->j.r, a->j.es.data(), a->j.stale);
      o = outcome::stale;
    }
    if (o == outcome::stale) {
      // A value of an earlier configuration: carried over with a
      // compare-and-set (more calls). The stale reply wrote nothing, so
      // the slow lane runs the request afresh, synchronously.
      slow.post([this, a] {
        a->done(run(a->j.r, a->j.kind, a->j.per_check, a->j.grows));
        leave();
      });
      return;
    }
    a->done(finish(a->j, o, out));
    leave();
  });
}

void redis_store::impl::many(std::span<const store_request> requests, std::span<store_decision> out) {
  const std::size_t n = requests.size();
  std::vector<redis::request_job> jobs(n);
  std::vector<bool> done(n, false);
  for (std::size_t i = 0; i < n; ++i) {
    if (auto early = prepare(jobs[i], requests[i], redis::call_kind::decide, {}, {})) {
      out[i] = *early;
      done[i] = true;
    }
  }
  const auto seen = cache_generation();  // before the first call: the whole batch's (conclude)
  for (auto& j : jobs) j.seen = seen;
  // Each round sends the requests not yet decided, in order, at most
  // max_pipeline of them (the deny cache answers most of a batch of mostly
  // denied traffic without a call, so a batch may hold many times that
  // many requests); a round stops at a request whose states must be
  // carried over (the calls after it are skipped by the library), which is
  // decided on its own before the next. A request keeps its nonce across
  // rounds (a skipped call is sent again with the same one).
  for (std::size_t round = 0; round <= (n + 8) * (max_moves + 1); ++round) {
    redis::scratch& s = tls_calls;
    clear(s);
    const std::int64_t batch = next_batch();
    for (std::size_t i = 0; i < n && s.owner.size() < max_pipeline; ++i) {
      if (done[i]) continue;
      const lease_scope scope(jobs[i].nonce);
      build(jobs[i].r, jobs[i].es.data(), false, batch, s);
      s.owner.push_back(i);
    }
    if (s.owner.empty()) return;
    seal(s);
    const std::vector<std::size_t> owner = s.owner;  // resolve's calls reuse the buffers
    // One outcome per call: in a cluster each node's pipeline succeeds or
    // fails on its own (one server: all of them together).
    const std::int64_t sent = remote::circuit_breaker::steady_ns();
    auto results = call_each(s.fcalls);
    for (std::size_t c = 0; c < owner.size(); ++c) {
      const std::size_t i = owner[c];
      redis::request_job& j = jobs[i];
      store_decision d;
      const lease_scope scope(j.nonce);  // the nonce its call sent
      outcome o = c < results.size() ? answered(j, results[c], sent, d) : outcome::failure;
      // Skipped: a call after a stale one on the same server (the library
      // ran nothing); sent again, in order, next round. The calls of other
      // servers (a cluster) did run: they are decided here, not sent again.
      if (o == outcome::skipped) continue;
      o = resolve(j, o, d);
      out[i] = finish(j, o, d);
      done[i] = true;
    }
  }
  for (std::size_t i = 0; i < n; ++i)
    if (!done[i]) out[i] = finish(jobs[i], outcome::failure, {});
}

}  // namespace sluice
