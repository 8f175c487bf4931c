// Forwarding header, kept for one release: include "sluice/core/fresh.hpp".
#pragma once

#include "sluice/core/fresh.hpp"  // IWYU pragma: export
