// The Redis store's settings, resolved once when it opens: the options
// every store shares (store_options, store/registry.hpp) and what its URL's
// query adds (docs/redis.md, "URLs, passwords"). Private to the store: a
// program opens it with store_options and the URL, and nothing else.
#pragma once

#include "redis/client/client.hpp"
#include "sluice/core/result.hpp"
#include "sluice/keyed/registry.hpp"

namespace sluice::redis {

/// Every setting of one Redis store: the shared options, and what the URL's
/// query tells the store (url_store_settings, client.hpp: `eviction_poll`).
struct store_settings : store_options {
  url_store_settings from_url;
};

/// `o` checked and its URL's query read: errors name the option
/// ("tick_ns", "grace", ...) or the URL's part or query parameter.
result<store_settings> settings_of(const store_options& o);

}  // namespace sluice::redis
