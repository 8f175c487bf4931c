// Forwarding header, kept for one release: include "sluice/core/store_limiter.hpp".
#pragma once

#include "sluice/core/store_limiter.hpp"  // IWYU pragma: export
