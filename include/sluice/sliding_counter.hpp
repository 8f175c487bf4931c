// Forwarding header, kept for one release: include "sluice/core/sliding_counter.hpp".
#pragma once

#include "sluice/core/sliding_counter.hpp"  // IWYU pragma: export
