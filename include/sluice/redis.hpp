// Forwarding header, kept for one release: include "sluice/redis/store.hpp".
#pragma once

#include "sluice/redis/store.hpp"  // IWYU pragma: export
