// Forwarding header, kept for one release: include "sluice/core/live_limiter.hpp".
#pragma once

#include "sluice/core/live_limiter.hpp"  // IWYU pragma: export
