// History API routing over the view paths the server answers with the shell (shell.go
// lists the same ones): a reload or a deep link shows the view its address names, links
// inside the application change the view without reloading, back and forward work.

import { h, replace } from "./dom.js";
import { t, parts } from "./i18n.js";
import { errorText } from "./errors.js";

const routes = [];
let notFound = () => h("p", {}, t("app.not_found"));
let shown = 0; // the latest render wins when views load concurrently
let afterRender = () => {};
const baseTitle = document.title;

// route adds a view for pattern ("/app/persons/:id"); view({params, query, data}) returns
// an element or a Promise of one.
export function route(pattern, view) {
  const names = [];
  const re = new RegExp("^" + pattern.replace(/:(\w+)/g, (_, n) => {
    names.push(n);
    return "([^/]+)";
  }) + "/?$");
  routes.push({ re, names, view });
}

export function setNotFound(view) {
  notFound = view;
}

// onRender registers what to do after each view is shown (the navigation highlight).
export function onRender(fn) {
  afterRender = fn;
}

function match(pathname) {
  for (const r of routes) {
    const m = r.re.exec(pathname);
    if (m) {
      const params = {};
      r.names.forEach((n, i) => { params[n] = decodeURIComponent(m[i + 1]); });
      return { view: r.view, params };
    }
  }
  return { view: notFound, params: {} };
}

// render shows the view for the current address; data, when given, is what the view
// would otherwise fetch (window.svcApp fetched it already). It resolves when the view is
// on the page, and rejects with the view's error after showing it.
async function render(data) {
  const ticket = ++shown;
  const url = new URL(window.location.href);
  const { view, params } = match(url.pathname);
  const main = document.getElementById("view");
  main.setAttribute("aria-busy", "true");
  let el;
  let failure;
  try {
    el = await view({ params, query: url.searchParams, data });
  } catch (e) {
    failure = e;
    el = errorView(e);
  }
  if (ticket !== shown) return; // a later navigation took over
  main.removeAttribute("aria-busy");
  if (el) {
    replace(main, el);
    const h1 = main.querySelector("h1");
    document.title = h1 ? `${h1.textContent} · ${baseTitle}` : baseTitle;
  }
  afterRender(url.pathname);
  if (failure) throw failure;
}

// errorView shows a view's failure; none for an ended session, whose view main.js shows.
function errorView(e) {
  if (e && e.code === "session_required") return null;
  return h("section", { class: "card", id: "view-error", "data-testid": "view-error" },
    h("h1", {}, t("app.error_title")),
    h("p", { class: "error", id: "view-error-message" }, errorText(e)),
    e && e.code ? h("p", { class: "hint" }, parts("app.error_code", { code: h("code", { id: "view-error-code" }, e.code) })) : null);
}

// navigate shows path (with its query) as a new history entry, or in place of the current
// one with replace; data as for render.
export function navigate(path, { replace: inPlace = false, data } = {}) {
  const target = new URL(path, window.location.origin);
  const current = window.location.pathname + window.location.search;
  const next = target.pathname + target.search;
  if (inPlace || next === current) window.history.replaceState(null, "", next);
  else window.history.pushState(null, "", next);
  return render(data);
}

// refresh shows the current view again with fresh data.
export function refresh() {
  return render().catch(() => {});
}

// ours reports whether a link is one the router shows without a page load: same origin,
// a view path (not the API, not a static file, not the sign-in pages), no target, no
// download, no modifier keys.
function ours(a, event) {
  if (event.defaultPrevented || event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return false;
  if (a.target && a.target !== "_self") return false;
  if (a.hasAttribute("download") || a.origin !== window.location.origin) return false;
  const p = a.pathname;
  if (p.startsWith("/app/api/") || p.startsWith("/app/static/")) return false;
  return routes.some((r) => r.re.test(p));
}

// moveFocus puts the keyboard focus and the screen at the top of a view the person
// opened by a link, as a page load would.
function moveFocus() {
  window.scrollTo(0, 0);
  document.getElementById("view").focus({ preventScroll: true });
}

// start shows the current address and takes over links and back/forward.
export function start() {
  document.addEventListener("click", (event) => {
    const a = event.target instanceof Element ? event.target.closest("a[href]") : null;
    if (!a || !ours(a, event)) return;
    event.preventDefault();
    navigate(a.pathname + a.search).catch(() => {}).finally(moveFocus);
  });
  window.addEventListener("popstate", () => { render().catch(() => {}); });
  return render();
}

// formNavigate makes a search form change the address (?q=…) instead of submitting, so the
// search is a deep link too.
export function formNavigate(form, path) {
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const q = new URLSearchParams();
    for (const [k, v] of new FormData(form)) if (String(v).trim() !== "") q.set(k, String(v).trim());
    const s = q.toString();
    navigate(path + (s ? `?${s}` : "")).catch(() => {});
  });
  return form;
}
