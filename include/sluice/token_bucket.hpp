// Forwarding header, kept for one release: include "sluice/core/token_bucket.hpp".
#pragma once

#include "sluice/core/token_bucket.hpp"  // IWYU pragma: export
