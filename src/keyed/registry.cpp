// store_registry (store/registry.hpp): the memory store built in, every
// other scheme added by its target's registration call.
#include "sluice/keyed/registry.hpp"

#include <algorithm>

#include "sluice/core/redact.hpp"

namespace sluice {

namespace {

result<std::unique_ptr<store>> open_memory(const store_options& o) {
  return std::unique_ptr<store>(std::make_unique<memory_store>(o.memory));
}

const store_scheme& memory_scheme() noexcept { return known_store_schemes[0]; }

// `text` between quotes, its password hidden and its control bytes escaped
// (a URL is user input).
std::string shown(std::string_view text) { return "'" + escape_bytes(redact_url(text)) + "'"; }

}  // namespace

store_registry::store_registry() { openers_.push_back({&memory_scheme(), &open_memory}); }

bool store_registry::add(std::string_view scheme, store_opener opener) {
  if (opener == nullptr) return false;
  for (const store_scheme& s : known_store_schemes) {
    if (s.name != scheme || !s.remote) continue;
    for (entry& e : openers_)
      if (e.scheme == &s) {
        e.open = opener;
        return true;
      }
    openers_.push_back({&s, opener});
    // Kept in known_store_schemes' order, so describe() reads the same
    // whatever order the registrations came in.
    std::sort(openers_.begin(), openers_.end(), [](const entry& a, const entry& b) { return a.scheme < b.scheme; });
    return true;
  }
  return false;
}

bool store_registry::has(std::string_view scheme) const noexcept {
  return std::any_of(openers_.begin(), openers_.end(), [&](const entry& e) { return e.scheme->name == scheme; });
}

result<std::unique_ptr<store>> store_registry::open(const store_options& options) const {
  if (options.url.empty()) return error{"url", "is empty (" + describe() + ")", error_code::bad_store_url};
  const store_scheme* s = scheme_of(options.url);
  if (s == nullptr)
    return error{"url", shown(options.url) + " is not a store (" + describe() + ")", error_code::bad_store_url};
  for (const entry& e : openers_)
    if (e.scheme == s) return e.open(options);
  return error{"url",
               shown(options.url) + ": this program was built without the " + std::string(s->name) + ":// store (" +
                   std::string(s->target) + "; it opens " + describe() + ")",
               error_code::bad_store_url};
}

std::string store_registry::describe() const {
  std::string out;
  for (const entry& e : openers_) {
    if (!out.empty()) out += ", ";
    out += e.scheme->form;
  }
  return out;
}

}  // namespace sluice
