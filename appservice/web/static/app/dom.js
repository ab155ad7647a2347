// DOM building without HTML strings: every text goes in as a text node, so a name or an
// instruction from the database can never become markup (and nothing needs innerHTML).

import { t, dateTime, number } from "./i18n.js";

// h creates an element. attrs: class, id, for, href, type, value, name, ..., "data-*",
// "aria-*", on: {event: handler}; true/false for boolean attributes; null/undefined skip.
// children: nodes, strings, numbers, arrays of those, or null/false (skipped).
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (key === "on") {
      for (const [event, handler] of Object.entries(value)) el.addEventListener(event, handler);
    } else if (key === "value" && "value" in el) {
      el.value = String(value);
    } else if (value === true) {
      el.setAttribute(key, "");
    } else {
      el.setAttribute(key, String(value));
    }
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    if (Array.isArray(child)) append(el, child);
    else if (child instanceof Node) el.appendChild(child);
    else el.appendChild(document.createTextNode(String(child)));
  }
}

// replace empties el and fills it with children.
export function replace(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

// field is a label and its control, tied by id.
export function field(label, control) {
  return h("div", { class: "field" }, h("label", { for: control.id }, label), control);
}

// select builds a <select> with an "any" option and the given values.
export function select(id, name, anyLabel, values, current) {
  return h("select", { id, name },
    h("option", { value: "" }, anyLabel),
    values.map((v) => h("option", { value: v, selected: v === current }, v)));
}

// dl renders [term, description] pairs, skipping empty descriptions.
export function dl(pairs, attrs = {}) {
  return h("dl", attrs, pairs.filter(([, d]) => d !== "" && d !== null && d !== undefined)
    .map(([t, d, id]) => [h("dt", {}, t), h("dd", { id }, d)]));
}

// formatDate shows an RFC 3339 time as a local date and time in the page's language.
export function formatDate(s) {
  if (!s) return "";
  const d = new Date(s);
  return Number.isNaN(d.getTime()) ? s : dateTime(d);
}

// dose is an exercise item's dose in words: "3 × 10, hold 30 s, 5 kg, rest 60 s".
export function dose(item) {
  const parts = [];
  if (item.sets || item.reps) parts.push(`${item.sets || 1} × ${item.reps || "–"}`);
  if (item.holdSeconds) parts.push(t("dose.hold", { seconds: item.holdSeconds }));
  if (item.load) parts.push(item.load);
  if (item.restSeconds) parts.push(t("dose.rest", { seconds: item.restSeconds }));
  return parts.join(", ");
}

// paragraphs splits a text on blank lines or line breaks into <p> elements.
export function paragraphs(text, attrs = {}) {
  return h("div", attrs, String(text || "").split(/\n+/).filter((s) => s.trim() !== "").map((s) => h("p", {}, s)));
}

// exerciseCount is "1 exercise" or "3 exercises" in the page's language.
export function exerciseCount(n) {
  return t(n === 1 ? "count.exercise" : "count.exercises", { n: number(n) });
}
