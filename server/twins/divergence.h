/* divergence.h - a rank's first divergence as the comparison stored it, typed: what crosses from a twin group's
 * findings (server/twins/findings.h, which fills it) to the rules that read it (the runs' outcomes in
 * server/twins/glance.h, the fleet's rules in server/fleet/, the replay design in server/replay/), none of which
 * parses a divergence back from JSON. Each run's entry is read once, by div_entries_read; JSON is made of a
 * divergence only for answers and alerts. Table test: tests/unit/test_divergence.c.
 */
#ifndef SERVER_TWINS_DIVERGENCE_H
#define SERVER_TWINS_DIVERGENCE_H

#include <stddef.h>
#include <stdint.h>
#include <jansson.h>

#include "common/cause.h"

/* What a run's entry says of the majority: the comparison found none (unsaid), or the run is in it or not. */
typedef enum div_majority { DIV_MAJORITY_UNSAID = 0, DIV_MAJORITY_IN, DIV_MAJORITY_OUT } div_majority;

/* The scalar value a run's entry holds, as stored: none (no "value"), null (no value or not finite), an integer or
 * a real (as the stored number reads back). */
typedef enum div_value { DIV_VALUE_NONE = 0, DIV_VALUE_NULL, DIV_VALUE_INT, DIV_VALUE_REAL } div_value;

/* One run's entry at a divergence (step.c's cmp_run_entry, with restore.c's role and the majority). Strings are
 * owned (div_entries_free); a member the stored entry lacks, or holds as another type, reads as its zero: run_id
 * "", present 0, fp, value_bits and role NULL, majority unsaid (also for a "majority" that is no boolean), no
 * inputs (also when one of them is not 16 hex digits), value none (a value neither a number nor null reads as
 * null), no communicator (its ranks unlisted unless "ranks" holds all "size" of them, as integers). */
typedef struct div_entry {
    char *run_id;          /* the run's id */
    int present;           /* the run holds the record ("present": true) */
    char *fp, *value_bits; /* the record's fingerprint and scalar bits (16 hex digits each) */
    char *role;            /* a restore difference's "restored", or the reference's role */
    char *restore_status;  /* with role "restored": "differs", "not-restored" or "not-saved" ("status"), or NULL */
    long not_restored;     /* with role "restored": saved entries not restored ("not_restored"), else 0 */
    long not_saved;        /* with role "restored": restored entries never saved ("not_saved"), else 0 */
    div_majority majority; /* the run's place in the majority */
    uint64_t *inputs;      /* the record's input fingerprints (16 hex digits each as stored), ninputs of them */
    int ninputs;
    div_value value_kind; /* the scalar value: value_int for an integer, value for a real */
    double value;
    long long value_int;
    int comm_size;        /* the record's communicator ("comm"): its size, 0 when the entry states none */
    uint32_t *comm_ranks; /* its world ranks, when "comm" lists all comm_size of them (at most REC_COMM_LIST_MAX) */
    int comm_nranks;      /* how many comm_ranks holds (0: not listed) */
} div_entry;

typedef struct divergence {
    int64_t step, seq;
    int rank; /* -1: a logical tensor of runs of different rank counts (then logical is 1) */
    int occurrence;
    int logical;
    char *name;         /* the record's name */
    char *kind;         /* as stored: "restore" for a restore difference, "missing" for a record some run lacks, ... */
    char *odd_run_id;   /* the run named odd at it, NULL when none */
    json_t *runs;       /* each run's entry as stored, for answers only (the twin API's per_rank) */
    div_entry *entries; /* the same entries, typed, in their order */
    int nentries;
} divergence;

/* div_entries_read - the run entries of a stored divergence's "runs" (`runs`, borrowed) into a new array *out of
 * *n entries (the caller frees it with div_entries_free; never NULL). Anything but an array reads as no entries;
 * an element that is no object reads as an entry of zeros (div_entry). Never fails. */
void div_entries_read(const json_t *runs, div_entry **out, int *n);

/* div_entries_free - free entries e[0..n) (their strings) and the array; NULL is fine. */
void div_entries_free(div_entry *e, int n);

/* div_entry_of - the entry of run `run_id` among e[0..n), the first that names it, or NULL. */
const div_entry *div_entry_of(const div_entry *e, int n, const char *run_id);

/* div_has_majority - 1 when an entry of e[0..n) has a place in a majority (the comparison found one), else 0. */
int div_has_majority(const div_entry *e, int n);

/* div_content_key - what entry `e` holds, as a key two runs hold the same content by: "fp/value_bits" (an absent
 * fingerprint as "", absent bits as "-"), or "missing" when the run lacks the record or `e` is NULL. */
void div_content_key(const div_entry *e, char *out, size_t cap);

/* div_inputs_state - what the entries e[0..n)'s input fingerprints say, by common/cause.h's cause_inputs_of:
 * unknown with fewer than two entries or when one lacks the record or its inputs, else the same or different. */
cause_inputs div_inputs_state(const div_entry *e, int n);

/* divergences_free - free divs[0..n) (their names, kinds, odd run ids, runs and entries) and the array; NULL is
 * fine. */
void divergences_free(divergence *divs, int n);

#endif /* SERVER_TWINS_DIVERGENCE_H */
