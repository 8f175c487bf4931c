// Forwarding header, kept for one release: include "sluice/core/sliding_log.hpp".
#pragma once

#include "sluice/core/sliding_log.hpp"  // IWYU pragma: export
