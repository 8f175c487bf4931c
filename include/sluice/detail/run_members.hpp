// Forwarding header, kept for one release: include "sluice/core/detail/run_members.hpp".
#pragma once

#include "sluice/core/detail/run_members.hpp"  // IWYU pragma: export
