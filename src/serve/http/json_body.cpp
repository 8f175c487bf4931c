// parse_json_object (json_body.hpp).
#include "json_body.hpp"

#include <string>

namespace sluice::serve {

result<nlohmann::json> parse_json_object(std::string_view body, std::string_view example) {
  using nlohmann::json;
  json doc;
  try {
    doc = json::parse(body);
  } catch (const json::parse_error& e) {
    return error{"body", "not valid JSON (at byte " + std::to_string(e.byte) + ")"};
  } catch (const json::exception&) {
    return error{"body", "a number out of range for JSON (past 1.8e308)"};
  }
  if (!doc.is_object()) return error{"body", "must be a JSON object such as " + std::string(example)};
  return doc;
}

}  // namespace sluice::serve
