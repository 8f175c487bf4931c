// Forwarding header, kept for one release: include "sluice/keyed/atomic_file.hpp".
#pragma once

#include "sluice/keyed/atomic_file.hpp"  // IWYU pragma: export
