// The parts of the shell around the views: the contact-in-focus bar (rendered by the server
// first, kept current here), the notice banner and the navigation highlight.

import { h, replace } from "./dom.js";
import { invalid } from "./api.js";
import { personName } from "./state.js";
import { t, day } from "./i18n.js";

// renderFocus shows the session's person in focus and case, with the same ids as the
// server-rendered bar. When the bar has the right parts already it only changes what
// differs, so an element someone holds (a screen reader, a browser test reading the
// server-rendered values) stays in the document.
export function renderFocus(status) {
  const bar = document.getElementById("focus");
  if (!bar || !status) return;
  const p = status.person;
  const personText = p ? {
    "contact-name": personName(p),
    "contact-birthdate": p.birthDate ? day(p.birthDate) : t("focus.not_given"),
    "contact-partner-id": (p.partnerIds || []).join(", ") || p.customId || "",
  } : {};
  const personHref = p ? `/app/persons/${encodeURIComponent(p.id)}` : "";
  const caseHref = status.caseId ? `/app/cases/${encodeURIComponent(status.caseId)}` : "";
  const has = (id) => document.getElementById(id) !== null;
  if (has("contact-name") === Boolean(p) && has("case") === Boolean(status.caseId)) {
    for (const [id, text] of Object.entries({ ...personText, case: status.caseId || "" })) {
      const el = document.getElementById(id);
      if (el && el.textContent !== text) el.textContent = text;
    }
    const links = { "contact-link": personHref, "case-link": caseHref };
    for (const [id, href] of Object.entries(links)) {
      const el = document.getElementById(id);
      if (el && href && el.getAttribute("href") !== href) el.setAttribute("href", href);
    }
    return;
  }
  const items = [];
  if (p) {
    items.push(h("span", { class: "label" }, t("focus.label")), " ",
      h("a", { id: "contact-link", href: personHref }, h("strong", { id: "contact-name" }, personText["contact-name"])), " ",
      h("span", { class: "label" }, t("focus.birthdate")), " ", h("span", { id: "contact-birthdate" }, personText["contact-birthdate"]), " ",
      h("span", { class: "label" }, t("focus.partner_id")), " ", h("code", { id: "contact-partner-id" }, personText["contact-partner-id"]));
  } else {
    items.push(h("span", { id: "no-contact" }, t("focus.none")));
  }
  if (status.caseId) {
    items.push(" ", h("span", { class: "label" }, t("focus.case")), " ",
      h("a", { id: "case-link", href: caseHref }, h("code", { id: "case" }, status.caseId)));
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
    href ? h("a", { id: "notice-link", href, rel: "noopener noreferrer", target: "_blank" }, t("notice.download")) : null,
    h("button", { type: "button", class: "link", id: "notice-close", "aria-label": t("notice.close"), on: { click: () => { banner.hidden = true; } } }, "×"));
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
