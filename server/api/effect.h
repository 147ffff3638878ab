/* effect.h - GET /api/v1/compare: the impact of an intentional change against the run-to-run noise band, and the
 * records where it first shows. */
#ifndef SERVER_API_EFFECT_H
#define SERVER_API_EFFECT_H

/* api_effect_register - prepare the statements and add to the route table
 *   GET /api/v1/compare?base=B&changed=C[&noise=N][&rank=0][&from=&to=][&alpha=0.01][&series=1]
 *     B, C, N: twin groups or run ids, comma-separated. The first record where each changed run departs
 *     from BASE (first_effect), per shared scalar metric the deviation step by step, the noise band from N,
 *     and the verdicts of the rule in server/rules/noise.h (docs/compare.md);
 *   GET /api/v1/compare/records?base=RUN&changed=RUN&rank=R&step=S
 *     the two runs' records at one step and rank side by side, as GET /api/v1/twins/{group}/records. */
void api_effect_register(void);

#endif /* SERVER_API_EFFECT_H */
