// Forwarding header, kept for one release: include "sluice/core/detail/all_of_fold.hpp".
#pragma once

#include "sluice/core/detail/all_of_fold.hpp"  // IWYU pragma: export
