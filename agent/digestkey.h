/* digestkey.h - the key the manifest digests secret-named variables with: the plugin's, else the user's own file. */
#ifndef AGENT_DIGESTKEY_H
#define AGENT_DIGESTKEY_H

#include <stddef.h>

#define DIGESTKEY_MAX 64 /* most bytes of a key */

/* digestkey_load - the key into `key`, its length into *len:
 *   LOCKSTEP_DIGEST_KEY when set (the SPANK plugin's per-user key, 64 hex digits; other text is used as it is),
 *   else the user's key file $XDG_CONFIG_HOME/lockstep/digest-key (~/.config/lockstep/digest-key), which must be
 *   a regular file of this user with mode 0600 or 0400 holding 64 hex digits; when it is missing it is created
 *   so (32 random bytes; the first of several ranks to create it wins, the others read it).
 * Returns 0, or -1 with the reason in `why` (no home directory, a key file that is not private, a file system
 * that refuses): the caller then records no digest. The key file is read, and made, only here. */
int digestkey_load(unsigned char key[DIGESTKEY_MAX], size_t *len, char *why, size_t cap);

#endif /* AGENT_DIGESTKEY_H */
