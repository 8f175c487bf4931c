// Fuzz target: the Redis module's commands (src/redis_module/engine.hpp,
// throttle.hpp) never crash on any arguments or stored values — a module
// fault would kill redis-server — and a call that answers an error writes
// nothing. The input: one byte choosing the command (modulo 10: SLUICE.ONE,
// DECIDE, PEEK, REPORT, CL.THROTTLE, RELEASE, REFUND, REFUND_READ, CAS,
// INFO), one byte the number of keys (0-3), then
// segments, each a 2-byte little-endian length and its bytes: first each
// key's stored value (length 0xffff: no value; a value starting with 0xfe:
// a key of another type), then the arguments.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "redis_module/engine.hpp"
#include "redis_module/throttle.hpp"

namespace {

using sluice::redis_module::reply;

class memory_keys final : public sluice::redis_module::keyspace {
 public:
  std::vector<std::optional<std::string>> values;
  std::vector<bool> other_type;
  std::size_t writes = 0;

  bool get(std::size_t i, std::optional<std::string>& value) override {
    if (i >= values.size()) std::abort();  // the engine reads only the keys it was given
    if (other_type[i]) return false;
    value = values[i];
    return true;
  }
  void put(std::size_t i, std::string_view value, std::int64_t px) override {
    if (i >= values.size() || other_type[i] || px < 0) std::abort();
    values[i] = std::string(value);
    ++writes;
  }
  std::int64_t now_us() override { return 1'765'000'000'000'000; }
  void del(std::size_t i) override {
    if (i >= values.size() || other_type[i]) std::abort();
    values[i].reset();
    ++writes;
  }
  void put_keep_ttl(std::size_t i, std::string_view value) override { put(i, value, 0); }
  std::int64_t pttl(std::size_t i) override {
    if (i >= values.size()) std::abort();
    return values[i] ? 60'000 : -2;
  }
  void publish(std::string_view, std::string_view) override { ++writes; }
};

void check(const reply& r, int depth = 0) {
  if (depth > 4) std::abort();  // replies are shallow
  if (r.k == reply::kind::error) {
    if (r.text.empty() || r.text.find('\n') != std::string::npos || r.text.find('\r') != std::string::npos)
      std::abort();
  }
  for (const reply& item : r.items) check(item, depth + 1);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 2) return 0;
  const int command = data[0] % 10;
  const std::size_t keys = data[1] % 4;
  std::vector<std::string> segments;
  std::size_t pos = 2;
  memory_keys ks;
  while (pos + 2 <= size && segments.size() < 16) {
    const std::size_t len = data[pos] | static_cast<std::size_t>(data[pos + 1]) << 8;
    pos += 2;
    if (len == 0xffff) {
      segments.emplace_back("\xff\xff", 2);  // marks "no value" below
      continue;
    }
    const std::size_t n = len < size - pos ? len : size - pos;
    segments.emplace_back(reinterpret_cast<const char*>(data) + pos, n);
    pos += n;
  }
  std::vector<std::string_view> args;
  for (std::size_t i = 0; i < segments.size(); ++i) {
    if (i < keys) {
      const std::string& s = segments[i];
      ks.other_type.push_back(!s.empty() && static_cast<unsigned char>(s[0]) == 0xfe);
      if (s == std::string("\xff\xff", 2))
        ks.values.emplace_back();
      else
        ks.values.emplace_back(s);
    } else {
      args.push_back(segments[i]);
    }
  }
  while (ks.values.size() < keys) {
    ks.values.emplace_back();
    ks.other_type.push_back(false);
  }
  if (command == 4) {  // CL.THROTTLE key args... (the key's value is values[0])
    if (ks.values.empty()) {
      ks.values.emplace_back();
      ks.other_type.push_back(false);
    }
    sluice::redis_module::throttle_args a;
    if (auto e = sluice::redis_module::parse_throttle(args, a)) {
      check(*e);
      return 0;
    }
    const auto r = sluice::redis_module::throttle(a, ks.values[0], 1'765'000'000'000'000);
    check(r.answer);
    if (r.after && (r.answer.k == reply::kind::error || r.px < 0)) std::abort();
    return 0;
  }
  if (command == 9) {
    check(sluice::redis_module::info());
    return 0;
  }
  const auto e = sluice::redis_module::entries[command < 4 ? command : command - 1];
  const reply r = sluice::redis_module::run(e, ks, keys, args);
  check(r);
  if (r.k == reply::kind::error && ks.writes != 0) std::abort();  // an error reply writes nothing
  if (r.k != reply::kind::error && r.k != reply::kind::array) std::abort();
  if (sluice::redis_module::read_only(e) && ks.writes != 0) std::abort();  // a peek, a refund's read write nothing
  sluice::redis_module::reset_halted();
  return 0;
}
