// Forwarding header, kept for one release: include "sluice/core/gcra.hpp".
#pragma once

#include "sluice/core/gcra.hpp"  // IWYU pragma: export
