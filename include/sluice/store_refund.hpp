// Forwarding header, kept for one release: include "sluice/core/store_refund.hpp".
#pragma once

#include "sluice/core/store_refund.hpp"  // IWYU pragma: export
