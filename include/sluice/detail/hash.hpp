// Forwarding header, kept for one release: include "sluice/core/detail/hash.hpp".
#pragma once

#include "sluice/core/detail/hash.hpp"  // IWYU pragma: export
