// Forwarding header, kept for one release: include "sluice/core/detail/debt_bound.hpp".
#pragma once

#include "sluice/core/detail/debt_bound.hpp"  // IWYU pragma: export
