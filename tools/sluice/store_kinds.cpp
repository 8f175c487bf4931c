// program_stores (store_kinds.hpp): the one place the command says which
// store targets it was linked with.
#include "store_kinds.hpp"

#ifdef SLUICE_HAVE_REDIS
#include "sluice/redis/store.hpp"
#endif

namespace sluice::cli {

const store_registry& program_stores() {
  static const store_registry stores = [] {
    store_registry r;
#ifdef SLUICE_HAVE_REDIS
    register_redis_stores(r);
#endif
    return r;
  }();
  return stores;
}

}  // namespace sluice::cli
