#ifndef HERALD_CIDN2_SHIM_H
#define HERALD_CIDN2_SHIM_H

// libidn2, for internationalized domain names in their ASCII (punycode) form: the Public Suffix List
// writes its rules in Unicode, while hosts reach Herald (and libcurl, which links the same library) in ASCII.

#include <idn2.h>

#endif
