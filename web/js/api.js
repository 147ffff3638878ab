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
    throw new ApiError(0, 'The server could not be reached', String(e && e.message || e),
                       'Check that lockstepd is running and reachable, then reload.', url);
  }
  let data = null;
  const text = await res.text();
  if (text) {
    try { data = JSON.parse(text); } catch (e) { data = null; }
  }
  if (!res.ok) {
    const d = data && typeof data === 'object' ? data : {};
    throw new ApiError(res.status, d.error || `HTTP ${res.status} from ${url}`, d.detail, d.hint, url);
  }
  if (data === null && text) {
    throw new ApiError(res.status, 'The server sent something that is not JSON', url,
                       'Is --web-dir or a proxy answering API paths? Check the lockstepd log.', url);
  }
  return data;
}
