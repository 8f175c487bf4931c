// A request id's record: written and read (id_record.hpp).
#include "redis/store/id_record.hpp"

#include <charconv>
#include <cstdint>

#include "redis/store/protocol.hpp"

namespace sluice::redis {

namespace {

/// A number ending at `end`, which is passed; false when malformed.
bool read_int(std::string_view rec, std::size_t& pos, std::int64_t& v, char end) {
  const auto [p, ec] = std::from_chars(rec.data() + pos, rec.data() + rec.size(), v);
  if (ec != std::errc{} || p == rec.data() + pos || p == rec.data() + rec.size() || *p != end) return false;
  pos = static_cast<std::size_t>(p - rec.data()) + 1;
  return true;
}

}  // namespace

void put_item(std::string& out, std::optional<std::string_view> v) {
  if (!v) {
    out.push_back('-');
    return;
  }
  out.append(std::to_string(v->size())).push_back(':');
  out.append(*v);
}

bool read_item(std::string_view rec, std::size_t& pos, std::optional<std::string_view>& v) {
  if (pos < rec.size() && rec[pos] == '-') {
    ++pos;
    v.reset();
    return true;
  }
  std::size_t len = 0;
  const auto [p, ec] = std::from_chars(rec.data() + pos, rec.data() + rec.size(), len);
  if (ec != std::errc{} || p == rec.data() + pos || p == rec.data() + rec.size() || *p != ':') return false;
  pos = static_cast<std::size_t>(p - rec.data()) + 1;
  if (len > rec.size() - pos) return false;
  v = rec.substr(pos, len);
  pos += len;
  return true;
}

std::optional<id_record> read_id_record(std::string_view rec) {
  id_record out;
  std::size_t pos = 0;
  std::int64_t h = 0;
  std::int64_t l = 0;
  if (!read_int(rec, pos, h, ' ') || !read_int(rec, pos, l, ' ') || pos >= rec.size() ||
      (rec[pos] != '0' && rec[pos] != '1') || h < -(std::int64_t{1} << 31) || h >= (std::int64_t{1} << 31) || l < 0 ||
      l >= (std::int64_t{1} << 32))
    return std::nullopt;
  out.admitted = rec[pos++] == '1';
  out.at = static_cast<tick>(static_cast<std::uint64_t>(h) << 32 | static_cast<std::uint64_t>(l));
  while (pos < rec.size()) {
    if (rec.size() - pos >= 2 && rec[pos] == '|' && rec[pos + 1] == 'V') {
      pos += 2;
      std::optional<std::string_view> o;
      // An override names the check whose leaves follow: one, then a leaf.
      if (!read_item(rec, pos, o) || !o || (!out.marks.empty() && out.marks.back().first == out.tags.size()))
        return std::nullopt;
      out.marks.emplace_back(out.tags.size(), *o);
      continue;
    }
    if (rec[pos++] != '|' || rec.size() - pos < tag_size) return std::nullopt;
    out.tags.push_back(rec.substr(pos, tag_size));
    pos += tag_size;
    std::optional<std::string_view> b;
    std::optional<std::string_view> a;
    if (!read_item(rec, pos, b) || !read_item(rec, pos, a)) return std::nullopt;
    out.before.push_back(b);
    out.after.push_back(a);
  }
  // Every request has a check, every check a leaf; an override, its leaves.
  if (out.tags.empty() || (!out.marks.empty() && out.marks.back().first == out.tags.size())) return std::nullopt;
  return out;
}

}  // namespace sluice::redis
