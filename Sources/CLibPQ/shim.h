#ifndef GUESTMODE_CLIBPQ_SHIM_H
#define GUESTMODE_CLIBPQ_SHIM_H
#include <libpq-fe.h>
#endif
