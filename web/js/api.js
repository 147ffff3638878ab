// api.js - the dashboard's only door to lockstepd's read API (same origin, JSON).

/* ApiError - a failed call: status (0 when the server could not be reached), and the server's
 * {error, detail, hint} when it sent one. */
export class ApiError extends Error {
  constructor(status, error, detail, hint, path) {
    super(error);
    this.status = status;
    this.detail = detail || '';
    this.hint = hint || '';
    this.path = path;
  }
  get notFound() { return this.status === 404; }
  /* missingEndpoint - this server has no such endpoint at all (as opposed to: no such run or group). */
  get missingEndpoint() {
    return this.status === 404 && (/^no endpoint/i.test(this.detail) || (!this.detail && /^HTTP 404/.test(this.message)));
  }
}

const callWatchers = [];

/* onCall(fn) - after every call, fn(null) when lockstepd answered it (a 4xx such as "no such run" is an answer),
 * fn(err) with the ApiError when it could not be reached, failed as a server (5xx) or sent something that is not
 * JSON; fn(err, path) also gets the API path called ('/health', '/runs', ...). */
export function onCall(fn) {
  callWatchers.push(fn);
}

function report(err, path) {
  for (const fn of callWatchers) {
    try { fn(err, path); } catch (e) { console.warn(e); }
  }
}

/* qs(params) - a query string from an object, skipping empty values. */
export function qs(params) {
  const u = new URLSearchParams();
  for (const [k, v] of Object.entries(params || {})) {
    if (v === undefined || v === null || v === '') continue;
    u.set(k, String(v));
  }
  const s = u.toString();
  return s ? '?' + s : '';
}

/* apiGet(path, params) - GET /api/v1 + path; resolves to the parsed JSON, rejects with ApiError. */
export function apiGet(path, params) {
  return request('GET', path + qs(params));
}

/* apiPost(path, body, token) - POST JSON, with a bearer token when given. */
export function apiPost(path, body, token) {
  return request('POST', path, body, token);
}

async function request(method, path, body, token) {
  const url = '/api/v1' + path;
  const headers = { Accept: 'application/json' };
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  if (token) headers.Authorization = 'Bearer ' + token;
  let res;
  try {
    res = await fetch(url, { method, headers, body: body === undefined ? undefined : JSON.stringify(body),
                             cache: 'no-store' });
  } catch (e) {
    const err = new ApiError(0, 'The server could not be reached', String(e && e.message || e),
                             'Check that lockstepd is running and reachable, then reload.', url);
    report(err, path);
    throw err;
  }
  let data = null;
  const text = await res.text();
  if (text) {
    try { data = JSON.parse(text); } catch (e) { data = null; }
  }
  if (!res.ok) {
    const d = data && typeof data === 'object' ? data : {};
    const err = new ApiError(res.status, d.error || `HTTP ${res.status} from ${url}`, d.detail, d.hint, url);
    report(res.status >= 500 ? err : null, path);
    throw err;
  }
  if (data === null && text) {
    const err = new ApiError(res.status, 'The server sent something that is not JSON', url,
                             'Is --web-dir or a proxy answering API paths? Check the lockstepd log.', url);
    report(err, path);
    throw err;
  }
  report(null, path);
  return data;
}
