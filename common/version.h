/* version.h - the release and the commit this build is, as every program reports them (--version, /health, metrics).
 *
 * deploy/version.sh is the one source: the Makefile compiles its answers into common/version.o (common/common.mk),
 * which is rebuilt when either changes; the Debian packages take their version from the same script.
 */
#ifndef COMMON_VERSION_H
#define COMMON_VERSION_H

/* version_release - the release this tree is or follows ("0.1.0"), a static string. */
const char *version_release(void);

/* version_commit - the commit it was built from (12 hexadecimal digits), or "unknown" outside a checkout that
 * knows it; a static string. */
const char *version_commit(void);

#endif /* COMMON_VERSION_H */
