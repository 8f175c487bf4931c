// Forwarding header, kept for one release: include "sluice/core/override.hpp".
#pragma once

#include "sluice/core/override.hpp"  // IWYU pragma: export
