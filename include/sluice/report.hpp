// Forwarding header, kept for one release: include "sluice/core/report.hpp".
#pragma once

#include "sluice/core/report.hpp"  // IWYU pragma: export
