#ifndef C_SQLITE_SHIM_H
#define C_SQLITE_SHIM_H

// Debian's libsqlite3 (libsqlite3-dev): the index of DiskResponseCache.
#include <sqlite3.h>

// SQLITE_TRANSIENT is a cast of -1 to a destructor, which Swift cannot import as a constant.
static inline sqlite3_destructor_type csqlite_transient(void) { return SQLITE_TRANSIENT; }

#endif
