/* words.h - argument vectors as text: the one word splitter (a resume template, an operator's launcher) and the one
 * quoting of a word for sh (the batch script of a replay).
 *
 * A job's command never reaches a shell as text: lockstepd keeps it as a vector (the step's argv), a template is
 * split into words before its placeholders are filled in (so a value never makes a new word), and the CLI writes
 * every word of a replay's script through words_quote. The splitter knows the shell's quoting and none of its
 * meanings: white space separates words; '...' keeps everything; "..." keeps everything but a backslash before
 * " \ $ or ` (which stands for that character); outside quotes a backslash keeps the next character; '#', ';',
 * '|', '&', '$', '*', '(' and the rest are ordinary characters. Pure, no allocation.
 * Tested in tests/unit/test_words.c (the quoting by running sh on what it makes).
 */
#ifndef COMMON_WORDS_H
#define COMMON_WORDS_H

#include <stddef.h>

/* words_split - the words of `s` (the rules above) into `buf` (cap bytes; strlen(s) + 1 always suffices), with a
 * pointer to each in words[0..max). Returns how many (0 for blank text), or -1 with the reason in `why`: a quote
 * that does not end, a backslash at the end, more than `max` words, or `buf` too small. */
int words_split(const char *s, char *buf, size_t cap, char **words, int max, char *why, size_t wcap);

/* words_quote - `s` as one sh word that stands for exactly its bytes, whatever they are (quotes, $, `, newlines,
 * bytes that are not UTF-8, an empty string): single-quoted, each ' written as '\''. Written into `out` (always
 * terminated when cap > 0). Returns the length of the whole quoted word, as snprintf does: the word is cut when
 * that is >= cap, and the caller must then not use it. */
size_t words_quote(const char *s, char *out, size_t cap);

/* words_join - the words v[0..n) as text for people, a word quoted by words_quote only when it holds anything but
 * letters, digits and @%+=:,./_- or is empty (so the text is also what sh would run as these words; a control
 * character stays inside its quotes: text_one_line makes the text one line). Written into `out`; returns the
 * whole length as snprintf does (cut when >= cap). */
size_t words_join(char *const *v, int n, char *out, size_t cap);

#endif /* COMMON_WORDS_H */
