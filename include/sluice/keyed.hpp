// Forwarding header, kept for one release: include "sluice/keyed/keyed.hpp".
#pragma once

#include "sluice/keyed/keyed.hpp"  // IWYU pragma: export
