// Forwarding header, kept for one release: include "sluice/core/store.hpp".
#pragma once

#include "sluice/core/store.hpp"  // IWYU pragma: export
