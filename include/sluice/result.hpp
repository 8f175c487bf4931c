// Forwarding header, kept for one release: include "sluice/core/result.hpp".
#pragma once

#include "sluice/core/result.hpp"  // IWYU pragma: export
