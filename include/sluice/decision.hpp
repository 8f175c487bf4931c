// Forwarding header, kept for one release: include "sluice/core/decision.hpp".
#pragma once

#include "sluice/core/decision.hpp"  // IWYU pragma: export
