// The memory store's request ids in a file of their own (docs/snapshot-format.md,
// "The request ids file"): every remembered id with its first decision and
// its receipts, so that a retry within its window after a restart is
// replayed and a refund still refunds once (docs/serve.md, "Request ids").
#include <algorithm>
#include <cstring>
#include <fstream>
#include <iterator>
#include <mutex>
#include <string>
#include <vector>

#include "codec.hpp"
#include "memory_store_impl.hpp"
#include "sluice/core/detail/receipt_fields.hpp"
#include "sluice/keyed/atomic_file.hpp"
#include "sluice/keyed/snapshot.hpp"

namespace sluice {
namespace {

constexpr char ids_magic[8] = {'S', 'L', 'U', 'I', 'C', 'E', 'I', 'D'};
constexpr char end_magic[8] = {'S', 'L', 'U', 'I', 'C', 'E', 'N', 'D'};
constexpr std::uint32_t ids_version = 1;
constexpr std::size_t trailer = 8 + 8 + 8 + 4;  // end magic, ids, file length, crc
constexpr std::size_t most_parts = 64;          // a receipt's parts, at any depth
constexpr int deepest = 16;

error ids_error(const std::string& path, const std::string& what) {
  return error{"snapshot", "'" + path + "' " + what};
}

void put_decision(codec::writer& w, const decision& d) {
  w.u8(d.allowed ? 1 : 0);
  w.i64(d.remaining);
  w.i64(d.retry_after);
  w.i64(d.reset_after);
  w.i64(d.release_after);
  w.u32(static_cast<std::uint32_t>(d.part));
}

decision get_decision(codec::reader& r) {
  decision d;
  d.allowed = r.u8() != 0;
  d.remaining = r.i64();
  d.retry_after = r.i64();
  d.reset_after = r.i64();
  d.release_after = r.i64();
  d.part = static_cast<std::int32_t>(r.u32());
  return d;
}

void put_receipt(codec::writer& w, const receipt& rc) {
  const detail::receipt_fields f = detail::fields_of(rc);
  w.u8(static_cast<std::uint8_t>(f.algo));
  w.i64(f.at);
  w.i64(f.cost);
  w.i64(f.key);
  w.i128v(f.before);
  w.i128v(f.after);
  w.i64(f.p1);
  w.i64(f.p2);
  w.i64(f.p3);
  w.u32(static_cast<std::uint32_t>(f.part));
  w.u32(static_cast<std::uint32_t>(rc.parts().size()));
  for (const receipt& p : rc.parts()) put_receipt(w, p);
}

/// A receipt as put_receipt wrote it; false when it is not one an admit
/// could have made (an unknown algorithm, a cost below 1, too many parts).
bool get_receipt(codec::reader& r, receipt& out, std::size_t& parts_left, int depth) {
  detail::receipt_fields f;
  const std::uint8_t algo = r.u8();
  if (algo > static_cast<std::uint8_t>(algorithm::any_of)) return false;
  f.algo = static_cast<algorithm>(algo);
  f.at = r.i64();
  f.cost = r.i64();
  f.key = r.i64();
  f.before = r.i128v();
  f.after = r.i128v();
  f.p1 = r.i64();
  f.p2 = r.i64();
  f.p3 = r.i64();
  f.part = static_cast<std::int32_t>(r.u32());
  const std::uint32_t n = r.u32();
  if (!r.ok() || f.cost < 1 || n > parts_left || depth > deepest) return false;
  parts_left -= n;
  std::vector<receipt> parts(n);
  for (receipt& p : parts)
    if (!get_receipt(r, p, parts_left, depth + 1)) return false;
  out = detail::receipt_of(f, std::move(parts));
  return true;
}

/// One id read back, before it is applied.
struct loaded_id {
  std::string id;
  id_entry e;
  std::vector<std::string> policies;  // per check, its policy's name
};

}  // namespace

result<std::size_t> memory_store::save_ids(const std::string& path) {
  impl& im = *impl_;
  std::string file;
  codec::writer w(file);
  file.append(ids_magic, 8);
  w.u32(ids_version);
  w.u32(0);  // flags
  w.i64(unix_clock::now());
  w.i64(now());
  w.i64(im.opt.idempotency_window);
  std::uint64_t count = 0;
  for (id_stripe& s : im.ids) {
    std::lock_guard lock(s.mu);
    for (const auto& [born, id] : s.order) {
      auto it = s.map.find(id);
      if (it == s.map.end() || it->second.born != born) continue;
      const id_entry& e = it->second;
      w.u32(static_cast<std::uint32_t>(id.size()));
      w.bytes(id);
      w.i64(e.born);
      w.i64(e.at);
      w.u32(static_cast<std::uint32_t>(e.identity.size()));
      w.bytes(e.identity);
      put_decision(w, e.d.d);
      w.u8(static_cast<std::uint8_t>(e.d.from));
      w.i64(e.d.at);
      w.u64(e.d.lease);
      w.u8(static_cast<std::uint8_t>((e.charged ? 1 : 0) | (e.refunded ? 2 : 0)));
      w.u32(static_cast<std::uint32_t>(e.per_check.size()));
      for (const decision& d : e.per_check) put_decision(w, d);
      w.u32(static_cast<std::uint32_t>(e.grows.size()));
      for (const auto& g : e.grows) {
        w.u8(g ? 1 : 0);
        w.i64(g.value_or(0));
      }
      w.u32(static_cast<std::uint32_t>(e.checks.size()));
      for (const auto& [policy, key] : e.checks) {
        const policy_entry* pe = im.entry_of(policy);
        const std::string_view name = pe != nullptr ? std::string_view(pe->name) : std::string_view();
        w.u32(static_cast<std::uint32_t>(name.size()));
        w.bytes(name);
        w.u32(static_cast<std::uint32_t>(key.size()));
        w.bytes(key);
      }
      w.u32(static_cast<std::uint32_t>(e.receipts.size()));
      for (const receipt& rc : e.receipts) put_receipt(w, rc);
      ++count;
    }
  }
  const std::uint64_t total = file.size() + trailer;
  file.append(end_magic, 8);
  w.u64(count);
  w.u64(total);
  w.u32(crc32c(file.data(), file.size()));
  auto written = write_file_atomically(
      path, [&](const byte_sink& sink) { return sink(file); }, atomic_write_options{.new_file_mode = 0600});
  if (!written) return error{"snapshot", written.err().message};
  return count;
}

result<std::size_t> memory_store::load_ids(const std::string& path) {
  impl& im = *impl_;
  std::ifstream in(path, std::ios::binary);
  if (!in) return ids_error(path, "cannot be read");
  const std::string file((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) return ids_error(path, "cannot be read");
  if (file.size() < 8 + 4 + 4 + 8 + 8 + 8 + trailer || std::memcmp(file.data(), ids_magic, 8) != 0)
    return ids_error(path, "is not a sluice request ids file");
  codec::reader head(std::string_view(file).substr(8));
  const std::uint32_t version = head.u32();
  if (version != ids_version)
    return ids_error(
        path, "is a request ids file of format version " + std::to_string(version) + "; this sluice reads version 1");
  const std::size_t tail = file.size() - trailer;
  if (std::memcmp(file.data() + tail, end_magic, 8) != 0) return ids_error(path, "is truncated (no end marker)");
  codec::reader tr(std::string_view(file).substr(tail + 8));
  const std::uint64_t count = tr.u64();
  const std::uint64_t length = tr.u64();
  const std::uint32_t crc = tr.u32();
  if (length != file.size()) return ids_error(path, "is truncated or corrupt (its length is not the one recorded)");
  if (crc32c(file.data(), file.size() - 4) != crc) return ids_error(path, "is corrupt (checksum mismatch)");
  codec::reader r(std::string_view(file).substr(0, tail));
  (void)r.bytes(8);
  (void)r.u32();
  if (r.u32() != 0) return ids_error(path, "is corrupt (unknown flags)");
  (void)r.i64();  // wall_ns
  (void)r.i64();  // taken_at: instants are the store clock's, read back as they were
  (void)r.i64();  // the window it was saved under; this store's applies
  // Everything is read and checked before anything is applied.
  std::vector<loaded_id> got;
  const auto corrupt = [&](const std::string& what) { return ids_error(path, "is corrupt (" + what + ")"); };
  while (r.left() > 0) {
    loaded_id l;
    l.id = std::string(r.bytes(r.u32()));
    id_entry& e = l.e;
    e.born = r.i64();
    e.at = r.i64();
    e.identity = std::string(r.bytes(r.u32()));
    e.d.d = get_decision(r);
    const std::uint8_t from = r.u8();
    if (from > static_cast<std::uint8_t>(source::rule)) return corrupt("a decision's source");
    e.d.from = static_cast<source>(from);
    e.d.at = r.i64();
    e.d.lease = r.u64();
    const std::uint8_t flags = r.u8();
    if (flags > 3) return corrupt("an id's flags");
    e.charged = (flags & 1) != 0;
    e.refunded = (flags & 2) != 0;
    const std::uint32_t per = r.u32();
    if (per > max_checks) return corrupt("an id's checks");
    for (std::uint32_t i = 0; i < per && r.ok(); ++i) e.per_check.push_back(get_decision(r));
    const std::uint32_t grows = r.u32();
    if (grows > max_checks) return corrupt("an id's checks");
    for (std::uint32_t i = 0; i < grows && r.ok(); ++i) {
      const bool has = r.u8() != 0;
      const std::int64_t v = r.i64();
      e.grows.push_back(has ? std::optional<tick>(v) : std::nullopt);
    }
    const std::uint32_t checks = r.u32();
    if (checks > max_checks || (e.charged && checks == 0)) return corrupt("an id's checks");
    for (std::uint32_t i = 0; i < checks && r.ok(); ++i) {
      l.policies.emplace_back(r.bytes(r.u32()));
      e.checks.emplace_back(0, std::string(r.bytes(r.u32())));
    }
    const std::uint32_t receipts = r.u32();
    // A receipt per check of an admit, none once refunded (used up).
    if (receipts != (e.charged && !e.refunded ? checks : 0)) return corrupt("an id's receipts");
    std::size_t parts_left = most_parts * max_checks;
    for (std::uint32_t i = 0; i < receipts && r.ok(); ++i) {
      receipt rc;
      if (!get_receipt(r, rc, parts_left, 0)) return corrupt("a receipt");
      e.receipts.push_back(std::move(rc));
    }
    if (!r.ok() || l.id.empty()) return corrupt("an id is cut short");
    got.push_back(std::move(l));
  }
  if (got.size() != count) return corrupt("the count of ids is not the one recorded");
  // Applied oldest first, so that each stripe's expiry order holds.
  std::stable_sort(got.begin(), got.end(), [](const loaded_id& a, const loaded_id& b) { return a.e.born < b.e.born; });
  const tick t = im.id_now(now());
  std::size_t applied = 0;
  for (loaded_id& l : got) {
    id_entry& e = l.e;
    if (im.opt.ids_on_clock && expired(e.born, t, im.opt.idempotency_window)) continue;
    // A check whose policy is no longer defined: its retry would be refused
    // all the same; the id is left out.
    bool known = true;
    std::size_t keys = 0;
    std::size_t nodes = 0;
    for (std::size_t i = 0; i < e.checks.size() && known; ++i) {
      const auto id = find(l.policies[i]);
      known = id.has_value();
      if (known) e.checks[i].first = *id;
      keys += e.checks[i].second.size();
    }
    if (!known) continue;
    const auto count_nodes = [&](const auto& self, const receipt& rc) -> std::size_t {
      std::size_t n = 1;
      for (const receipt& p : rc.parts()) n += self(self, p);
      return n;
    };
    for (const receipt& rc : e.receipts) nodes += count_nodes(count_nodes, rc);
    e.bytes = id_bytes(l.id.size(), e.identity.size(), std::max(e.checks.size(), e.per_check.size()), keys,
                       std::max<std::size_t>(nodes, e.checks.size()));
    id_stripe& s = im.stripe_of(l.id);
    std::lock_guard lock(s.mu);
    if (s.map.count(l.id) != 0 || !im.take_id_bytes(e.bytes)) continue;
    const tick born = e.born;
    s.map.emplace(l.id, std::move(e));
    s.order.emplace_back(born, std::move(l.id));
    ++applied;
  }
  return applied;
}

}  // namespace sluice
