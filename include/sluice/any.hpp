// Forwarding header, kept for one release: include "sluice/core/any.hpp".
#pragma once

#include "sluice/core/any.hpp"  // IWYU pragma: export
