// Forwarding header, kept for one release: include "sluice/core/detail/request_identity.hpp".
#pragma once

#include "sluice/core/detail/request_identity.hpp"  // IWYU pragma: export
