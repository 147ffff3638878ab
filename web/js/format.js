// format.js - turn API values (times, ids, fingerprints, floats) into short readable text.

/* fmtTime(v) - a timestamp (ISO string, epoch seconds or ms) as "YYYY-MM-DD HH:MM:SS" UTC, or '—'. */
export function fmtTime(v) {
  const d = toDate(v);
  if (!d) return '—';
  return d.toISOString().replace('T', ' ').replace(/\.\d+Z$/, 'Z').replace('Z', '');
}

/* toDate(v) - a Date from an ISO string or an epoch number (seconds or milliseconds), or null. */
export function toDate(v) {
  if (v === null || v === undefined || v === '') return null;
  let d;
  if (typeof v === 'number') d = new Date(v < 1e12 ? v * 1000 : v);
  else d = new Date(String(v).replace(' ', 'T'));
  return isNaN(d.getTime()) ? null : d;
}

/* fmtAgo(v) - "5 s ago", "3 min ago", "2 h ago", "4 d ago". */
export function fmtAgo(v) {
  const d = toDate(v);
  if (!d) return '—';
  const s = Math.round((Date.now() - d.getTime()) / 1000);
  if (s < 0) return 'just now';
  if (s < 60) return `${s} s ago`;
  if (s < 3600) return `${Math.floor(s / 60)} min ago`;
  if (s < 86400) return `${Math.floor(s / 3600)} h ago`;
  return `${Math.floor(s / 86400)} d ago`;
}

/* shortId(id) - the first 8 characters of a UUID. */
export function shortId(id) {
  return id ? String(id).slice(0, 8) : '—';
}

/* fmtValue(v) - a record's value: numbers with full precision, null as '—'. */
export function fmtValue(v) {
  if (v === null || v === undefined) return '—';
  if (typeof v === 'number') return Object.is(v, -0) ? '-0' : String(v);
  return String(v);
}

/* fmtFp(fp) - a 64-bit fingerprint as 16 lowercase hex digits, grouped in fours. */
export function fmtFp(fp) {
  if (fp === null || fp === undefined || fp === '') return '—';
  const s = String(fp).toLowerCase().replace(/^0x/, '');
  return s.replace(/(.{4})(?=.)/g, '$1 ');
}

/* fmtCount(n) - 12345 as "12,345". */
export function fmtCount(n) {
  if (n === null || n === undefined || n === '') return '—';
  const x = Number(n);
  return Number.isFinite(x) ? x.toLocaleString('en-US') : String(n);
}

/* fmtRate(r) - a rate (0..1) as a percentage with one decimal, "19.0%": how every page writes the fleet baseline and
 * a node's rates, as lockstepd's alerts do (docs/suspects.md, "The fleet baseline"). */
export function fmtRate(r) {
  if (r === null || r === undefined || !Number.isFinite(Number(r))) return '—';
  return `${(Number(r) * 100).toFixed(1)}%`;
}
