#ifndef C_SQLITE_SHIM_H
#define C_SQLITE_SHIM_H

// Debian's libsqlite3 (libsqlite3-dev): the index of DiskResponseCache.
#include <sqlite3.h>

// SQLITE_TRANSIENT is a cast of -1 to a destructor, which Swift cannot import as a constant.
static inline sqlite3_destructor_type csqlite_transient(void) { return SQLITE_TRANSIENT; }

// The disk cache's store counters live in a file every cache on the folder maps shared (MAP_SHARED), in one
// process or several: they are read and bumped only through these sequentially consistent atomics, which Swift
// cannot apply to memory it did not allocate itself.
#include <stdint.h>
static inline uint64_t csqlite_shared_load(const uint64_t *counter) {
    return __atomic_load_n(counter, __ATOMIC_SEQ_CST);
}
static inline void csqlite_shared_increment(uint64_t *counter) {
    (void)__atomic_fetch_add(counter, 1, __ATOMIC_SEQ_CST);
}
static inline void csqlite_shared_store(uint64_t *counter, uint64_t value) {
    __atomic_store_n(counter, value, __ATOMIC_SEQ_CST);
}

#endif
