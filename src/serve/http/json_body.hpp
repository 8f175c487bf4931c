// A request body that must be a JSON object (POST /v1/decide, /v1/report,
// /v1/refund, /v1/release, PUT /admin/v1/overrides/...): read once, with
// the same errors on every route.
#pragma once

#include <nlohmann/json.hpp>
#include <string_view>

#include "sluice/core/result.hpp"

namespace sluice::serve {

/// `body` read as a JSON object, or an error naming `body`: not JSON (with
/// the byte where it stops being JSON), a number past a double (nlohmann
/// throws out_of_range, not parse_error, for 1e999: a bad request, never an
/// escaped exception), or not an object (the message shows `example`, the
/// route's smallest valid body).
result<nlohmann::json> parse_json_object(std::string_view body, std::string_view example);

}  // namespace sluice::serve
