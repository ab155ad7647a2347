// The page's language and messages. The messages are the server's catalogue for the
// language the server chose (<html lang>), fetched once before any view renders (the
// module's top-level await holds its importers back): the catalogue has one copy, in
// appservice/i18n/messages, shared with the server's pages and the PDF.

const lang = document.documentElement.lang || "en";

let messages = {};
try {
  const res = await fetch(`/app/messages/${encodeURIComponent(lang)}`, { credentials: "same-origin", headers: { Accept: "application/json" } });
  if (res.ok) messages = await res.json();
} catch {
  // Without the catalogue the page shows the keys: it still works, and says which text is missing.
}

// t is the message key with its {name} placeholders filled from params.
export function t(key, params = {}) {
  const msg = Object.hasOwn(messages, key) ? messages[key] : key;
  return msg.replace(/\{([a-zA-Z]+)\}/g, (m, name) => (Object.hasOwn(params, name) ? String(params[name]) : m));
}

// has reports whether the catalogue has key (the title of a problem code, for one).
export function has(key) {
  return Object.hasOwn(messages, key);
}

const dateFormat = new Intl.DateTimeFormat(lang, { year: "numeric", month: "2-digit", day: "2-digit" });
const timeFormat = new Intl.DateTimeFormat(lang, { hour: "2-digit", minute: "2-digit", hourCycle: "h23" });
const pad = (n) => String(n).padStart(2, "0");

// date writes a Date's day as the language does; English, the fallback of readers of
// every other language, writes ISO 8601, which American and British readers read alike.
function date(d) {
  if (lang === "en") return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}`;
  return dateFormat.format(d);
}

// dateTime writes a Date as the language does, date then time: "27.11.2026 09:12" in
// Norwegian, "2026-11-27 09:12" in Swedish and English (the PDF's i18n.DateTime writes
// the same).
export function dateTime(d) {
  return `${date(d)} ${timeFormat.format(d)}`;
}

// day writes a yyyy-MM-dd date (a birth date) as the language does, as the server's
// i18n.Day does; any other value as it is.
export function day(s) {
  const m = /^(\d{4})-(\d{2})-(\d{2})$/.exec(String(s || ""));
  return m ? date(new Date(Number(m[1]), Number(m[2]) - 1, Number(m[3]))) : s;
}

// localDateTime writes a "yyyy-MM-dd HH:mm:ss" time without a zone (a profile entry's) as
// the language does; any other value as it is.
export function localDateTime(s) {
  const m = /^(\d{4})-(\d{2})-(\d{2})[ T](\d{2}):(\d{2})(?::\d{2})?$/.exec(String(s || ""));
  return m ? dateTime(new Date(Number(m[1]), Number(m[2]) - 1, Number(m[3]), Number(m[4]), Number(m[5]))) : s;
}

// number writes a number as the language does.
export function number(n) {
  return new Intl.NumberFormat(lang).format(n);
}

// parts is the message key as pieces for h's children: its text, with each {name} the
// node (or text) params gives, so that a link or a code element can sit where the
// language puts it.
export function parts(key, params = {}) {
  const msg = Object.hasOwn(messages, key) ? messages[key] : key;
  return msg.split(/(\{[a-zA-Z]+\})/).filter((p) => p !== "").map((p) => {
    const m = /^\{([a-zA-Z]+)\}$/.exec(p);
    return m && Object.hasOwn(params, m[1]) ? params[m[1]] : p;
  });
}
