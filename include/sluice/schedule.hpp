// Forwarding header, kept for one release: include "sluice/core/schedule.hpp".
#pragma once

#include "sluice/core/schedule.hpp"  // IWYU pragma: export
