// Forwarding header, kept for one release: include "sluice/core/portable.hpp".
#pragma once

#include "sluice/core/portable.hpp"  // IWYU pragma: export
