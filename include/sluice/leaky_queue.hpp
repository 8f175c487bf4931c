// Forwarding header, kept for one release: include "sluice/core/leaky_queue.hpp".
#pragma once

#include "sluice/core/leaky_queue.hpp"  // IWYU pragma: export
