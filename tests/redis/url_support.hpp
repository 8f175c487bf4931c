// Shared by the URL parser's tests (url_test, tls_url_test): a URL that must
// parse, and a text that must not, with the part its error must name.
#pragma once

#include <gtest/gtest.h>

#include <ostream>
#include <string>
#include <string_view>

#include "redis/client/client.hpp"

namespace sluice::redis {

/// `text` parsed (an empty url, and a failed test, if it does not parse).
inline url parsed(std::string_view text) {
  auto r = parse_url(text);
  EXPECT_TRUE(r.ok()) << text << ": " << (r.ok() ? "" : r.err().what());
  return r.ok() ? r.value() : url{};
}

/// A text `parse_url` refuses, naming `part`.
struct bad_case {
  const char* text;
  const char* part;
};

// Printed in ctest's test names: the part and the text, its control characters as '?'.
inline void PrintTo(const bad_case& c, std::ostream* os) {
  std::string t = c.text;
  for (char& ch : t)
    if (static_cast<unsigned char>(ch) < 0x20) ch = '?';
  *os << c.part << " <" << t << ">";
}

}  // namespace sluice::redis
