// Forwarding header, kept for one release: include "sluice/core/analysis.hpp".
#pragma once

#include "sluice/core/analysis.hpp"  // IWYU pragma: export
