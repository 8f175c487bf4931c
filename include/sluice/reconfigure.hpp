// Forwarding header, kept for one release: include "sluice/core/reconfigure.hpp".
#pragma once

#include "sluice/core/reconfigure.hpp"  // IWYU pragma: export
