// Forwarding header, kept for one release: include "sluice/core/fixed_window.hpp".
#pragma once

#include "sluice/core/fixed_window.hpp"  // IWYU pragma: export
