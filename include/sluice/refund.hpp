// Forwarding header, kept for one release: include "sluice/core/refund.hpp".
#pragma once

#include "sluice/core/refund.hpp"  // IWYU pragma: export
