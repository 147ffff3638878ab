/* convert.h - the one-time move of a database's records from the row layout (records_rows: one row per record, before
 * migration 010) into frames. */
#ifndef SERVER_STORE_CONVERT_H
#define SERVER_STORE_CONVERT_H

/* store_convert_rows - when records_rows exists (migration 010 renamed the
 * old records table), convert its rows into record_frames segments, rank by
 * rank and at most CONVERT_ROWS rows per transaction (each deleting the rows
 * it converted, keeping their day for retention), then drop it. Runs on its
 * own connection under an advisory lock, so that two lockstepd starting at
 * once convert each row once; a conversion cut short (kill -9) goes on at the
 * next start. Returns 0 when nothing is left to convert, -1 after logging. */
int store_convert_rows(const char *conninfo);

#endif /* SERVER_STORE_CONVERT_H */
