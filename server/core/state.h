/* state.h - what every part of lockstepd reads once it has started: the settings, the secrets, the bound port. */
#ifndef SERVER_CORE_STATE_H
#define SERVER_CORE_STATE_H

#include <stddef.h>

#include "server/core/config.h"

/* Set up once by main before any thread starts; read-only afterwards. */
typedef struct srv_state {
    srv_config cfg;
    unsigned char *secret; /* NULL: ingest is open */
    size_t secret_len;
    char admin_token[256]; /* "": no admin token configured */
    char web_dir[4096];    /* "": no dashboard */
    int port;              /* the bound HTTP port (0 until the daemon listens) */
} srv_state;

extern srv_state g_srv;

#endif /* SERVER_CORE_STATE_H */
