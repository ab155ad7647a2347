// The parts of the shell around the views: the contact-in-focus bar (rendered by the server
// first, kept current here), the notice banner and the navigation highlight.

import { h, replace } from "./dom.js";
import { invalid } from "./api.js";
import { personName } from "./state.js";

// renderFocus shows the session's person in focus and case, with the same ids as the
// server-rendered bar.
export function renderFocus(status) {
  const bar = document.getElementById("focus");
  if (!bar || !status) return;
  const p = status.person;
  const items = [];
  if (p) {
    items.push(h("span", { class: "label" }, "Contact in focus"), " ",
      h("a", { id: "contact-link", href: `/app/persons/${encodeURIComponent(p.id)}` }, h("strong", { id: "contact-name" }, personName(p))), " ",
      h("span", { class: "label" }, "Birthdate"), " ", h("span", { id: "contact-birthdate" }, p.birthDate || "not given"), " ",
      h("span", { class: "label" }, "Partner id"), " ", h("code", { id: "contact-partner-id" }, (p.partnerIds || []).join(", ") || p.customId || ""));
  } else {
    items.push(h("span", { id: "no-contact" }, "No contact in focus. Open the application from your partner application, or pick a person under Persons."));
  }
  if (status.caseId) {
    items.push(" ", h("span", { class: "label" }, "Case"), " ",
      h("a", { id: "case-link", href: `/app/cases/${encodeURIComponent(status.caseId)}` }, h("code", { id: "case" }, status.caseId)));
  }
  replace(bar, items);
}

// httpURL returns url when it is an absolute http(s) URL, else throws invalid_argument.
function httpURL(url) {
  let u;
  try {
    u = new URL(String(url));
  } catch {
    throw invalid("url", "must be an absolute http or https URL");
  }
  if (u.protocol !== "http:" && u.protocol !== "https:") throw invalid("url", "must be an absolute http or https URL");
  return u.href;
}

// showNotice shows text (and a download link, when url is given) in the banner.
export function showNotice(text, url) {
  if (typeof text !== "string" || text.trim() === "") throw invalid("text", "required");
  if (text.length > 1000) throw invalid("text", "at most 1000 characters");
  const href = url === undefined || url === null || url === "" ? "" : httpURL(url);
  const banner = document.getElementById("notice");
  replace(banner,
    h("span", { id: "notice-text" }, text),
    href ? h("a", { id: "notice-link", href, rel: "noopener noreferrer", target: "_blank" }, "Download") : null,
    h("button", { type: "button", class: "link", id: "notice-close", "aria-label": "Close notice", on: { click: () => { banner.hidden = true; } } }, "×"));
  banner.hidden = false;
}

// highlight marks the navigation link of the current view.
export function highlight(pathname) {
  for (const a of document.querySelectorAll("#nav a[data-nav]")) {
    const base = a.dataset.nav;
    const current = base === "/app" || base === "/go" ? pathname === base : pathname === base || pathname.startsWith(base + "/");
    if (current) a.setAttribute("aria-current", "page");
    else a.removeAttribute("aria-current");
  }
}
