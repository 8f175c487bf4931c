// Forwarding header, kept for one release: include "sluice/core/concurrency.hpp".
#pragma once

#include "sluice/core/concurrency.hpp"  // IWYU pragma: export
