// Forwarding header, kept for one release: include "sluice/keyed/registry.hpp".
#pragma once

#include "sluice/keyed/registry.hpp"  // IWYU pragma: export
