/* state.c - the one instance of lockstepd's started state (server/core/state.h). */
#include "server/core/state.h"

srv_state g_srv;
