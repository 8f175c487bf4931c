// Forwarding header, kept for one release: include "sluice/core/detail/arith.hpp".
#pragma once

#include "sluice/core/detail/arith.hpp"  // IWYU pragma: export
