// Forwarding header, kept for one release: include "sluice/core/policy_expr.hpp".
#pragma once

#include "sluice/core/policy_expr.hpp"  // IWYU pragma: export
