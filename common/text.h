/* text.h - the one rule for text that crosses a program boundary: well-formed UTF-8, and (for names, ids and other
 * one-line fields) no control characters.
 *
 * lockstepd checks every string a client sends with these before it reaches PostgreSQL, a log line or an
 * error message; the tools that write such strings can check them the same way.
 */
#ifndef COMMON_TEXT_H
#define COMMON_TEXT_H

#include <stddef.h>

/* text_utf8_valid - 1 when the `n` bytes at `s` are well-formed UTF-8 (no
 * overlong forms, no surrogates, nothing past U+10FFFF) and hold no NUL byte;
 * else 0. */
int text_utf8_valid(const char *s, size_t n);

/* text_line_valid - 1 when the `n` bytes at `s` are well-formed UTF-8 with no
 * control character at all (U+0000-U+001F, U+007F, U+0080-U+009F): a name, an
 * id or another one-line field. Else 0. */
int text_line_valid(const char *s, size_t n);

/* text_sanitize - copy `s` (NUL-terminated) into `out` (cap bytes, always
 * terminated), replacing every byte that is not part of well-formed UTF-8,
 * and every control character, with '?': the form in which text a client
 * sent may go into a log line or an error message. Returns out. */
char *text_sanitize(const char *s, char *out, size_t cap);

/* text_hex_digit - the value of hexadecimal digit `c` (0-9, a-f, A-F), or -1. */
int text_hex_digit(int c);

/* text_utf8_seq - the length of the well-formed UTF-8 sequence at s[0..n)
 * (1 to 4 bytes), or 0 when the bytes there are not one. */
size_t text_utf8_seq(const char *s, size_t n);

/* text_one_line - copy `s` (NUL-terminated) into `out` (cap bytes, always
 * terminated) as one line of well-formed UTF-8: tabs, newlines and other
 * white-space controls become a space, other control characters and bytes
 * not part of well-formed UTF-8 '?'; cut at a character boundary when it does
 * not fit, the cut marked "...". What a client sends as a descriptive field
 * (a command line) so that lockstepd takes it. Returns out. */
char *text_one_line(const char *s, char *out, size_t cap);

#endif /* COMMON_TEXT_H */
