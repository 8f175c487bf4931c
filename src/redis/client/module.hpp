// What the client knows of sluice's Redis module (src/redis_module/,
// docs/redis.md "The store and the module"): the one place that names its
// commands, the letters of the algorithms it decides, and how a connection
// finds out, at its login, whether its server offers them. A call the
// module can make carries the command it maps to and its leaves' letters
// (function_call, client.hpp); each connection sends it as that command
// where its server has the module, else as the library's FCALL. Private to
// sluice::redis.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sluice::redis {

struct reply;  // client.hpp

/// The URL's `?module=`: whether calls go to the module's commands.
enum class module_use : std::uint8_t {
  automatic,  ///< `auto` (the default): where the server has them, else the library
  on,         ///< `on`: a server without them is a connect error
  off,        ///< `off`: the library always; nothing is checked
};

/// `auto`, `on` or `off`; nullopt for anything else.
std::optional<module_use> module_use_of(std::string_view text) noexcept;

/// Algorithm letters (a state's type letter, 'a'..'z'), one bit each.
using letter_set = std::uint32_t;
constexpr letter_set letter_bit(char c) noexcept {
  return c >= 'a' && c <= 'z' ? letter_set{1} << static_cast<unsigned>(c - 'a') : letter_set{0};
}

/// A library function the module has a command for: the command a call of
/// it becomes (same keys, same arguments).
enum class module_command : std::uint8_t { none, one, decide, peek, report, release, refund, refund_read, cas };
inline constexpr std::array<std::string_view, 9> module_command_names{"",
                                                                      "SLUICE.ONE",
                                                                      "SLUICE.DECIDE",
                                                                      "SLUICE.PEEK",
                                                                      "SLUICE.REPORT",
                                                                      "SLUICE.RELEASE",
                                                                      "SLUICE.REFUND",
                                                                      "SLUICE.REFUND_READ",
                                                                      "SLUICE.CAS"};

/// The oldest module version whose commands take this client's arguments
/// (SLUICE.INFO's `version`; docs/redis.md, "What the loaded module
/// decides: SLUICE.INFO").
inline constexpr std::int64_t module_min_version = 2;

/// What a connection's server offers: found by the probe at its login.
struct module_caps {
  bool checked = false;        ///< the probe answered (false: not connected yet, or module=off)
  std::uint16_t commands = 0;  ///< bit (1 << module_command) per command the server runs for this user
  letter_set letters = 0;      ///< the algorithms its module decides, as its SLUICE.INFO says (0: none)
  /// Why calls go to the library when they do: "no module", "the ACL
  /// refuses SLUICE.ONE", ...; empty when every command is there.
  std::string why;
  /// Whether a call of `c` whose leaves have `letters` is the module's.
  [[nodiscard]] bool takes(module_command c, letter_set l) const noexcept {
    return c != module_command::none && (commands >> static_cast<unsigned>(c) & 1U) != 0 && (l & ~letters) == 0;
  }
  /// Every command there, for every letter it decides.
  [[nodiscard]] bool complete() const noexcept { return commands == all_commands; }
  static constexpr std::uint16_t all_commands = 0b1'1111'1110;
};

/// The probe a connection sends after its login, in the same write: each
/// command once, with no key and arguments it refuses with its own error
/// ("sluice: bad request ..."), having read and written nothing; Redis
/// answers "ERR unknown command" where there is no module and NOPERM where
/// the ACL refuses the command. Then SLUICE.INFO, whose answer (version,
/// protocol, letters) says what the module decides.
std::vector<std::vector<std::string_view>> module_probe();

/// The capabilities the probe's replies show (`n` replies, in the probe's
/// order), for a client whose library is named `library` (its protocol is
/// the name up to its last '_': "sluice_v2"). The letters are those
/// SLUICE.INFO answered; a module whose INFO is missing, unreadable, older
/// than module_min_version or of another protocol is not used (the reason
/// in `why`).
module_caps read_module_probe(const reply* replies, std::size_t n, std::string_view library);

/// Whether an error reply to a module command says it did not run, so the
/// same call may go to the library instead without deciding twice: NOPERM
/// (the ACL, checked before any command runs), an unknown command (the
/// module unloaded), or the module's "not in the module" (nothing read or
/// written).
bool module_did_not_run(std::string_view error) noexcept;
/// Whether that error is the module's own "not in the module" (a letter it
/// does not decide after all), not a refusal of the command.
bool module_lacks_letter(std::string_view error) noexcept;

/// One server's path, shared by every connection made from one set of
/// client options (a sync_client's callers', an attached loop's): what the
/// latest probe (or refusal) found, and the calls sent each way.
class module_state {
 public:
  [[nodiscard]] module_caps caps() const {
    std::lock_guard lock(mu_);
    return caps_;
  }
  void set(module_caps caps) {
    std::lock_guard lock(mu_);
    caps_ = std::move(caps);
  }
  void count(std::uint64_t to_module, std::uint64_t to_library) noexcept {
    module_calls_.fetch_add(to_module, std::memory_order_relaxed);
    library_calls_.fetch_add(to_library, std::memory_order_relaxed);
  }
  [[nodiscard]] std::uint64_t module_calls() const noexcept { return module_calls_.load(std::memory_order_relaxed); }
  [[nodiscard]] std::uint64_t library_calls() const noexcept { return library_calls_.load(std::memory_order_relaxed); }

 private:
  mutable std::mutex mu_;
  module_caps caps_;  // requires mu_
  std::atomic<std::uint64_t> module_calls_{0}, library_calls_{0};
};

/// One server's path as a backend sees it: its address, what its module
/// offers, and the calls sent each way (module_calls, library_calls).
struct module_path_view {
  std::string node;
  module_use use = module_use::automatic;
  module_caps caps;
  std::uint64_t module_calls = 0;
  std::uint64_t library_calls = 0;
};

/// "module (letters g)", "library (no module)", "library (module=off)",
/// "unknown" (not connected yet): a connection's path, for stats and health
/// lines.
std::string describe_path(const module_caps& caps, module_use use);

}  // namespace sluice::redis
