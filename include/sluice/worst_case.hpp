// Forwarding header, kept for one release: include "sluice/core/worst_case.hpp".
#pragma once

#include "sluice/core/worst_case.hpp"  // IWYU pragma: export
