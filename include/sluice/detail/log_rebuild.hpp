// Forwarding header, kept for one release: include "sluice/core/detail/log_rebuild.hpp".
#pragma once

#include "sluice/core/detail/log_rebuild.hpp"  // IWYU pragma: export
