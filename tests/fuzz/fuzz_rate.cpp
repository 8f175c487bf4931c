// Fuzz target: parse_rate and parse_duration never crash, and whatever they
// accept is in range and formats back to the same window.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "sluice/core/rate.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  if (auto r = sluice::parse_rate(text)) {
    if (r->limit < 0 || r->limit > sluice::max_quantity || r->window < 1 || r->window > sluice::max_quantity)
      std::abort();
  } else if (r.err().field.empty() || r.err().message.empty()) {
    std::abort();
  }
  if (auto d = sluice::parse_duration(text)) {
    if (*d < 0) std::abort();
  }
  sluice::tick t = 0;
  if (sluice::parse_seconds(text, t)) {
    sluice::tick back = 0;
    if (!sluice::parse_seconds(sluice::format_seconds(t), back) || back != t) std::abort();
  }
  return 0;
}
