// Herald is built and tested on Linux only (README.md, "Supported platforms"): the engine is libcurl and
// libuv as Linux distributions package them, and nothing else has been tried. Elsewhere, say so plainly
// instead of failing later on a missing system library or an availability error.
#if !os(Linux)
    #error("Herald supports Linux only; see README.md, \"Supported platforms\".")
#endif
