// Forwarding header, kept for one release: include "sluice/core/rate.hpp".
#pragma once

#include "sluice/core/rate.hpp"  // IWYU pragma: export
