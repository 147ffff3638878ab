// shape.js - read list responses whatever their envelope: a bare array or {key: [...], total}.

/* listOf(data, key) - the array in a list response: data itself, data[key], data.items or data.data. */
export function listOf(data, key) {
  if (Array.isArray(data)) return data;
  if (!data || typeof data !== 'object') return [];
  for (const k of [key, 'items', 'data', 'results']) if (k && Array.isArray(data[k])) return data[k];
  return [];
}

/* totalOf(data) - the total count a list response reports, or undefined. */
export function totalOf(data) {
  if (!data || Array.isArray(data)) return undefined;
  for (const k of ['total', 'count_total', 'total_count']) if (typeof data[k] === 'number') return data[k];
  return undefined;
}
