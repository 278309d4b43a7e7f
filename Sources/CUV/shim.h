#ifndef HERALD_CUV_SHIM_H
#define HERALD_CUV_SHIM_H
#include <uv.h>
/* The engine wakes its loop through an eventfd of its own (Engine.swift). */
#include <sys/eventfd.h>
#endif
