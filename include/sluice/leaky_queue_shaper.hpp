// Forwarding header, kept for one release: include "sluice/core/leaky_queue_shaper.hpp".
#pragma once

#include "sluice/core/leaky_queue_shaper.hpp"  // IWYU pragma: export
