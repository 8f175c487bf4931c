// The module's commands as the Lua library's entry points (engine.hpp): the
// same arguments, the same checks in the same order, the same replies and
// writes. Each leaf is decided by the core (leaves.cpp); this file is the
// protocol around it: the instant, the batch that stopped, override keys,
// the request tree in prefix form, request ids' records, TTLs; and the
// library's writes of what the client computed (refunds, carried states:
// compare-and-set) and its lease release (the core's `release`).
#include "redis_module/engine.hpp"

#include <cstdio>
#include <utility>

#include "redis/client/binary.hpp"
#include "redis/store/value_codec.hpp"
#include "redis_module/leaves.hpp"
#include "sluice/core/concurrency.hpp"
#include "sluice/core/detail/arith.hpp"
#include "sluice/core/lease.hpp"

namespace sluice::redis_module {
namespace {

using detail::i128;

constexpr std::int64_t p31 = std::int64_t{1} << 31;
constexpr std::int64_t p32 = std::int64_t{1} << 32;
constexpr std::int64_t p50 = std::int64_t{1} << 50;
constexpr std::int64_t p52 = std::int64_t{1} << 52;

std::int64_t halted = 0;  // the batch whose pipeline stopped at a status 3 or 6

/// An error reply that ends the call (nothing written).
struct stop {
  reply why;
};

reply bad(std::string_view why) { return reply::error("sluice: bad request (" + std::string(why) + ")"); }

/// The request's numbers, read in order from the binary argument.
class cursor {
 public:
  explicit cursor(std::string_view b) : b_(b) {}
  std::int64_t number(const char* what) {
    std::int64_t v = 0;
    if (b_.size() - pos_ < 8 || b_.size() < pos_) throw stop{bad(std::string("the argument ends before ") + what)};
    if (!redis::get_number(b_.data() + pos_, v)) throw stop{bad(std::string(what) + " is not an integer below 2^53")};
    pos_ += 8;
    return v;
  }
  std::string_view bytes(std::size_t n, const char* what) {
    if (b_.size() - pos_ < n) throw stop{bad(std::string("the argument ends before ") + what)};
    const std::string_view out = b_.substr(pos_, n);
    pos_ += n;
    return out;
  }
  [[nodiscard]] bool done() const { return pos_ >= b_.size(); }
  [[nodiscard]] char peek_byte() const {
    if (done()) throw stop{bad("the argument ends inside the request tree")};
    return b_[pos_];
  }
  void skip(std::size_t n) {
    if (b_.size() - pos_ < n) throw stop{bad("the argument ends inside a leaf")};
    pos_ += n;
  }

 private:
  std::string_view b_;
  std::size_t pos_ = 0;
};

/// What every call's argument starts with: th tl tns base batch.
struct header {
  std::int64_t th = 0, tl = 0, tns = 0, base = 0, batch = 0;
};

header header_of(cursor& c) {
  header h;
  h.th = c.number("th");
  h.tl = c.number("tl");
  h.tns = c.number("tns");
  h.base = c.number("base");
  h.batch = c.number("batch");
  return h;
}

/// The instant of a call (common.lua, `instant`): th tl as sent, or the
/// store's clock when th is sent with 2^32 added.
struct instant {
  tick now = 0;
  std::int64_t shift = 0;       // the store's clock minus the estimate, in ticks
  std::optional<tick> stamp{};  // the instant used, when it is the store's
};

instant instant_of(std::int64_t th, std::int64_t tl, std::int64_t tns, keyspace& ks) {
  instant out;
  const bool store = th >= p31;
  if (store) th -= p32;
  if (th < -p31 || th >= p31 || tl < 0 || tl >= p32) throw stop{bad("the instant's limbs")};
  const tick sent = static_cast<tick>(static_cast<std::uint64_t>(th) << 32 | static_cast<std::uint64_t>(tl));
  if (!store) {
    out.now = sent;
    return out;
  }
  if (!(tns >= 1 && tns <= 1000 && 1000 % tns == 0))
    throw stop{reply::error("sluice: bad request (the store clock needs a tick dividing 1000 ns)")};
  const i128 t = static_cast<i128>(ks.now_us()) * (1000 / tns);
  const i128 d = t - sent;
  if (d < -p52 || d > p52 || t > detail::i64_max)
    throw stop{reply::error("sluice: clock offset (the estimate is more than 2^52 ticks from the store clock)")};
  out.now = static_cast<tick>(t);
  out.shift = static_cast<std::int64_t>(d);
  out.stamp = out.now;
  return out;
}

/// `out` with the instant used appended, when the call used the store's clock.
reply stamped(reply out, const instant& at) {
  if (at.stamp) {
    out.items.push_back(reply::of(*at.stamp >> 32));
    out.items.push_back(reply::of(static_cast<std::int64_t>(static_cast<std::uint64_t>(*at.stamp) & 0xFFFFFFFFULL)));
  }
  return out;
}

std::optional<std::string> get(keyspace& ks, std::size_t i, std::size_t keys) {
  if (i >= keys) throw stop{bad("fewer keys than the request's checks")};
  std::optional<std::string> v;
  if (!ks.get(i, v)) throw stop{reply::error("sluice: corrupt state (not a string key)")};
  return v;
}

/// The expiry of a written state (main.lua, `put`): floor(ttl·tns / 10^6) +
/// base ms, at most 2^50; base alone with tns 0; never for ttl < 0. Exact in
/// integers (the library's doubles round above 2^53, a TTL of 104 days).
std::int64_t expiry_ms(std::int64_t ttl, std::int64_t tns, std::int64_t base) {
  if (ttl < 0) return 0;
  i128 px = base;
  if (tns > 0) {
    px = static_cast<i128>(ttl) * tns / 1000000 + base;
    if (px > p50) px = p50;
  }
  return px > 0 ? static_cast<std::int64_t>(px) : 0;
}

std::string text(std::int64_t v) { return std::to_string(v); }

/// A request id's record item: '-' for none, else the length, ':' and the bytes.
std::string item(const std::optional<std::string>& x) {
  return x ? text(static_cast<std::int64_t>(x->size())) + ":" + *x : "-";
}
std::string item(std::string_view x) { return text(static_cast<std::int64_t>(x.size())) + ":" + std::string(x); }

reply one(keyspace& ks, std::size_t keys, std::span<const std::string_view> args) {
  if (keys < 1 || keys > 2) throw stop{bad("SLUICE.ONE takes one state key and an optional override key")};
  if (args.size() != (keys == 2 ? 2u : 1u))
    throw stop{bad("SLUICE.ONE takes the request, and with an override key what it must hold")};
  cursor c(args[0]);
  const header h = header_of(c);
  const std::int64_t tns = h.tns, base = h.base, batch = h.batch;
  const std::string_view tag = c.bytes(leaf_tag_size, "the leaf's tag");
  const instant at = instant_of(h.th, h.tl, tns, ks);
  if (batch != 0 && batch == halted) return stamped(reply::array({reply::of(4)}), at);
  if (keys == 2) {
    const auto o = get(ks, 1, keys);
    const std::string_view want = args[1];
    if ((o && want != "=" + *o) || (!o && want != "-")) {
      halted = batch;
      return stamped(reply::array({reply::of(6), reply::of(1), reply::maybe(o)}), at);
    }
  }
  auto v = get(ks, 0, keys);
  if (v && std::string_view(*v).substr(0, leaf_tag_size) != tag) {
    halted = batch;
    return stamped(reply::list(reply::of(3), reply::maybe(std::move(v))), at);
  }
  const std::string_view leaf_args = c.bytes(leaf_arg_bytes(tag[0]), "the leaf's arguments");
  leaf_step s = step_leaf(tag, leaf_args, v, at.now, at.shift);
  if (s.error) throw stop{std::move(*s.error)};
  if (!s.ok) return stamped(reply::list(reply::of(0), reply::maybe(std::move(v))), at);
  // A concurrency leaf's report (mode 2) fits and writes nothing: the
  // library's _one fails on it (SET of nothing), as this does.
  if (!s.after) throw stop{bad("a report that writes nothing: reports go through SLUICE.REPORT")};
  ks.put(0, *s.after, expiry_ms(s.ttl, tns, base));
  return stamped(reply::list(reply::of(1), reply::maybe(std::move(v)), reply::maybe(std::move(s.after))), at);
}

/// One leaf met in the tree: its key, its value before, the value it would
/// write (nullopt: none), the TTL in ticks, its tag.
struct found_leaf {
  std::size_t key = 0;
  std::optional<std::string> before;
  std::optional<std::string> after;
  std::int64_t ttl = 0;
  std::string tag;
  bool written = false;
};

/// The request tree of SLUICE.DECIDE / PEEK / REPORT (main.lua, `run`).
class tree_run {
 public:
  tree_run(keyspace& ks, std::size_t keys, cursor& c, const instant& at, bool report)
      : ks_(ks), keys_(keys), c_(c), at_(at), report_(report) {}

  std::size_t next_key = 0;
  std::vector<found_leaf> found;
  std::vector<std::optional<std::string>> marks;  // per leaf: the override bytes its check was decided under
  std::optional<reply> moved;                     // the first 'V' whose key held something else
  bool stale = false;
  std::int64_t nv = 0;

  /// Decides the subtree at the cursor: whether it admits (a report: fits),
  /// and the leaves it would write, by index into `found`.
  std::pair<bool, std::vector<std::size_t>> node(int depth) {
    if (depth > 1000) throw stop{bad("the request tree is nested too deep")};
    const char t = c_.peek_byte();
    if (t == 'V') {
      c_.skip(1);
      const std::int64_t len = c_.number("an override's length");
      const std::size_t key = next_key++;
      ++nv;
      const auto o = get(ks_, key, keys_);
      std::optional<std::string> want;
      if (len >= 0) want = std::string(c_.bytes(static_cast<std::size_t>(len), "an override's bytes"));
      if (o != want && !moved) moved = reply::array({reply::of(6), reply::of(nv), reply::maybe(o)});
      if (want) {
        if (marks.size() < found.size() + 1) marks.resize(found.size() + 1);
        marks[found.size()] = want;
      }
      return node(depth + 1);
    }
    if (t == 'A' || t == 'O') {
      c_.skip(1);
      const std::int64_t n = c_.number("a composite's count");
      if (n < 0) throw stop{bad("a composite's count is negative")};
      bool ok = t == 'A';
      std::vector<std::size_t> commit;
      std::optional<std::vector<std::size_t>> first;
      for (std::int64_t k = 0; k < n; ++k) {
        auto [cok, cc] = node(depth + 1);
        if (t == 'A') {
          if (cok || report_) commit.insert(commit.end(), cc.begin(), cc.end());
          if (!cok) ok = false;
        } else if (cok && !ok) {
          ok = true;
          commit = cc;
        }
        if (!first) first = std::move(cc);
      }
      if (report_) {
        if (t == 'O' && !ok) commit = first ? std::move(*first) : std::vector<std::size_t>{};
        return {ok, std::move(commit)};
      }
      if (!ok) commit.clear();
      return {ok, std::move(commit)};
    }
    if (t == 'Y' || t == 'N') {
      c_.skip(1);
      return {t == 'Y', {}};
    }
    if (!is_leaf_letter(t)) throw stop{reply::error("sluice: bad request")};
    const std::string_view tag = c_.bytes(leaf_tag_size, "a leaf's tag");
    const std::size_t key = next_key++;
    found_leaf rec;
    rec.key = key;
    rec.before = get(ks_, key, keys_);
    rec.tag = std::string(tag);
    found.push_back(rec);
    const std::size_t me = found.size() - 1;
    if (found[me].before && std::string_view(*found[me].before).substr(0, leaf_tag_size) != tag) {
      stale = true;
      c_.skip(leaf_arg_bytes(t));
      return {false, {}};
    }
    const std::string_view leaf_args = c_.bytes(leaf_arg_bytes(t), "a leaf's arguments");
    leaf_step s = step_leaf(tag, leaf_args, found[me].before, at_.now, at_.shift);
    if (s.error) throw stop{std::move(*s.error)};
    found[me].after = std::move(s.after);
    found[me].ttl = s.ttl;
    if (s.ok || (report_ && found[me].after)) return {s.ok, {me}};
    return {false, {}};
  }

 private:
  keyspace& ks_;
  std::size_t keys_;
  cursor& c_;
  const instant& at_;
  bool report_;
};

/// The id's record at key 0 for a request of `identity`: nullopt when none,
/// the record after its identity when the identities are equal, and
/// `conflict` when the id was first used for another request.
std::optional<std::string> recorded(keyspace& ks, std::size_t keys, std::string_view identity, bool& conflict) {
  conflict = false;
  const auto rec = get(ks, 0, keys);
  if (!rec) return std::nullopt;
  const std::string head = item(identity);
  if (std::string_view(*rec).substr(0, head.size()) != head) {
    conflict = true;
    return std::nullopt;
  }
  return rec->substr(head.size());
}

reply run_tree(keyspace& ks, std::size_t keys, std::span<const std::string_view> args, bool peek, bool report) {
  if (args.empty()) throw stop{bad("the request argument is missing")};
  cursor c(args[0]);
  const header h = header_of(c);
  const std::int64_t tns = h.tns, base = h.base, batch = h.batch;
  const std::int64_t has_id = c.number("has_id");
  const std::int64_t id_ttl = c.number("id_ttl_ms");
  if (has_id == 1 && (args.size() < 2 || id_ttl < 1))
    throw stop{bad("a request id needs its identity and a TTL of 1 ms or more")};
  const instant at = instant_of(h.th, h.tl, tns, ks);
  if (batch != 0 && batch == halted) return stamped(reply::array({reply::of(4)}), at);
  tree_run tr(ks, keys, c, at, report);
  if (has_id == 1) {
    bool conflict = false;
    const auto rec = recorded(ks, keys, args[1], conflict);
    if (conflict) return stamped(reply::array({reply::of(5)}), at);
    if (rec) return stamped(reply::array({reply::of(2), reply::bulk(*rec)}), at);
    tr.next_key = 1;
  }
  auto [ok, commit] = tr.node(0);
  if (tr.moved) {
    halted = batch;
    return stamped(std::move(*tr.moved), at);
  }
  if (tr.stale) {
    halted = batch;
    reply out = reply::array({reply::of(3)});
    for (const auto& f : tr.found) out.items.push_back(reply::maybe(f.before));
    return stamped(std::move(out), at);
  }
  if (report) ok = true;  // never denied
  if (ok)
    for (std::size_t i : commit) tr.found[i].written = true;
  reply out = reply::array({reply::of(ok ? 1 : 0)});
  for (auto& f : tr.found) {
    if (!f.written) f.after.reset();  // only the committed leaves are written
    out.items.push_back(reply::maybe(f.before));
    out.items.push_back(reply::maybe(f.after));
  }
  if (ok && !peek)
    for (std::size_t i : commit) {
      const found_leaf& f = tr.found[i];
      if (f.after) ks.put(f.key, *f.after, expiry_ms(f.ttl, tns, base));
    }
  if (has_id == 1 && !peek) {
    std::string rec = item(args[1]);
    char head[64];
    std::snprintf(head, sizeof head, "%lld %lld %d", static_cast<long long>(at.now >> 32),
                  static_cast<long long>(static_cast<std::uint64_t>(at.now) & 0xFFFFFFFFULL), ok ? 1 : 0);
    rec += head;
    for (std::size_t i = 0; i < tr.found.size(); ++i) {
      const found_leaf& f = tr.found[i];
      if (i < tr.marks.size() && tr.marks[i]) rec += "|V" + item(tr.marks[i]);
      rec += "|" + f.tag + item(f.before) + item(f.after);
    }
    ks.put(0, rec, id_ttl);
  }
  return stamped(std::move(out), at);
}

/// A state key's expected value ('-': none, '=' and the bytes) against
/// what it holds (refund.lua, main.lua's `_cas`).
bool holds(const std::optional<std::string>& v, std::string_view want) {
  if (v) return want.size() == v->size() + 1 && want[0] == '=' && want.substr(1) == *v;
  return want == "-";
}

/// A PX argument of `_cas` / `_refund`: '0' for no expiry, else a positive
/// integer of ms (SET … PX refuses anything else).
std::int64_t px_of(std::string_view px) {
  std::int64_t v = 0;
  if (px.empty() || px.size() > 15) throw stop{bad("an expiry is not a number of ms")};
  for (const char ch : px) {
    if (ch < '0' || ch > '9') throw stop{bad("an expiry is not a number of ms")};
    v = v * 10 + (ch - '0');
  }
  return v;
}

/// The compare-and-set of `_cas` and `_refund` over state keys `first`..:
/// per key its expected value, its new value ('' no write, '-' delete) and
/// PX, from args[a] on; then an optional channel and message. False when a
/// key holds another value than expected (nothing written). Every argument
/// is checked before anything is written.
bool compare_and_set(keyspace& ks, std::size_t keys, std::size_t first, std::span<const std::string_view> args,
                     std::size_t a) {
  const std::size_t n = keys - first;
  if (args.size() < a + 3 * n || (args.size() != a + 3 * n && args.size() != a + 3 * n + 2))
    throw stop{
        bad("each state key takes its expected value, its new value and its expiry, then an optional "
            "channel and message")};
  std::vector<std::int64_t> px(n);
  for (std::size_t k = 0; k < n; ++k) px[k] = px_of(args[a + 3 * k + 2]);
  for (std::size_t k = 0; k < n; ++k)
    if (!holds(get(ks, first + k, keys), args[a + 3 * k])) return false;
  for (std::size_t k = 0; k < n; ++k) {
    const std::string_view nv = args[a + 3 * k + 1];
    if (nv == "-") {
      ks.del(first + k);
    } else if (!nv.empty()) {
      ks.put(first + k, nv, px[k]);
    }
  }
  if (args.size() == a + 3 * n + 2) ks.publish(args[a + 3 * n], args[a + 3 * n + 1]);  // the deny caches' invalidation
  return true;
}

/// `_cas` (main.lua): has_id id_ttl_ms record identity, then per state key
/// expected new px; [channel message].
reply cas_call(keyspace& ks, std::size_t keys, std::span<const std::string_view> args) {
  if (args.size() < 4) throw stop{bad("SLUICE.CAS takes has_id, id_ttl_ms, the record and the identity first")};
  const bool has_id = args[0] == "1";
  std::size_t first = 0;
  std::int64_t id_ttl = 0;
  if (has_id) {
    id_ttl = px_of(args[1]);
    if (id_ttl < 1 || keys < 1) throw stop{bad("a request id needs its key and a TTL of 1 ms or more")};
    bool conflict = false;
    const auto rec = recorded(ks, keys, args[3], conflict);
    if (conflict) return reply::array({reply::of(5)});
    if (rec) return reply::array({reply::of(2), reply::bulk(*rec)});
    first = 1;
  }
  if (!compare_and_set(ks, keys, first, args, 4)) return reply::array({reply::of(0)});
  if (has_id) ks.put(0, item(args[3]) + std::string(args[2]), id_ttl);
  return reply::array({reply::of(1)});
}

/// `_refund` (refund.lua): id-key mark-key state-keys... record, then per
/// state key expected new px; [channel message].
reply refund_call(keyspace& ks, std::size_t keys, std::span<const std::string_view> args) {
  if (keys < 2 || args.empty()) throw stop{bad("SLUICE.REFUND takes the id's key, its mark's key and the record")};
  if (get(ks, 1, keys)) return reply::array({reply::of(6)});
  const auto rec = get(ks, 0, keys);
  if (!rec || *rec != args[0]) return reply::array({reply::of(0)});
  if (!compare_and_set(ks, keys, 2, args, 1)) return reply::array({reply::of(0)});
  const std::int64_t ttl = ks.pttl(0);
  ks.put(1, "1", ttl > 0 ? ttl : 0);  // the mark expires with the record
  return reply::array({reply::of(1)});
}

/// `_refund_read` (refund.lua): the values at the keys, then with tns the
/// store's clock in ticks of tns ns, as limbs.
reply refund_read_call(keyspace& ks, std::size_t keys, std::span<const std::string_view> args) {
  if (args.size() > 1) throw stop{bad("SLUICE.REFUND_READ takes at most the store clock's tick")};
  reply out = reply::array({});
  for (std::size_t i = 0; i < keys; ++i) out.items.push_back(reply::maybe(get(ks, i, keys)));
  if (!args.empty()) {
    std::int64_t tns = 0;
    const std::string_view t = args[0];
    bool digits = !t.empty() && t.size() <= 4;
    for (const char ch : t) digits = digits && ch >= '0' && ch <= '9';
    if (digits)
      for (const char ch : t) tns = tns * 10 + (ch - '0');
    if (!digits || !(tns >= 1 && tns <= 1000 && 1000 % tns == 0))
      throw stop{reply::error("sluice: bad request (the store clock needs a tick dividing 1000 ns)")};
    const i128 now = static_cast<i128>(ks.now_us()) * (1000 / tns);
    out.items.push_back(reply::of(static_cast<std::int64_t>(now >> 32)));
    out.items.push_back(reply::of(static_cast<std::int64_t>(now & 0xFFFFFFFF)));
  }
  return out;
}

/// `_release` (release.lua): th tl tns nh nl, then per key its leaf's tag;
/// in each concurrency leaf the lease of the nonce, held at the call's
/// instant, is released by the core (`release`, lease.hpp), its key keeping
/// its expiry.
reply release_call(keyspace& ks, std::size_t keys, std::span<const std::string_view> args) {
  if (args.size() != 1) throw stop{bad("SLUICE.RELEASE takes the request argument alone")};
  cursor c(args[0]);
  const std::int64_t th = c.number("th"), tl = c.number("tl"), tns = c.number("tns");
  const std::int64_t nh = c.number("the nonce's high half"), nl = c.number("the nonce's low half");
  const instant at = instant_of(th, tl, tns, ks);
  std::vector<std::optional<std::string>> before(keys);
  std::vector<std::string_view> tags(keys);
  for (std::size_t i = 0; i < keys; ++i) {
    tags[i] = c.bytes(leaf_tag_size, "a key's tag");
    before[i] = get(ks, i, keys);
    if (before[i] && std::string_view(*before[i]).substr(0, leaf_tag_size) != tags[i]) {
      reply out = reply::array({reply::of(3)});
      for (std::size_t j = 0; j < keys; ++j) out.items.push_back(reply::maybe(get(ks, j, keys)));
      return stamped(std::move(out), at);
    }
  }
  const bool nonce_ok = nh >= 0 && nh < p32 && nl >= 0 && nl < p32;  // else no lease holds it
  const std::uint64_t nonce = static_cast<std::uint64_t>(nh) << 32 | static_cast<std::uint64_t>(nl);
  const any_policy any_lease{concurrency::make(1, 1).value()};  // a lease's value is read alike for any N and D
  std::vector<std::optional<std::string>> after(keys);
  for (std::size_t i = 0; i < keys; ++i) {
    if (!before[i] || tags[i][0] != portable::of<concurrency>::letter) continue;
    redis::leaf_plan lp;
    lp.policy = &any_lease;
    lp.letter = tags[i][0];
    std::copy(tags[i].begin(), tags[i].end(), lp.tag);
    tick latest = detail::i64_min;
    auto st = redis::decode_value(lp, std::string_view(*before[i]), latest);
    if (!st) throw stop{reply::error("sluice: corrupt state (concurrency: " + st.err().message + ")")};
    if (!nonce_ok || sluice::release(any_lease, st.value(), at.now, nonce) == 0) continue;
    std::string v;
    if (!redis::encode_value(lp, st.value(), at.now, v))
      throw stop{bad("the state after this release is outside what the library holds")};
    after[i] = std::move(v);
  }
  reply out = reply::array({reply::of(1)});
  for (std::size_t i = 0; i < keys; ++i) {
    if (after[i]) ks.put_keep_ttl(i, *after[i]);
    out.items.push_back(reply::maybe(before[i]));
    out.items.push_back(reply::maybe(after[i]));
  }
  return stamped(std::move(out), at);
}

}  // namespace

reply info() {
  reply commands = reply::array({});
  for (const entry e : entries) {
    std::string name(command_name(e));
    for (char& ch : name) ch = static_cast<char>(ch >= 'A' && ch <= 'Z' ? ch + 32 : ch);
    commands.items.push_back(reply::bulk(name));
  }
  commands.items.push_back(reply::bulk("cl.throttle"));
  commands.items.push_back(reply::bulk("sluice.info"));
  return reply::list(reply::bulk("version"), reply::of(module_version), reply::bulk("protocol"),
                     reply::bulk("sluice_v2"), reply::bulk("letters"), reply::bulk(decided_letters()),
                     reply::bulk("commands"), std::move(commands));
}

std::string_view command_name(entry e) {
  switch (e) {
    case entry::one:
      return "SLUICE.ONE";
    case entry::decide:
      return "SLUICE.DECIDE";
    case entry::peek:
      return "SLUICE.PEEK";
    case entry::report:
      return "SLUICE.REPORT";
    case entry::release:
      return "SLUICE.RELEASE";
    case entry::refund:
      return "SLUICE.REFUND";
    case entry::refund_read:
      return "SLUICE.REFUND_READ";
    case entry::cas:
      return "SLUICE.CAS";
  }
  return "SLUICE.?";
}

reply run(entry e, keyspace& ks, std::size_t keys, std::span<const std::string_view> args) {
  try {
    switch (e) {
      case entry::one:
        return one(ks, keys, args);
      case entry::decide:
        return run_tree(ks, keys, args, false, false);
      case entry::peek:
        return run_tree(ks, keys, args, true, false);
      case entry::report:
        return run_tree(ks, keys, args, false, true);
      case entry::release:
        return release_call(ks, keys, args);
      case entry::refund:
        return refund_call(ks, keys, args);
      case entry::refund_read:
        return refund_read_call(ks, keys, args);
      case entry::cas:
        return cas_call(ks, keys, args);
    }
    return bad("unknown entry");
  } catch (stop& s) {
    return std::move(s.why);
  } catch (const std::exception& x) {  // std::bad_alloc: an error reply, never a crash of the server
    return reply::error(std::string("sluice: ") + x.what());
  }
}

void reset_halted() noexcept { halted = 0; }

}  // namespace sluice::redis_module
