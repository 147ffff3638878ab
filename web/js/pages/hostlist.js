// hostlist.js - expand Slurm hostlists ("n[1-3,7],gpu01") into host names.

/* expandHostlist(s) - every host named by s; ranges keep their zero padding ("n[01-03]" -> n01 n02 n03).
 * At most 100,000 names; a malformed part is kept as it is. */
export function expandHostlist(s) {
  const out = [];
  for (const part of splitTop(String(s || ''))) {
    const m = part.match(/^([^[\]]*)\[([^\]]+)\](.*)$/);
    if (!m) { if (part) out.push(part); continue; }
    const [, pre, body, rest] = m;
    const tails = rest ? expandHostlist(rest) : [''];
    for (const r of body.split(',')) {
      const mm = r.match(/^(\d+)-(\d+)$/);
      const nums = mm ? range(mm[1], mm[2]) : [r];
      for (const n of nums) for (const t of tails) { if (out.length < 100000) out.push(pre + n + t); }
    }
  }
  return out;
}

function range(a, b) {
  const width = a.length, lo = parseInt(a, 10), hi = parseInt(b, 10), out = [];
  for (let i = lo; i <= hi && out.length < 100000; i++) out.push(String(i).padStart(width, '0'));
  return out;
}

function splitTop(s) {
  const parts = [];
  let depth = 0, cur = '';
  for (const ch of s) {
    if (ch === '[') depth++;
    if (ch === ']') depth--;
    if (ch === ',' && depth === 0) { parts.push(cur.trim()); cur = ''; } else cur += ch;
  }
  if (cur.trim()) parts.push(cur.trim());
  return parts;
}
