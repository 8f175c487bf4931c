// Forwarding header, kept for one release: include "sluice/core/algorithm.hpp".
#pragma once

#include "sluice/core/algorithm.hpp"  // IWYU pragma: export
