/* version.c - the release and the commit this build is (common/version.h); both come from deploy/version.sh. */
#include "common/version.h"

#ifndef LOCKSTEP_VERSION
#define LOCKSTEP_VERSION "unknown"
#endif
#ifndef LOCKSTEP_COMMIT
#define LOCKSTEP_COMMIT "unknown"
#endif

const char *version_release(void)
{
    return LOCKSTEP_VERSION;
}

const char *version_commit(void)
{
    return LOCKSTEP_COMMIT;
}
