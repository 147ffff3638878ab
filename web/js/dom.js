// dom.js - build DOM nodes safely: text is always set as text, never parsed as markup.

/* h(tag, props, ...children) - create an element. props: class, text, title, href, on* (functions),
 * data-* and other plain attributes; children: nodes, strings (become text nodes), arrays, null. */
export function h(tag, props, ...children) {
  const el = document.createElement(tag);
  if (props) {
    for (const [k, v] of Object.entries(props)) {
      if (v === undefined || v === null || v === false) continue;
      if (k === 'class') el.className = v;
      else if (k === 'text') el.textContent = String(v);
      else if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v);
      else if (k === 'href') el.setAttribute('href', safeHref(v));
      else if (k === 'style' && typeof v === 'object') Object.assign(el.style, v);
      else if (k === 'value') el.value = v;
      else if (k === 'checked' || k === 'disabled' || k === 'selected') el[k] = !!v;
      else el.setAttribute(k, v === true ? '' : String(v));
    }
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    if (Array.isArray(c)) append(el, c);
    else if (c instanceof Node) el.appendChild(c);
    else el.appendChild(document.createTextNode(String(c)));
  }
}

/* safeHref - only in-app hash links, relative API paths and http(s) URLs pass; anything else
 * (javascript:, data:) becomes '#'. */
export function safeHref(v) {
  const s = String(v);
  if (s.startsWith('#') || s.startsWith('/')) return s;
  if (/^https?:\/\//i.test(s)) return s;
  return '#';
}

/* clear(el) - remove every child of el and return it. */
export function clear(el) {
  while (el.firstChild) el.removeChild(el.firstChild);
  return el;
}

/* link(route, ...children) - an in-app link to a hash route like '/runs/abc'. */
export function link(route, ...children) {
  return h('a', { href: '#' + route }, ...children);
}
