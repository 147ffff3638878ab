/* twins.h - the twin group read endpoints: group status and divergences, per-step map, manifest diff. */
#ifndef SERVER_TWINS_H
#define SERVER_TWINS_H

/* twins_register - register this module's prepared statements. */
void twins_register(void);

#endif /* SERVER_TWINS_H */
