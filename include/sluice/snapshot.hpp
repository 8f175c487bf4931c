// Forwarding header, kept for one release: include "sluice/keyed/snapshot.hpp".
#pragma once

#include "sluice/keyed/snapshot.hpp"  // IWYU pragma: export
