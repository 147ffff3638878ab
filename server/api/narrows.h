/* narrows.h - the replay endpoints (start a narrow, report its jobs, read it) and a run's declared checkpoints. */
#ifndef SERVER_API_NARROWS_H
#define SERVER_API_NARROWS_H

/* api_narrows_register - register the routes and prepared statements of this module. */
void api_narrows_register(void);

#endif /* SERVER_API_NARROWS_H */
