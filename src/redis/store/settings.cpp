// settings_of (settings.hpp): a Redis store's settings from the shared
// options and its URL.
#include "redis/store/settings.hpp"

#include "redis/client/binary.hpp"
#include "redis/client/url_query.hpp"

namespace sluice::redis {

result<store_settings> settings_of(const store_options& o) {
  if (o.tick_ns < 0) return error{"tick_ns", "must be 0 (unknown) or positive"};
  if (o.tick_ns >= p53) return error{"tick_ns", "must be below 2^53"};
  if (o.grace.count() < 0) return error{"grace", "must not be negative"};
  if (o.skew_tolerance < 0) return error{"skew_tolerance", "must not be negative"};
  if (o.clock == store_clock::store && (o.tick_ns <= 0 || 1000 % o.tick_ns != 0))
    return error{"tick_ns",
                 "the store's clock needs ticks that divide a microsecond (1, 2, 4, 5, 8, 10, ..., 1000 ns)"};
  if (o.max_clock_offset.count() < 0) return error{"max_clock_offset", "must not be negative"};
  auto query = store_settings_of(o.url);
  if (!query) return query.err();
  return store_settings{o, query.value()};
}

}  // namespace sluice::redis
