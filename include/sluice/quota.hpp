// Forwarding header, kept for one release: include "sluice/core/quota.hpp".
#pragma once

#include "sluice/core/quota.hpp"  // IWYU pragma: export
