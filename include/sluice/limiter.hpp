// Forwarding header, kept for one release: include "sluice/core/limiter.hpp".
#pragma once

#include "sluice/core/limiter.hpp"  // IWYU pragma: export
