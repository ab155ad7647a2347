// Go on the phone (docs/appservice.md): the member's page registers Go's service worker
// (/go/sw.js), which keeps the last plans seen readable without a connection, says so when
// the page shows them offline, and makes the worker forget everything at sign-out and when
// the session ends, before another member can use the browser.

import { showNotice } from "./chrome.js";
import { t } from "./i18n.js";

const hasWorkers = () => "serviceWorker" in navigator && window.isSecureContext;

// installOffline registers the worker for a signed-in member's page. On the page's first
// visit the worker starts after the page loaded its shell, catalogue and plans: it is told
// what they were, to keep them as well.
export async function installOffline() {
  watchConnection();
  if (!hasWorkers()) return;
  const signout = document.getElementById("signout-form");
  signout?.addEventListener("submit", (e) => {
    // Forget first, then sign out: the form is posted once the worker's caches are gone.
    e.preventDefault();
    forgetOffline().finally(() => signout.submit());
  });
  try {
    await navigator.serviceWorker.register("/go/sw.js", { scope: "/go" });
  } catch {
    return; // Go works as before, only not offline.
  }
  if (loadedThroughWorker()) return; // the worker kept the page's answers as they came
  const { active } = await navigator.serviceWorker.ready;
  const urls = [location.href, ...performance.getEntriesByType("resource").map((e) => e.name)];
  await ask(active, { type: "seen", urls });
}

// loadedThroughWorker says whether a service worker answered this page's own load. A
// worker that takes the page over later (its clients.claim() while the page boots: the
// first Go page after the link, over HTTPS most often) controls the page, but never saw
// the shell the page came with, which would then not be kept offline.
function loadedThroughWorker() {
  const nav = performance.getEntriesByType("navigation")[0];
  return nav ? nav.workerStart > 0 : Boolean(navigator.serviceWorker.controller);
}

// forgetOffline drops what Go's worker keeps (every go-* cache), through the worker when it
// runs, so that answers still on their way are not kept either, and directly as well.
export async function forgetOffline() {
  if (!("caches" in window)) return;
  const worker = hasWorkers() ? navigator.serviceWorker.controller : null;
  if (worker) await ask(worker, { type: "forget" });
  for (const name of await caches.keys()) {
    if (name.startsWith("go-")) await caches.delete(name);
  }
}

// ask posts message to worker and waits for its answer, or 5 seconds at most: a worker
// that does not answer must not keep a member from signing out.
function ask(worker, message) {
  return new Promise((resolve) => {
    const channel = new MessageChannel();
    channel.port1.onmessage = () => resolve();
    setTimeout(resolve, 5000);
    worker.postMessage(message, [channel.port2]);
  });
}

// watchConnection shows the offline notice while the browser has no connection: what the
// page shows is what Go kept.
function watchConnection() {
  const offline = () => showNotice(t("go.offline"));
  if (!navigator.onLine) offline();
  window.addEventListener("offline", offline);
  window.addEventListener("online", () => {
    const text = document.getElementById("notice-text");
    if (text && text.textContent === t("go.offline")) document.getElementById("notice").hidden = true;
  });
}
