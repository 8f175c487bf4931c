// async_client's FUNCTION library path, in continuation form: FCALL; on
// "Function not found" FUNCTION LOAD REPLACE and the missing calls again,
// once; when FUNCTION/FCALL is refused, EVALSHA of the script form from then
// on, with SCRIPT LOAD on NOSCRIPT. With `wait_replicas` (url), each round
// ends with one WAIT, and a round fewer replicas acknowledged fails whole.
#include <algorithm>
#include <utility>

#include "redis/client/async_impl.hpp"
#include "redis/client/resp.hpp"

namespace sluice::redis {
namespace {

constexpr std::string_view asking_cmd[] = {"ASKING"};

}  // namespace

result<bool> async_client::set_library(std::string name, std::string code) {
  if (auto ok = check_library(name, code); !ok) return ok;
  auto lib = std::make_shared<library>();
  lib->name = std::move(name);
  lib->script = script_form(code);
  lib->code = std::move(code);
  std::lock_guard lock(lib_mu_);
  lib_ = std::move(lib);
  return true;
}

std::shared_ptr<const async_client::library> async_client::current_library() const {
  std::lock_guard lock(lib_mu_);
  return lib_;
}

void async_client::async_fcall(const function_call& fc, call_handler done) {
  async_fcall_each(std::span(&fc, 1), [h = std::move(done)](std::vector<call_result> v) {
    call_result& r = v[0];
    if (auto* rep = std::get_if<reply>(&r); rep != nullptr && rep->is_error())
      return h(server_error(std::move(rep->str)));
    h(std::move(r));
  });
}

void async_client::async_fcall_each(std::span<const function_call> calls, each_handler done) {
  start_fcalls(calls, std::move(done), false);
}

void async_client::async_fcall_each_asking(std::span<const function_call> calls, each_handler done) {
  start_fcalls(calls, std::move(done), true);
}

void async_client::start_fcalls(std::span<const function_call> calls, each_handler done, bool asking) {
  const std::size_t n = calls.size();
  auto fail_all = [&](call_error e) {
    std::vector<call_result> out;
    out.reserve(n);
    for (std::size_t i = 0; i < n; ++i) out.emplace_back(e);
    done(std::move(out));
  };
  if (n == 0) return done({});
  auto lib = current_library();
  if (!lib) return fail_all(call_error{call_error::protocol, "fcall before set_library", false});
  auto j = std::make_shared<fcall_job>();
  std::size_t bytes = 0, pieces = 0;
  for (const function_call& fc : calls) {
    if (fc.num_keys > fc.keys_then_args.size())
      return fail_all(call_error{call_error::protocol, "function_call: num_keys exceeds keys_then_args", false});
    bytes += fc.function.size();
    for (std::string_view a : fc.keys_then_args) bytes += a.size();
    pieces += 1 + fc.keys_then_args.size();
  }
  j->arena.reserve(bytes);
  j->pieces.reserve(pieces);
  j->calls.reserve(n);
  auto keep = [&j](std::string_view v) {
    j->pieces.emplace_back(j->arena.size(), v.size());
    j->arena.append(v);
  };
  for (const function_call& fc : calls) {
    j->calls.push_back({j->pieces.size(), fc.keys_then_args.size(), fc.num_keys, fc.module, fc.letters});
    keep(fc.function);
    for (std::string_view a : fc.keys_then_args) keep(a);
  }
  j->out.resize(n);
  j->pending.reserve(n);
  for (std::size_t i = 0; i < n; ++i) j->pending.push_back(i);
  j->lib = std::move(lib);
  j->asking = asking;
  j->done = [n, h = std::move(done)](batch_result r) {
    std::vector<call_result> out;
    out.reserve(n);
    if (auto* e = std::get_if<call_error>(&r)) {
      for (std::size_t i = 0; i < n; ++i) out.emplace_back(*e);
    } else {
      for (auto& rep : std::get<std::vector<reply>>(r)) out.emplace_back(std::move(rep));
    }
    h(std::move(out));
  };
  run_round(std::move(j));
}

void async_client::run_round(std::shared_ptr<fcall_job> j) {
  j->script = script_mode_.load(std::memory_order_relaxed);
  if (j->script) {
    {
      std::lock_guard lock(j->lib->sha_mu);
      j->sha = j->lib->sha;
    }
    if (j->sha.empty()) {
      load_library(j, [self = shared_from_this(), j] { self->run_round(j); });
      return;
    }
  }
  // Sized once for the round, no growth step per argument: at most every
  // piece of the job with its RESP header and line end (26 bytes), and per
  // call its command name, key count, SHA and ASKING (160 bytes and the SHA).
  std::size_t most = 0;
  for (std::size_t i : j->pending) most = std::max(most, j->calls[i].count);
  std::string bytes;
  bytes.reserve(j->arena.size() + 26 * j->pieces.size() + (160 + j->sha.size()) * j->pending.size());
  std::vector<std::string_view> cmd;
  cmd.reserve(most + 3);
  // Each call the module takes goes as its command (module.hpp), keys and
  // arguments unchanged; the rest as the library's.
  const module_caps caps = options_.where.module == module_use::off ? module_caps{} : module();
  std::uint64_t to_module = 0;
  for (std::size_t i : j->pending) {
    auto& c = j->calls[i];
    const std::string num_keys = std::to_string(c.num_keys);
    const std::string_view function = j->piece(c.first);
    auto keys_and_args = [&](std::size_t from, std::size_t to) {
      for (std::size_t k = from; k < to; ++k) cmd.push_back(j->piece(c.first + 1 + k));
    };
    cmd.clear();
    if (j->asking) format_command(bytes, std::span<const std::string_view>(asking_cmd));
    c.via_module = !c.to_library && caps.takes(c.module, c.letters);
    if (c.via_module) {
      ++to_module;
      cmd.insert(cmd.end(), {module_command_names[static_cast<std::size_t>(c.module)], num_keys});
      keys_and_args(0, c.count);
    } else if (j->script) {
      cmd.insert(cmd.end(), {"EVALSHA", j->sha, num_keys});
      keys_and_args(0, c.num_keys);
      cmd.push_back(function);
      keys_and_args(c.num_keys, c.count);
    } else {
      cmd.insert(cmd.end(), {"FCALL", function, num_keys});
      keys_and_args(0, c.count);
    }
    format_command(bytes, cmd);
  }
  options_.module->count(to_module, j->pending.size() - to_module);
  // One WAIT after the round's calls (not one per call): its answer covers
  // every write before it on this connection.
  const url& where = options_.where;
  const bool wait = where.wait_replicas > 0;
  if (wait) {
    const std::string n = std::to_string(where.wait_replicas), ms = std::to_string(where.wait_timeout_ms);
    const std::string_view wait_cmd[] = {"WAIT", n, ms};
    format_command(bytes, std::span<const std::string_view>(wait_cmd));
  }
  submit_formatted(std::move(bytes), j->pending.size() * (j->asking ? 2 : 1) + (wait ? 1 : 0),
                   [self = shared_from_this(), j](batch_result r) { self->on_round(j, std::move(r)); });
}

void async_client::on_round(std::shared_ptr<fcall_job> j, batch_result r) {
  if (auto* e = std::get_if<call_error>(&r)) return j->done(std::move(*e));
  auto& replies = std::get<std::vector<reply>>(r);
  if (const auto need = options_.where.wait_replicas; need > 0) {
    // The round ran on this server, but a failover may lose it: its calls
    // are answered by the caller's failure mode, never as decided.
    const reply acked = std::move(replies.back());
    replies.pop_back();
    if (acked.as_integer().value_or(-1) < need)
      return j->done(call_error{
          call_error::timeout,
          "WAIT " + std::to_string(need) + " " + std::to_string(options_.where.wait_timeout_ms) + ": " +
              (acked.is_error() ? acked.str
                                : std::to_string(acked.as_integer().value_or(-1)) + " replicas acknowledged in time"),
          true});
  }
  if (j->asking) {
    // Each call's reply follows the +OK of its ASKING.
    for (std::size_t k = 0; k < j->pending.size(); ++k) replies[k] = std::move(replies[2 * k + 1]);
    replies.resize(j->pending.size());
  }
  std::vector<std::size_t> again;
  bool need_load = false;
  bool refused = false;
  std::string module_refused;  // the first refusal's text
  for (std::size_t k = 0; k < j->pending.size(); ++k) {
    reply& rep = replies[k];
    auto& c = j->calls[j->pending[k]];
    // The module did not run it (docs/redis.md, "A refusal at call time"):
    // under auto it goes to the library now, and the connection's later
    // calls too when the command was refused; under on, only a letter the
    // module lacks does, a refusal is the call's error.
    if (c.via_module && rep.is_error() && module_did_not_run(rep.str) &&
        (options_.where.module == module_use::automatic || module_lacks_letter(rep.str))) {
      if (module_refused.empty() && !module_lacks_letter(rep.str)) module_refused = rep.str;
      c.to_library = true;
      again.push_back(j->pending[k]);
      j->out[j->pending[k]] = std::move(rep);
      continue;
    }
    if (rep.is_error() && !c.via_module) {  // the module's own errors are the call's answer
      const bool missing = j->script ? is_noscript(rep.str) : is_function_missing(rep.str);
      const bool refused_here = !j->script && is_function_refused(rep.str);
      if (missing || refused_here) {
        need_load = need_load || missing;
        refused = refused || refused_here;
        again.push_back(j->pending[k]);
      }
    }
    j->out[j->pending[k]] = std::move(rep);
  }
  if (!module_refused.empty()) {
    module_caps caps = module();
    caps.commands = 0;
    caps.letters = 0;
    caps.why = "a call was refused: " + module_refused;
    set_module(std::move(caps));
  }
  if (again.empty() || j->round >= 2) return j->done(std::move(j->out));
  ++j->round;
  j->pending = std::move(again);
  if (refused && !j->script) {
    script_mode_.store(true, std::memory_order_relaxed);
    std::lock_guard lock(j->lib->sha_mu);
    j->lib->sha.clear();  // loaded as a script by the next round
  } else if (need_load) {
    if (j->loaded) return j->done(std::move(j->out));  // once per batch: the error replies stay
    load_library(j, [self = shared_from_this(), j] { self->run_round(j); });
    return;
  }
  run_round(std::move(j));
}

void async_client::load_library(std::shared_ptr<fcall_job> j, std::function<void()> then) {
  j->loaded = true;
  if (script_mode_.load(std::memory_order_relaxed)) return load_script(std::move(j), std::move(then));
  library_loads_.fetch_add(1, std::memory_order_relaxed);
  const std::vector<std::string_view> cmd{"FUNCTION", "LOAD", "REPLACE", j->lib->code};
  async_pipeline(std::span(&cmd, 1), [self = shared_from_this(), j, then = std::move(then)](batch_result r) mutable {
    if (auto* e = std::get_if<call_error>(&r)) return j->done(std::move(*e));
    const reply& rep = std::get<std::vector<reply>>(r)[0];
    if (!rep.is_error()) return then();
    if (!is_function_refused(rep.str))
      return j->done(
          call_error{call_error::server, "FUNCTION LOAD of library " + j->lib->name + ": " + rep.str, false});
    self->script_mode_.store(true, std::memory_order_relaxed);  // refused: a script from now on
    self->load_script(j, std::move(then));
  });
}

void async_client::load_script(std::shared_ptr<fcall_job> j, std::function<void()> then) {
  script_loads_.fetch_add(1, std::memory_order_relaxed);
  const std::vector<std::string_view> cmd{"SCRIPT", "LOAD", j->lib->script};
  async_pipeline(std::span(&cmd, 1), [j, then = std::move(then)](batch_result r) {
    if (auto* e = std::get_if<call_error>(&r)) return j->done(std::move(*e));
    const reply& rep = std::get<std::vector<reply>>(r)[0];
    if (rep.is_error())
      return j->done(call_error{call_error::server, "SCRIPT LOAD of library " + j->lib->name + ": " + rep.str, false});
    if (!rep.as_string() || rep.str.size() != 40)
      return j->done(call_error{call_error::protocol, "SCRIPT LOAD answered without a SHA1", false});
    {
      std::lock_guard lock(j->lib->sha_mu);
      j->lib->sha = rep.str;
    }
    then();
  });
}

}  // namespace sluice::redis
