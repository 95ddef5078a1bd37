// CORE_CHECK: the core's always-on assertion. Shared by the scheduler's files; core only.
#pragma once

#include <cstdio>
#include <cstdlib>

// Always-on check for invariants whose breach would corrupt the pool's state. Never used for
// anything a worker or client can send: those are handled as ordinary (refused or ignored) input.
#define CORE_CHECK(cond, msg)                                                                      \
  do {                                                                                             \
    if (!(cond)) {                                                                                 \
      std::fprintf(stderr, "%s:%d: core invariant violated: %s (%s)\n", __FILE__, __LINE__, (msg), \
                   #cond);                                                                         \
      std::abort();                                                                                \
    }                                                                                              \
  } while (0)
