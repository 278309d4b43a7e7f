#ifndef C_HERALD_THREAD_H
#define C_HERALD_THREAD_H

// What Herald's threads need of C that Swift doesn't give: a thread-local variable.

// The calling thread's notification-posting state, as a thread-local variable: reading it is one load,
// where `pthread_getspecific` is a call. HeraldNotifications keeps the state itself (an unretained
// pointer to its `PostingThread`) and still registers it with a pthread key, whose destructor releases
// it when the thread exits and clears this variable.

#if defined(__ELF__)
#define HERALD_TLS_MODEL __attribute__((tls_model("initial-exec")))
#else
#define HERALD_TLS_MODEL
#endif

extern __thread void *_Nullable herald_posting_thread_state HERALD_TLS_MODEL;

/// The calling thread's posting state, or NULL if it has none.
static inline void *_Nullable hn_posting_thread(void) {
    return herald_posting_thread_state;
}

/// Sets the calling thread's posting state (NULL to clear it).
static inline void hn_set_posting_thread(void *_Nullable state) {
    herald_posting_thread_state = state;
}

#endif
