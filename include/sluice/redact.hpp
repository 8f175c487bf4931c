// Forwarding header, kept for one release: include "sluice/core/redact.hpp".
#pragma once

#include "sluice/core/redact.hpp"  // IWYU pragma: export
