#include "store_flag.hpp"

#include "trace.hpp"

namespace sluice::cli {

void add_store_flag(CLI::App& cmd, std::string& spec) {
  cmd.add_option("--store", spec, "where the states live: memory (default: this process)");
}

result<made_store> make_store(std::string_view spec, const store_setup& setup) {
  if (spec.empty()) return error{"--store", "is empty (memory)"};
  if (spec == "memory") {
    memory_store_options o;
    o.keyed = setup.keyed;
    auto m = std::make_unique<memory_store>(o);
    made_store out;
    out.memory = m.get();
    out.s = std::move(m);
    return out;
  }
  // The Redis store's schemes ("redis://", "unix://") are added here when
  // its target is built.
  return error{"--store", quote_input(spec) + " is not a store (memory)"};
}

result<single_policy_store> single_policy_store::make(made_store made, std::string_view name, const any_policy& p) {
  auto id = made.s->define(name, p);
  if (!id) return error{"--store", id.err().what()};
  return single_policy_store(std::move(made), id.value());
}

decision single_policy_store::try_acquire_at(std::string_view key, tick now, std::int64_t cost) {
  const check c{id_, key};
  decision own;
  const store_decision d = made_.s->decide_at({.checks = {&c, 1}, .now = now, .cost = cost, .id = {}}, {&own, 1});
  return d.from == source::store ? own : d.d;
}

void single_policy_store::restore(const std::vector<std::pair<std::string, any_state>>& entries) {
  if (made_.memory != nullptr) made_.memory->with_keyed(id_, [&](keyed_limiter& k) { k.restore(entries); });
}

}  // namespace sluice::cli
