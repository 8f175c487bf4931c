// dynamic_metadata of ShouldRateLimit's responses (dynamic_metadata.hpp).
#include "dynamic_metadata.hpp"

#include <nlohmann/json.hpp>
#include <string>

namespace sluice::serve::envoy {

namespace {

void to_value(const nlohmann::json& j, google::protobuf::Value& v) {
  switch (j.type()) {
    case nlohmann::json::value_t::null:
    case nlohmann::json::value_t::discarded:
      v.set_null_value(google::protobuf::NULL_VALUE);
      break;
    case nlohmann::json::value_t::boolean:
      v.set_bool_value(j.get<bool>());
      break;
    case nlohmann::json::value_t::number_integer:
    case nlohmann::json::value_t::number_unsigned:
    case nlohmann::json::value_t::number_float:
      v.set_number_value(j.get<double>());
      break;
    case nlohmann::json::value_t::string:
      v.set_string_value(j.get<std::string>());
      break;
    case nlohmann::json::value_t::array:
      for (const auto& item : j) to_value(item, *v.mutable_list_value()->add_values());
      break;
    case nlohmann::json::value_t::object:
      v.mutable_struct_value();  // an empty object is still an object
      for (const auto& [k, item] : j.items()) to_value(item, (*v.mutable_struct_value()->mutable_fields())[k]);
      break;
    case nlohmann::json::value_t::binary:
      v.set_null_value(google::protobuf::NULL_VALUE);  // never read from YAML
      break;
  }
}

// envoyproxy/ratelimit's mergeMetadata: a key `dest` has keeps its value,
// unless both are objects, which merge.
void merge(google::protobuf::Struct& dest, const nlohmann::json& src) {
  for (const auto& [k, item] : src.items()) {
    auto& fields = *dest.mutable_fields();
    const auto it = fields.find(k);
    if (it == fields.end()) {
      to_value(item, fields[k]);
    } else if (it->second.has_struct_value() && item.is_object()) {
      merge(*it->second.mutable_struct_value(), item);
    }
  }
}

}  // namespace

void write_dynamic_metadata(const ::envoy::service::ratelimit::v3::RateLimitRequest& req,
                            std::span<const nlohmann::json* const> passed, google::protobuf::Struct& out) {
  auto& fields = *out.mutable_fields();
  fields["domain"].set_string_value(req.domain());
  auto* descriptors = fields["descriptors"].mutable_list_value();
  for (const auto& d : req.descriptors()) {
    auto& s = *descriptors->add_values()->mutable_struct_value()->mutable_fields();
    auto* entries = s["entries"].mutable_list_value();
    for (const auto& e : d.entries()) entries->add_values()->set_string_value(e.key() + "=" + e.value());
    if (d.has_limit()) s["limit"].set_string_value(d.limit().ShortDebugString());
    if (d.has_hits_addend()) s["hitsAddend"].set_number_value(static_cast<double>(d.hits_addend().value()));
  }
  if (req.hits_addend() != 0) fields["hitsAddend"].set_number_value(static_cast<double>(req.hits_addend()));
  google::protobuf::Struct merged;
  for (const nlohmann::json* m : passed)
    if (m != nullptr) merge(merged, *m);
  if (merged.fields_size() > 0) *fields["metadata"].mutable_struct_value() = std::move(merged);
}

}  // namespace sluice::serve::envoy
