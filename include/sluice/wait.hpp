// Forwarding header, kept for one release: include "sluice/core/wait.hpp".
#pragma once

#include "sluice/core/wait.hpp"  // IWYU pragma: export
