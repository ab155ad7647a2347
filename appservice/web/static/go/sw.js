// Go's service worker (docs/appservice.md, Go on the phone), served at /go/sw.js with the
// scope /go. It keeps what a member last saw readable without a connection (a gym without
// signal): every answer it keeps comes from the network first, so online nothing changes,
// and only when the network fails does the page get the kept copy.
//
// What it keeps, in two caches:
// - go-static-v1: the modules, style sheets, message catalogues and icons (/app/static/,
//   /app/messages/), which hold nothing of a member;
// - go-member-v1-<owner>: the Go shell pages and the API answers of one member's session
//   (status, me/workouts, workouts/{id}), and every plan the list names, fetched when the
//   list comes, so that a plan not opened yet is readable too. <owner> is the key the
//   server sends in Go-Offline-Owner with each of these answers.
// What it forgets, and when:
// - every member cache as soon as an answer of the server comes without that key (signed
//   out, session ended, an instructor in the browser: 200, 401, 403 or a redirect) or with
//   another (another member, or another clinic's view of the same one); a failure of the
//   server (5xx) or a 404 without a session's key changes nothing;
// - everything it keeps when the page says so ({type: "forget"}): at sign-out, and when
//   the session ended. Answers still on their way then are not kept.

"use strict";

const STATIC = "go-static-v1";
const MEMBER = "go-member-v1-";
const OWNER = "Go-Offline-Owner";

// epoch counts the forgets: an answer that was asked for before one is not kept after it.
let epoch = 0;
// queue runs the cache changes one after another, so that a forget and a keep never mix.
let queue = Promise.resolve();

function serially(fn) {
  const next = queue.then(fn);
  queue = next.catch(() => {});
  return next;
}

self.addEventListener("install", (event) => {
  event.waitUntil(self.skipWaiting());
});

self.addEventListener("activate", (event) => {
  event.waitUntil((async () => {
    // Caches of another version of this worker hold nothing this one reads.
    for (const name of await caches.keys()) {
      if (name.startsWith("go-") && name !== STATIC && !name.startsWith(MEMBER)) await caches.delete(name);
    }
    await self.clients.claim();
  })());
});

// kindOf is what the worker does with a request: "page" (a Go view's shell), "member" (an
// API answer of the member's session), "static", or null (not its business: the network
// answers as if there were no worker).
function kindOf(url, request) {
  if (url.origin !== self.location.origin || request.method !== "GET") return null;
  const p = url.pathname;
  if (request.mode === "navigate") return p === "/go" || (p.startsWith("/go/") && p !== "/go/sw.js" && p !== "/go/manifest.webmanifest") ? "page" : null;
  if (p.startsWith("/app/static/") || p.startsWith("/app/messages/")) return "static";
  if (p === "/app/api/status" || p === "/app/api/me/workouts" || /^\/app\/api\/workouts\/[^/]+$/.test(p)) return "member";
  return null;
}

// keyOf is the address an answer is kept under: the Go shell is one page for every Go view
// (the modules draw the view the address names), kept once under /go; an API answer under
// its whole address.
function keyOf(kind, url) {
  return kind === "page" ? url.origin + "/go" : url.href;
}

self.addEventListener("fetch", (event) => {
  const url = new URL(event.request.url);
  const kind = kindOf(url, event.request);
  if (kind) event.respondWith(answer(event, kind, url));
});

async function answer(event, kind, url) {
  const asked = epoch;
  let res;
  try {
    res = await fetch(event.request);
  } catch (err) {
    const kept = await fromCache(kind, url);
    if (kept) return kept;
    throw err;
  }
  await keep(kind, url, res.clone(), asked);
  if (kind === "member" && url.pathname === "/app/api/me/workouts" && res.ok) {
    event.waitUntil(keepPlans(res.clone(), asked).catch(() => {}));
  }
  return res;
}

// keep keeps the answer res to url, or forgets what it kept when res says the member is
// another or none (see the top).
function keep(kind, url, res, asked) {
  return serially(async () => {
    if (asked !== epoch) return;
    if (kind === "static") {
      if (res.ok && res.type === "basic") await (await caches.open(STATIC)).put(keyOf(kind, url), res);
      return;
    }
    const owner = res.type === "basic" ? res.headers.get(OWNER) : null;
    if (!owner) {
      // Signed out or ended (401), not a member's session (403, a redirect to the instructor's
      // application), or a page of no session (Go's start page): nothing of a member stays.
      if (res.type === "opaqueredirect" || res.ok || res.status === 401 || res.status === 403) await forgetMembers();
      return;
    }
    const name = MEMBER + owner;
    for (const other of await caches.keys()) {
      if (other.startsWith(MEMBER) && other !== name) await caches.delete(other);
    }
    const cache = await caches.open(name);
    if (res.ok) await cache.put(keyOf(kind, url), res);
    else if (res.status === 404 && kind === "member") await cache.delete(keyOf(kind, url)); // a plan no longer the member's
  });
}

// keepPlans keeps every plan the list answer names, fetching those not kept yet or changed
// since, and drops kept plans the list no longer names.
async function keepPlans(list, asked) {
  const { workouts = [] } = await list.json();
  const want = new Map(workouts.map((w) => [new URL(`/app/api/workouts/${encodeURIComponent(w.id)}`, self.location.origin).href, w]));
  const cache = await memberCache();
  if (!cache) return;
  for (const req of await cache.keys()) {
    if (/^\/app\/api\/workouts\/[^/]+$/.test(new URL(req.url).pathname) && !want.has(req.url)) await cache.delete(req);
  }
  for (const [href, w] of want) {
    const kept = await cache.match(href);
    if (kept) {
      const plan = await kept.json().catch(() => null);
      if (plan && plan.lastChangedAt === w.lastChangedAt) continue;
    }
    if (asked !== epoch) return;
    const res = await fetch(href, { credentials: "same-origin", headers: { Accept: "application/json" } });
    await keep("member", new URL(href), res, asked);
  }
}

// memberCache is the member cache there is, or null.
async function memberCache() {
  const name = (await caches.keys()).find((n) => n.startsWith(MEMBER));
  return name ? caches.open(name) : null;
}

// fromCache is the kept answer to url, for a request the network did not answer.
async function fromCache(kind, url) {
  const cache = kind === "static" ? await caches.open(STATIC) : await memberCache();
  if (!cache) return null;
  return (await cache.match(keyOf(kind, url))) || null;
}

function forgetMembers() {
  return (async () => {
    for (const name of await caches.keys()) {
      if (name.startsWith(MEMBER)) await caches.delete(name);
    }
  })();
}

// forget drops everything the worker keeps, and whatever is on its way to be kept.
function forget() {
  epoch++;
  return serially(async () => {
    for (const name of await caches.keys()) {
      if (name.startsWith("go-")) await caches.delete(name);
    }
  });
}

// seen keeps what a page loaded before this worker controlled it (its first visit): the
// page's own address and the resources it fetched, asked for again through the network.
async function seen(urls) {
  const asked = epoch;
  for (const u of urls) {
    let url;
    try {
      url = new URL(u);
    } catch {
      continue;
    }
    const kind = kindOf(url, { method: "GET", mode: url.href === urls[0] ? "navigate" : "cors" });
    if (!kind) continue;
    try {
      const res = await fetch(url.href, { credentials: "same-origin" });
      await keep(kind, url, res.clone(), asked);
      if (kind === "member" && url.pathname === "/app/api/me/workouts" && res.ok) await keepPlans(res, asked);
    } catch {
      // Offline already: nothing to keep.
    }
  }
}

self.addEventListener("message", (event) => {
  const m = event.data || {};
  const reply = () => event.ports[0] && event.ports[0].postMessage({ type: m.type, done: true });
  if (m.type === "forget") {
    event.waitUntil(forget().then(reply, reply));
  } else if (m.type === "seen" && Array.isArray(m.urls)) {
    event.waitUntil(seen(m.urls.map(String)).then(reply, reply));
  }
});
