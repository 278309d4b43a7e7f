#include "CHeraldThread.h"

__thread void *_Nullable herald_posting_thread_state HERALD_TLS_MODEL = 0;
