// Forwarding header, kept for one release: include "sluice/keyed/memory.hpp".
#pragma once

#include "sluice/keyed/memory.hpp"  // IWYU pragma: export
