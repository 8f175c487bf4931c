// Forwarding header, kept for one release: include "sluice/core/report_bound.hpp".
#pragma once

#include "sluice/core/report_bound.hpp"  // IWYU pragma: export
