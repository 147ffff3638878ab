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

/* ulpDistance(a, b, dtype) - how many representable values of dtype lie between a and b
 * (as a BigInt), or null when it does not apply (missing, non-finite, or not a float type). */
export function ulpDistance(a, b, dtype) {
  if (typeof a !== 'number' || typeof b !== 'number') return null;
  if (!Number.isFinite(a) || !Number.isFinite(b)) return null;
  const t = (dtype || 'f64').toLowerCase();
  const ord = t === 'f32' || t === 'float32' ? ord32 : (t === 'f64' || t === 'float64' ? ord64 : null);
  if (!ord) return null;
  const d = ord(a) - ord(b);
  return d < 0n ? -d : d;
}

const buf = new DataView(new ArrayBuffer(8));

function ord64(x) {
  buf.setFloat64(0, x);
  const bits = buf.getBigInt64(0);
  return bits < 0n ? -(bits & 0x7fffffffffffffffn) : bits;
}

function ord32(x) {
  buf.setFloat32(0, x);
  const bits = buf.getInt32(0);
  return BigInt(bits < 0 ? -(bits & 0x7fffffff) : bits);
}

/* fmtCount(n) - 12345 as "12,345". */
export function fmtCount(n) {
  if (n === null || n === undefined || n === '') return '—';
  const x = Number(n);
  return Number.isFinite(x) ? x.toLocaleString('en-US') : String(n);
}

const WIDTH = { f64: 64, float64: 64, f32: 32, float32: 32, f16: 16, float16: 16, bf16: 16, bfloat16: 16 };

/* ulpFromBits(a, b, dtype) - the ULP distance between two values given as their IEEE bits in hex
 * (value_bits), as a BigInt; null when a bit pattern is missing, a NaN, or dtype is not a float type. */
export function ulpFromBits(a, b, dtype) {
  const w = WIDTH[String(dtype || '').toLowerCase()];
  if (!w || !a || !b) return null;
  const oa = ordered(BigInt('0x' + a), w), ob = ordered(BigInt('0x' + b), w);
  if (oa === null || ob === null) return null;
  const d = oa - ob;
  return d < 0n ? -d : d;
}

function ordered(bits, w) {
  const W = BigInt(w);
  const mask = (1n << W) - 1n;
  bits &= mask;
  const sign = 1n << (W - 1n);
  const mag = bits & (sign - 1n);
  const expBits = { 64: 11n, 32: 8n, 16: 5n }[w];
  const manBits = W - 1n - expBits;
  const expMax = ((1n << expBits) - 1n) << manBits;
  if ((mag & expMax) === expMax && (mag & ((1n << manBits) - 1n)) !== 0n) return null;   // NaN
  return bits & sign ? -mag : mag;
}

/* ulpOf(a, b, dtype) - ULP distance of two record cells {value, value_bits}: from the bits when both have
 * them, else from the numbers. */
export function ulpOf(a, b, dtype) {
  if (a && b && a.value_bits && b.value_bits) return ulpFromBits(a.value_bits, b.value_bits, dtype);
  return ulpDistance(a && a.value, b && b.value, dtype);
}
