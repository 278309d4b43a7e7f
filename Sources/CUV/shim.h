#ifndef HERALD_CUV_SHIM_H
#define HERALD_CUV_SHIM_H
#include <uv.h>
#endif
