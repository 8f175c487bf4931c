// Forwarding header, kept for one release: include "sluice/core/sliding_buckets.hpp".
#pragma once

#include "sluice/core/sliding_buckets.hpp"  // IWYU pragma: export
