// Forwarding header, kept for one release: include "sluice/core/time.hpp".
#pragma once

#include "sluice/core/time.hpp"  // IWYU pragma: export
