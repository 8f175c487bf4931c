// Forwarding header, kept for one release: include "sluice/core/lease.hpp".
#pragma once

#include "sluice/core/lease.hpp"  // IWYU pragma: export
