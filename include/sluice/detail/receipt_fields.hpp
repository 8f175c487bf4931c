// Forwarding header, kept for one release: include "sluice/core/detail/receipt_fields.hpp".
#pragma once

#include "sluice/core/detail/receipt_fields.hpp"  // IWYU pragma: export
